package store

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Responses are the OpenAI Responses API's stored responses (store: true),
// kept so that a later request can continue one (previous_response_id)
// and a client can fetch or delete it. They live in a ring like the
// exchanges: the newest DefaultMaxResponses within DefaultMaxResponseBytes.
const (
	Responses               = "responses"
	DefaultMaxResponses     = 1000
	DefaultMaxResponseBytes = 64 << 20
)

func (d *DB) responseRing() ring {
	return newRing(Responses, DefaultMaxResponses, DefaultMaxResponseBytes)
}

// PutResponse stores v (JSON) under id. A response too large for the
// budget is not kept, and ErrTooLarge says so.
func (d *DB) PutResponse(ctx context.Context, id string, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store response %s: %w", id, err)
	}
	r := d.responseRing()
	if !r.fits(len(b)) {
		return fmt.Errorf("store response %s: %w (%d bytes)", id, ErrTooLarge, len(b))
	}
	return d.db.Update(func(tx *bolt.Tx) error { return r.put(tx, id, b) })
}

// Response decodes the stored response id into v (ErrNotFound when it is
// not, or no longer, stored).
func (d *DB) Response(ctx context.Context, id string, v any) error {
	return d.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(Responses)).Get([]byte(id))
		if b == nil {
			return fmt.Errorf("response %q: %w", id, ErrNotFound)
		}
		return json.Unmarshal(b, v)
	})
}

// DeleteResponse removes the stored response id (ErrNotFound when none).
func (d *DB) DeleteResponse(ctx context.Context, id string) error {
	return d.db.Update(func(tx *bolt.Tx) error {
		ok, err := d.responseRing().remove(tx, id)
		if err == nil && !ok {
			err = fmt.Errorf("response %q: %w", id, ErrNotFound)
		}
		return err
	})
}
