package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruvllm/ruvllm/ipc"
)

// Exchanges and feedback. A rating names a completion by its id, and the
// learning loop needs what was rated, so every finished generation keeps
// its prompt and answer in Exchanges (keyed by the completion id, which is
// also the id of its request-log record), a ring (ring.go) whose oldest
// records beyond the count and byte budgets are dropped in the transaction
// that adds a new one.
//
// Feedback keys ratings by sequence (newest last) and copies the rated
// exchange into the record, so a rating outlives the exchange and the
// conversation. feedbackByRequest maps a completion id to its rating's
// key: rating a reply again replaces the earlier rating.
const (
	Exchanges         = "exchanges"
	exchangesMeta     = "exchanges.meta" // "bytes": the stored exchanges' total size
	Feedback          = "feedback"
	feedbackByRequest = "feedback.byrequest"
	// feedbackUnlearned indexes the feedback the learning loop has not
	// learned yet (feedback id → its key in Feedback): written in the
	// rating's own transaction, cleared in the transaction that stores
	// the learning state that holds it (learning.go), so kill -9 at any
	// moment loses no signal.
	feedbackUnlearned = "feedback.unlearned"
)

// ErrRated is returned for a regenerate signal about a reply that already
// has a rating: the explicit rating says more, and is kept.
var ErrRated = errors.New("the reply is already rated; a regenerate does not replace its rating")

// DefaultMaxExchanges is how many recent exchanges are kept for feedback,
// and DefaultMaxExchangeBytes how many bytes they may take together; the
// oldest are dropped first when either is exceeded. An exchange larger
// than an eighth of the byte budget is not kept at all (rating it answers
// that it is not on record).
const (
	DefaultMaxExchanges     = 2000
	DefaultMaxExchangeBytes = 64 << 20
)

// ErrNotRecorded is returned for a rating of a completion whose recording
// failed (a full disk, a failed state-store write); the error wraps it,
// that failure and ErrNotFound, where a rating of a completion never made
// or since dropped gets ErrNotFound alone.
var ErrNotRecorded = errors.New("the completion was not recorded, so it cannot be rated")

// maxUnrecorded is how many completions whose recording failed the store
// remembers (the most recent), for the ratings that name them.
const maxUnrecorded = 256

// unrecordedLog remembers the completions whose recording failed, and why,
// up to maxUnrecorded of them, oldest forgotten first. Completion ids are
// the daemon's own, so the memory is bounded by the count.
type unrecordedLog struct {
	mu    sync.Mutex
	cause map[string]error
	order []string
}

func (u *unrecordedLog) add(id string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cause == nil {
		u.cause = map[string]error{}
	}
	if _, ok := u.cause[id]; !ok {
		if len(u.order) == maxUnrecorded {
			delete(u.cause, u.order[0])
			u.order = u.order[1:]
		}
		u.order = append(u.order, id)
	}
	u.cause[id] = err
}

// why is the failure that kept completion id from being recorded (nil if
// none is remembered).
func (u *unrecordedLog) why(id string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cause[id]
}

var bytesKey = []byte("bytes")

// initExchangeBytes records the stored exchanges' total size once, for a
// state.db written before the byte budget existed.
func initExchangeBytes(tx *bolt.Tx) error {
	meta := tx.Bucket([]byte(exchangesMeta))
	if meta.Get(bytesKey) != nil {
		return nil
	}
	var total uint64
	if err := tx.Bucket([]byte(Exchanges)).ForEach(func(k, v []byte) error {
		total += uint64(len(v))
		return nil
	}); err != nil {
		return err
	}
	return meta.Put(bytesKey, binary.BigEndian.AppendUint64(nil, total))
}

// ExchangeBytes is the stored exchanges' total size.
func (d *DB) ExchangeBytes() int64 {
	var n int64
	d.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte(exchangesMeta)).Get(bytesKey); len(v) == 8 {
			n = int64(binary.BigEndian.Uint64(v))
		}
		return nil
	})
	return n
}

// Exchange is what one generation request was asked and answered.
type Exchange struct {
	// ID is the completion id ("chatcmpl-…", "cmpl-…", "req-…").
	ID       string           `json:"id"`
	Time     time.Time        `json:"time"`
	Endpoint string           `json:"endpoint"`
	Model    string           `json:"model"`
	Adapters []ipc.AdapterRef `json:"adapters,omitempty"`
	// Prompt holds the chat messages; PromptText the raw prompt of a
	// text completion.
	Prompt     []ipc.Message `json:"prompt,omitempty"`
	PromptText string        `json:"prompt_text,omitempty"`
	Answer     string        `json:"answer"`
	// App is the request's client name (X-Ruvllm-Client), its learning
	// scope when learning is per app.
	App string `json:"app,omitempty"`
}

// storedExchange is an exchange as stored. Seq, its position in the ring,
// was written by state.db files before the ring kept ids' positions in a
// bucket of their own; it is no longer read.
type storedExchange struct {
	Exchange
	Seq uint64 `json:"seq,omitempty"`
}

// LogCompletion records a finished generation: its request-log record and
// its exchange, in one transaction. rec.ID and ex.ID must be equal. When
// the write fails, a rating of the completion gets ErrNotRecorded with
// the failure, not ErrNotFound as for an id never made.
func (d *DB) LogCompletion(ctx context.Context, rec ipc.RequestRecord, ex Exchange) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rec.ID != ex.ID || ex.ID == "" {
		return fmt.Errorf("log completion: record id %q and exchange id %q differ", rec.ID, ex.ID)
	}
	defer func() {
		if err != nil {
			d.unrecorded.add(ex.ID, err)
			err = fmt.Errorf("record completion %s: %w", ex.ID, err)
		}
	}()
	rb, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	b, err := json.Marshal(storedExchange{Exchange: ex})
	if err != nil {
		return err
	}
	ring := d.exchangeRing()
	return d.db.Batch(func(tx *bolt.Tx) error {
		if err := d.logRequestTx(tx, rb); err != nil {
			return err
		}
		if !ring.fits(len(b)) { // too large to keep: the record says what it was
			return nil
		}
		return ring.put(tx, ex.ID, b)
	})
}

