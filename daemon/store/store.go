// Package store is ruvllmd's durable state: one bbolt file (state.db) with
// settings, the model registry, the request log, conversations, the recent
// exchanges (prompt and answer of each completion) and feedback. Every write is one transaction, so a daemon killed at any
// moment leaves every committed record intact.
package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruvllm/ruvllm/ipc"
)

// ErrNotFound is returned by Get for a missing key.
var ErrNotFound = errors.New("not found")

// ErrTooLarge is returned for a record larger than its budget allows.
var ErrTooLarge = errors.New("too large to store")

// Bucket names.
const (
	Settings = "settings"
	Models   = "models"
	Requests = "requests"
)

// DB is the state database. It is safe for concurrent use.
type DB struct {
	db           *bolt.DB
	maxRecords   int
	maxExchanges int
	// maxExchangeBytes bounds the stored exchanges' total size.
	maxExchangeBytes int64
	// maxFeedbackListBytes bounds RecentFeedback's records' bytes.
	maxFeedbackListBytes int
	// log hears of records a listing skipped as unreadable (SetLogger).
	log atomic.Pointer[slog.Logger]
	// unrecorded remembers the completions LogCompletion failed to write.
	unrecorded unrecordedLog
}

// SetLogger sets where unreadable records that listings skip are
// reported (by default nowhere).
func (d *DB) SetLogger(l *slog.Logger) { d.log.Store(l) }

// skipped reports a record a listing left out because it does not decode:
// one damaged record costs that record, not every listing of its bucket
// (they answered 500 for ever).
func (d *DB) skipped(what string, key []byte, err error) {
	if l := d.log.Load(); l != nil {
		l.Error("state store: unreadable record left out", "record", what, "key", fmt.Sprintf("%q", key), "err", err)
	}
}

// Open opens (creating if needed) the database at path. A second daemon
// on the same file gets an error instead of waiting; a file that cannot
// be read whole gets one wrapping ErrCorrupt.
func Open(path string) (*DB, error) {
	b, err := openBolt(path, &bolt.Options{Timeout: 2 * time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		// Its pid is the way to a daemon no client reaches (its socket
		// removed by a /tmp cleaner, or set elsewhere): `ruvllm stop`
		// said none runs, and a new one failed with these words alone.
		if pid := lockHolder(path); pid > 0 {
			return nil, fmt.Errorf("state store %s is locked by another ruvllmd (pid %d; `ruvllm stop` reaches it only through its socket, `kill %d` ends it)", path, pid, pid)
		}
		return nil, fmt.Errorf("state store %s is locked by another ruvllmd", path)
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return nil, fmt.Errorf("state store: %w", err) // "open PATH: why"
	}
	if err != nil {
		return nil, fmt.Errorf("state store %s: %w", path, err)
	}
	if err := verify(b); err != nil {
		b.Close()
		return nil, fmt.Errorf("state store %s: %w", path, err)
	}
	// Completions are logged in Batch transactions so that concurrent
	// streams share one commit; bbolt's default 10ms wait for company
	// held every lone request's reply that long (the log is written
	// before the stream's last chunk).
	b.MaxBatchDelay = time.Millisecond
	db := &DB{db: b, maxRecords: 10000, maxExchanges: DefaultMaxExchanges, maxExchangeBytes: DefaultMaxExchangeBytes,
		maxFeedbackListBytes: MaxFeedbackListBytes}
	err = b.Update(func(tx *bolt.Tx) error {
		names := []string{Settings, Models, Requests, Conversations, convByUpdate, Feedback, feedbackByRequest, feedbackUnlearned,
			Learning, learningMeta, learningAside, learningChunks, learningChunkRefs}
		names = append(names, db.exchangeRing().buckets()...)
		names = append(names, db.responseRing().buckets()...)
		for _, name := range names {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		if err := db.exchangeRing().rebuildIDs(tx); err != nil {
			return err
		}
		return initExchangeBytes(tx)
	})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("state store %s: %w", path, err)
	}
	return db, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

// Check verifies the file's integrity (bbolt's consistency check).
func (d *DB) Check() error {
	return d.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
}

// Put stores v as JSON under key in bucket, creating the bucket if needed.
func (d *DB) Put(bucket, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store %s/%s: %w", bucket, key, err)
	}
	return d.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		return bk.Put([]byte(key), b)
	})
}

// Get decodes the value under key into v.
func (d *DB) Get(bucket, key string, v any) error {
	return d.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return fmt.Errorf("%s/%s: %w", bucket, key, ErrNotFound)
		}
		b := bk.Get([]byte(key))
		if b == nil {
			return fmt.Errorf("%s/%s: %w", bucket, key, ErrNotFound)
		}
		return json.Unmarshal(b, v)
	})
}

// Delete removes key from bucket; a missing key is not an error.
func (d *DB) Delete(bucket, key string) error {
	return d.db.Update(func(tx *bolt.Tx) error {
		if bk := tx.Bucket([]byte(bucket)); bk != nil {
			return bk.Delete([]byte(key))
		}
		return nil
	})
}

// List calls fn with every key and raw JSON value of bucket, in key order.
func (d *DB) List(bucket string, fn func(key string, value []byte) error) error {
	return d.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error { return fn(string(k), v) })
	})
}

// LogRequest appends a record to the request log, trimming the oldest
// beyond the cap in the same transaction.
func (d *DB) LogRequest(ctx context.Context, r ipc.RequestRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// Batch coalesces concurrent writers into one commit (one fsync); it
	// returns only after the record is durable.
	return d.db.Batch(func(tx *bolt.Tx) error { return d.logRequestTx(tx, b) })
}

// logRequestTx appends the encoded record b to the request log in tx.
func (d *DB) logRequestTx(tx *bolt.Tx, b []byte) error {
	bk := tx.Bucket([]byte(Requests))
	seq, err := bk.NextSequence()
	if err != nil {
		return err
	}
	if err := bk.Put(binary.BigEndian.AppendUint64(nil, seq), b); err != nil {
		return err
	}
	// Keys are consecutive sequence numbers, so the count is the distance
	// from the oldest one.
	c := bk.Cursor()
	for {
		k, _ := c.First()
		if k == nil || seq-binary.BigEndian.Uint64(k)+1 <= uint64(d.maxRecords) {
			return nil
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
}

// RecentRequests returns up to limit records, newest first.
func (d *DB) RecentRequests(ctx context.Context, limit int) ([]ipc.RequestRecord, error) {
	var out []ipc.RequestRecord
	err := d.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(Requests)).Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var r ipc.RequestRecord
			if err := json.Unmarshal(v, &r); err != nil {
				d.skipped("request record", k, err)
				continue
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}
