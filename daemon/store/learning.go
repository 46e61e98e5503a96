package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruvllm/ruvllm/ipc"
)

// Learning state. Each learning scope of each model keeps its whole state
// (engine/sona's serialised scope: adapters, Fisher, optimizer moments,
// queued and stored feedback, trajectories, undo point) under
// "<model>\x00<scope>" in Learning, as a list of content-defined chunks
// (chunks.go), and the daemon's own bookkeeping of
// it (the history the app charts) under the same key in learningMeta.
// SaveLearning writes both and clears the feedback they now hold from the
// unlearned index in one transaction: after kill -9 a signal is either in
// the state or still unlearned, never neither. A state that no longer
// fits its model is moved to learningAside, not deleted.
const (
	Learning      = "learning"
	learningMeta  = "learning.meta"
	learningAside = "learning.aside"
)

// LearningKey is the store key of a model's scope.
func LearningKey(model, scope string) string { return model + "\x00" + scope }

// SplitLearningKey returns the model and scope of a key.
func SplitLearningKey(key string) (model, scope string, ok bool) {
	m, s, ok := bytes.Cut([]byte(key), []byte{0})
	return string(m), string(s), ok
}

// SaveLearning stores a scope's state and meta, and removes the feedback
// ids in learned from the unlearned index, in one transaction. The state
// is stored in content-defined chunks (chunks.go): what did not change
// since the last save is not written again.
func (d *DB) SaveLearning(ctx context.Context, key string, state, meta []byte, learned []string) error {
	_, err := d.saveLearning(ctx, key, state, meta, learned)
	return err
}

// saveLearning is SaveLearning, which also returns how many bytes of
// chunks it wrote.
func (d *DB) saveLearning(ctx context.Context, key string, state, meta []byte, learned []string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cut := cutState(state)
	written := 0
	err := d.db.Update(func(tx *bolt.Tx) error {
		var err error
		if written, err = putChunked(tx, []byte(key), cut); err != nil {
			return err
		}
		if meta != nil {
			if err := tx.Bucket([]byte(learningMeta)).Put([]byte(key), meta); err != nil {
				return err
			}
		}
		un := tx.Bucket([]byte(feedbackUnlearned))
		for _, id := range learned {
			if err := un.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("save learning state: %w", err)
	}
	if l := d.log.Load(); l != nil {
		l.Debug("learning state stored", "key", fmt.Sprintf("%q", key), "bytes", len(state), "chunks", len(cut.hashes), "written", written)
	}
	return written, nil
}

// LearningState is one stored scope.
type LearningState struct {
	Key         string
	State, Meta []byte
}

// LearningStates returns the stored scopes of model.
func (d *DB) LearningStates(ctx context.Context, model string) ([]LearningState, error) {
	var out []LearningState
	prefix := []byte(model + "\x00")
	err := d.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket([]byte(learningMeta))
		c := tx.Bucket([]byte(Learning)).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			state, err := readState(tx, v)
			if err != nil {
				// A chunk gone (a store damaged outside bbolt's
				// transactions): the scope starts again from nothing;
				// what it learned is lost (its ratings stay stored, but
				// marked learned) and its next save replaces the record.
				d.skipped("learning state", k, err)
				continue
			}
			st := LearningState{Key: string(k), State: state}
			if m := meta.Get(k); m != nil {
				st.Meta = bytes.Clone(m)
			}
			out = append(out, st)
		}
		return nil
	})
	return out, err
}

// SetLearningAside moves a stored scope that no longer fits its model
// (another file under the same name, a damaged state) to the aside
// bucket, under its key, the time and why, and removes it from Learning.
func (d *DB) SetLearningAside(ctx context.Context, key, why string) error {
	return d.db.Update(func(tx *bolt.Tx) error {
		lb := tx.Bucket([]byte(Learning))
		v := lb.Get([]byte(key))
		if v == nil {
			return nil
		}
		state, err := readState(tx, v)
		if err != nil {
			state = bytes.Clone(v) // the record as it is: what can be kept
		}
		rec, err := json.Marshal(struct {
			Key   string    `json:"key"`
			Why   string    `json:"why"`
			At    time.Time `json:"at"`
			State []byte    `json:"state"`
		}{key, why, time.Now().UTC(), state})
		if err != nil {
			return err
		}
		ab := tx.Bucket([]byte(learningAside))
		ak := key + "\x00" + fmt.Sprintf("%019d", time.Now().UnixNano()) // as strconv wrote it before: 19 digits until 2286
		if err := ab.Put([]byte(ak), rec); err != nil {
			return err
		}
		// The newest few of a scope are kept: each is the whole state
		// (tens of megabytes), and a model file replaced back and forth
		// set one aside every time, never pruned.
		if err := pruneAside(ab, key, MaxAsidePerScope); err != nil {
			return err
		}
		tx.Bucket([]byte(learningMeta)).Delete([]byte(key))
		if err := releaseChunks(tx, []byte(key)); err != nil {
			return err
		}
		return lb.Delete([]byte(key))
	})
}

// MaxAsidePerScope is how many set-aside states of one scope are kept,
// the newest.
const MaxAsidePerScope = 2

// pruneAside deletes all but the newest keep set-aside states of key
// (their keys end in the time, zero-padded, so they sort by it).
func pruneAside(ab *bolt.Bucket, key string, keep int) error {
	prefix := []byte(key + "\x00")
	var keys [][]byte
	c := ab.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys[:max(len(keys)-keep, 0)] {
		if err := ab.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// LearningAside counts the states set aside.
func (d *DB) LearningAside() int {
	n := 0
	d.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket([]byte(learningAside)).Stats().KeyN
		return nil
	})
	return n
}

// UnlearnedFeedback returns the stored feedback the learning loop has not
// learned yet, oldest first, up to limit.
func (d *DB) UnlearnedFeedback(ctx context.Context, limit int) ([]ipc.Feedback, error) {
	var out []ipc.Feedback
	err := d.db.View(func(tx *bolt.Tx) error {
		fbs := tx.Bucket([]byte(Feedback))
		var keys [][]byte
		tx.Bucket([]byte(feedbackUnlearned)).ForEach(func(_, v []byte) error {
			keys = append(keys, v)
			return nil
		})
		// Feedback keys are big-endian sequence numbers: sorted, they
		// are the order of arrival.
		slices.SortFunc(keys, bytes.Compare)
		for _, k := range keys {
			if len(out) >= limit {
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			v := fbs.Get(k)
			if v == nil {
				continue
			}
			var fb ipc.Feedback
			if err := json.Unmarshal(v, &fb); err != nil {
				return fmt.Errorf("feedback %x: %w", k, err)
			}
			out = append(out, fb)
		}
		return nil
	})
	return out, err
}

// ListPrefix calls fn with every key of bucket that starts with prefix
// and its value, in key order.
func (d *DB) ListPrefix(bucket, prefix string, fn func(key string, value []byte) error) error {
	return d.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return nil
		}
		c := bk.Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if err := fn(string(k), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeletePrefix removes every key of bucket that starts with prefix.
func (d *DB) DeletePrefix(bucket, prefix string) error {
	return d.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return nil
		}
		c := bk.Cursor()
		p := []byte(prefix)
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Seek(p) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}