// exchangeRing is where exchanges are kept, within their budgets.
func (d *DB) exchangeRing() ring {
	return newRing(Exchanges, d.maxExchanges, d.maxExchangeBytes)
}

// Exchange returns the recorded exchange of completion id.
func (d *DB) Exchange(ctx context.Context, id string) (Exchange, error) {
	var ex Exchange
	err := d.db.View(func(tx *bolt.Tx) error {
		var err error
		ex, err = d.exchangeTx(tx, id)
		return err
	})
	return ex, err
}

func (d *DB) exchangeTx(tx *bolt.Tx, id string) (Exchange, error) {
	v := tx.Bucket([]byte(Exchanges)).Get([]byte(id))
	if v == nil && id != "" {
		if why := d.unrecorded.why(id); why != nil {
			// Not found still (404): the rating can never succeed, and
			// the client learns why.
			return Exchange{}, fmt.Errorf("request_id %q: %w: %w: %w", id, ErrNotRecorded, why, ErrNotFound)
		}
	}
	if v == nil || id == "" {
		return Exchange{}, fmt.Errorf("unknown request_id %q: no completion with this id is on record (the daemon keeps the last %d): %w",
			id, d.maxExchanges, ErrNotFound)
	}
	var s storedExchange
	if err := json.Unmarshal(v, &s); err != nil {
		return Exchange{}, fmt.Errorf("exchange %s: %w", id, err)
	}
	return s.Exchange, nil
}

// AddFeedback stores a rating of completion req.RequestID together with
// what it rates, replacing an earlier rating of the same completion. The
// completion must be on record (ErrNotFound otherwise), and so must the
// conversation and message the rating names, if any.
func (d *DB) AddFeedback(ctx context.Context, req ipc.FeedbackRequest) (ipc.Feedback, error) {
	if err := ctx.Err(); err != nil {
		return ipc.Feedback{}, err
	}
	fb := ipc.Feedback{FeedbackRequest: req, ID: NewID("fb-"), Time: time.Now().UTC()}
	err := d.db.Update(func(tx *bolt.Tx) error {
		ex, err := d.exchangeTx(tx, req.RequestID)
		if err != nil {
			return err
		}
		fb.Model, fb.Adapters, fb.Prompt, fb.PromptText, fb.Answer, fb.App = ex.Model, ex.Adapters, ex.Prompt, ex.PromptText, ex.Answer, ex.App
		if req.ConversationID != "" {
			if _, _, err := getConversation(tx, req.ConversationID); err != nil {
				return err
			}
		}
		if req.MessageID != "" {
			if req.ConversationID == "" {
				return fmt.Errorf("message_id %q needs its conversation_id", req.MessageID)
			}
			ok, err := hasMessage(tx, req.ConversationID, req.MessageID)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("message %q in conversation %q: %w", req.MessageID, req.ConversationID, ErrNotFound)
			}
		}
		fbs, byReq, unlearned := tx.Bucket([]byte(Feedback)), tx.Bucket([]byte(feedbackByRequest)), tx.Bucket([]byte(feedbackUnlearned))
		if old := byReq.Get([]byte(req.RequestID)); old != nil {
			var prev ipc.Feedback
			if v := fbs.Get(old); v != nil && json.Unmarshal(v, &prev) == nil {
				if req.Signal == ipc.SignalRegenerate && prev.Signal != ipc.SignalRegenerate {
					return ErrRated
				}
				if err := unlearned.Delete([]byte(prev.ID)); err != nil {
					return err
				}
			}
			if err := fbs.Delete(old); err != nil {
				return err
			}
		}
		seq, err := fbs.NextSequence()
		if err != nil {
			return err
		}
		b, err := json.Marshal(fb)
		if err != nil {
			return err
		}
		key := binary.BigEndian.AppendUint64(nil, seq)
		if err := fbs.Put(key, b); err != nil {
			return err
		}
		if err := unlearned.Put([]byte(fb.ID), key); err != nil {
			return err
		}
		return byReq.Put([]byte(req.RequestID), key)
	})
	if err != nil {
		return ipc.Feedback{}, fmt.Errorf("feedback: %w", err)
	}
	return fb, nil
}

// RecentFeedback returns up to limit ratings, newest first.
func (d *DB) RecentFeedback(ctx context.Context, limit int) (_ []ipc.Feedback, more bool, _ error) {
	out := []ipc.Feedback{}
	size := 0
	err := d.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(Feedback)).Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			if err := ctx.Err(); err != nil {
				return err
			}
			// Each record copies its exchange (up to an eighth of the
			// exchange budget): a thousand of them made one answer of
			// gigabytes.
			if size += len(v); size > d.maxFeedbackListBytes && len(out) > 0 {
				more = true
				break
			}
			var fb ipc.Feedback
			if err := json.Unmarshal(v, &fb); err != nil {
				d.skipped("feedback", k, err)
				continue
			}
			out = append(out, fb)
		}
		return nil
	})
	return out, more, err
}

// MaxFeedbackListBytes bounds the stored bytes of the records one
// RecentFeedback call returns (at least one is always returned); more
// reports that it stopped there.
const MaxFeedbackListBytes = 32 << 20
