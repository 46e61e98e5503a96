package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/ruvllm/ruvllm/ipc"
)

// Conversation storage. Each conversation is a nested bucket of
// Conversations named by its id, holding
//
//	"meta"     the conversation without its messages (JSON ipc.Conversation,
//	           message_count kept in step with the thread)
//	"messages" a bucket of messages keyed by the bucket's own sequence
//	           (8-byte big-endian), so an append is one Put at the end
//	           and key order is thread order
//
// convByUpdate indexes conversations by last update (8-byte big-endian
// unix nanoseconds, then the id) so listings read newest first without
// sorting. Every change rewrites meta and moves the index key in the same
// transaction.
const (
	Conversations = "conversations"
	convByUpdate  = "conversations.byupdate"
)

var (
	metaKey     = []byte("meta")
	messagesKey = []byte("messages")
)

// autoTitleRunes bounds a title taken from a conversation's first message.
const autoTitleRunes = 60

// NewID returns prefix followed by 24 random hex digits.
func NewID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b) // never fails (crypto/rand panics on a broken system source)
	return prefix + hex.EncodeToString(b)
}

// CreateConversation stores c as a new conversation with its messages,
// assigning the conversation and message ids and the times. A
// conversation without a title takes the start of its first user message.
func (d *DB) CreateConversation(ctx context.Context, c ipc.Conversation) (ipc.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return ipc.Conversation{}, err
	}
	now := time.Now().UTC()
	msgs := c.Messages
	c.ID, c.CreatedAt, c.UpdatedAt, c.MessageCount, c.Messages = NewID("conv-"), now, now, 0, nil
	err := d.db.Update(func(tx *bolt.Tx) error {
		cb, err := tx.Bucket([]byte(Conversations)).CreateBucket([]byte(c.ID))
		if err != nil {
			return err
		}
		mb, err := cb.CreateBucket(messagesKey)
		if err != nil {
			return err
		}
		if c.Messages, err = appendMessages(mb, &c, msgs, now, nil); err != nil {
			return err
		}
		return putMeta(tx, cb, &c, time.Time{})
	})
	if err != nil {
		return ipc.Conversation{}, fmt.Errorf("create conversation: %w", err)
	}
	return c, nil
}

// Conversations lists every conversation without its messages, most
// recently updated first.
func (d *DB) Conversations(ctx context.Context) ([]ipc.Conversation, error) {
	out := []ipc.Conversation{}
	err := d.db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket([]byte(Conversations))
		c := tx.Bucket([]byte(convByUpdate)).Cursor()
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			if err := ctx.Err(); err != nil {
				return err
			}
			id := k[8:]
			cb := root.Bucket(id)
			if cb == nil {
				d.skipped("conversation index entry", k, errors.New("names a missing conversation"))
				continue
			}
			var conv ipc.Conversation
			if err := json.Unmarshal(cb.Get(metaKey), &conv); err != nil {
				d.skipped("conversation", id, err)
				continue
			}
			out = append(out, conv)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

// Conversation returns one conversation with its messages, oldest first.
func (d *DB) Conversation(ctx context.Context, id string) (ipc.Conversation, error) {
	var conv ipc.Conversation
	err := d.db.View(func(tx *bolt.Tx) error {
		cb, c, err := getConversation(tx, id)
		if err != nil {
			return err
		}
		conv = c
		conv.Messages, err = d.readMessages(ctx, cb)
		return err
	})
	return conv, err
}

// UpdateConversation applies the fields present in u. A Messages field
// replaces the thread; a replacing message keeps its id when it names a
// message of the current thread (so feedback that points at it stays
// valid), and gets a new one otherwise.
func (d *DB) UpdateConversation(ctx context.Context, id string, u ipc.ConversationUpdate) (ipc.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return ipc.Conversation{}, err
	}
	var conv ipc.Conversation
	err := d.db.Update(func(tx *bolt.Tx) error {
		cb, c, err := getConversation(tx, id)
		if err != nil {
			return err
		}
		old, now := c.UpdatedAt, time.Now().UTC()
		if u.Title != nil {
			c.Title = *u.Title
		}
		if u.Model != nil {
			c.Model = *u.Model
		}
		if u.System != nil {
			c.System = *u.System
		}
		if u.Adapters != nil {
			c.Adapters = *u.Adapters
		}
		if u.Sampling != nil {
			c.Sampling = u.Sampling
		}
		if u.Messages != nil {
			cur, err := d.readMessages(ctx, cb)
			if err != nil {
				return err
			}
			keep := map[string]bool{}
			for _, m := range cur {
				keep[m.ID] = true
			}
			if err := cb.DeleteBucket(messagesKey); err != nil {
				return err
			}
			mb, err := cb.CreateBucket(messagesKey)
			if err != nil {
				return err
			}
			c.MessageCount = 0
			if _, err := appendMessages(mb, &c, *u.Messages, now, keep); err != nil {
				return err
			}
		}
		c.UpdatedAt = now
		if err := putMeta(tx, cb, &c, old); err != nil {
			return err
		}
		conv = c
		conv.Messages, err = d.readMessages(ctx, cb)
		return err
	})
	if err != nil {
		return ipc.Conversation{}, fmt.Errorf("update conversation %s: %w", id, err)
	}
	return conv, nil
}

// AppendMessages adds msgs at the end of the conversation's thread and
// returns the conversation with all its messages.
func (d *DB) AppendMessages(ctx context.Context, id string, msgs []ipc.ConversationMessage) (ipc.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return ipc.Conversation{}, err
	}
	var conv ipc.Conversation
	err := d.db.Update(func(tx *bolt.Tx) error {
		cb, c, err := getConversation(tx, id)
		if err != nil {
			return err
		}
		old, now := c.UpdatedAt, time.Now().UTC()
		if _, err := appendMessages(cb.Bucket(messagesKey), &c, msgs, now, nil); err != nil {
			return err
		}
		c.UpdatedAt = now
		if err := putMeta(tx, cb, &c, old); err != nil {
			return err
		}
		conv = c
		conv.Messages, err = d.readMessages(ctx, cb)
		return err
	})
	if err != nil {
		return ipc.Conversation{}, fmt.Errorf("append to conversation %s: %w", id, err)
	}
	return conv, nil
}

// DeleteConversation removes a conversation and its messages. Feedback
// that names it keeps its own copy of what was rated.
func (d *DB) DeleteConversation(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.db.Update(func(tx *bolt.Tx) error {
		_, c, err := getConversation(tx, id)
		if err != nil {
			return err
		}
		if err := tx.Bucket([]byte(convByUpdate)).Delete(updateKey(c.UpdatedAt, id)); err != nil {
			return err
		}
		return tx.Bucket([]byte(Conversations)).DeleteBucket([]byte(id))
	})
}

// getConversation returns the bucket and metadata of conversation id.
func getConversation(tx *bolt.Tx, id string) (*bolt.Bucket, ipc.Conversation, error) {
	var c ipc.Conversation
	cb := tx.Bucket([]byte(Conversations)).Bucket([]byte(id))
	if cb == nil || id == "" {
		return nil, c, fmt.Errorf("conversation %q: %w", id, ErrNotFound)
	}
	if err := json.Unmarshal(cb.Get(metaKey), &c); err != nil {
		return nil, c, fmt.Errorf("conversation %s: %w", id, err)
	}
	return cb, c, nil
}

// hasMessage reports whether conversation id holds message msgID.
func hasMessage(tx *bolt.Tx, id, msgID string) (bool, error) {
	cb, _, err := getConversation(tx, id)
	if err != nil {
		return false, err
	}
	found := false
	want := []byte(`"id":` + jsonString(msgID))
	err = cb.Bucket(messagesKey).ForEach(func(_, v []byte) error {
		// Cheap prefilter before decoding: ids are JSON strings.
		if !bytes.Contains(v, want) {
			return nil
		}
		var m ipc.ConversationMessage
		if err := json.Unmarshal(v, &m); err != nil {
			return err
		}
		found = found || m.ID == msgID
		return nil
	})
	return found, err
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// putMeta writes c's metadata and moves its index key from oldUpdated
// (zero for a new conversation) to c.UpdatedAt.
func putMeta(tx *bolt.Tx, cb *bolt.Bucket, c *ipc.Conversation, oldUpdated time.Time) error {
	meta := *c
	meta.Messages = nil
	b, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if err := cb.Put(metaKey, b); err != nil {
		return err
	}
	idx := tx.Bucket([]byte(convByUpdate))
	if !oldUpdated.IsZero() {
		if err := idx.Delete(updateKey(oldUpdated, c.ID)); err != nil {
			return err
		}
	}
	return idx.Put(updateKey(c.UpdatedAt, c.ID), nil)
}

func updateKey(t time.Time, id string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())), id...)
}

// appendMessages stores msgs at the end of mb, assigning ids (keeping
// those in keep, once each) and times (keeping ones already set), and
// counts them in c. It returns the stored messages.
func appendMessages(mb *bolt.Bucket, c *ipc.Conversation, msgs []ipc.ConversationMessage, now time.Time, keep map[string]bool) ([]ipc.ConversationMessage, error) {
	out := make([]ipc.ConversationMessage, 0, len(msgs))
	for _, m := range msgs {
		if keep[m.ID] {
			delete(keep, m.ID) // a repeated id gets a fresh one
		} else {
			m.ID = NewID("msg-")
		}
		if m.Time.IsZero() {
			m.Time = now
		}
		m.Time = m.Time.UTC()
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		seq, err := mb.NextSequence()
		if err != nil {
			return nil, err
		}
		if err := mb.Put(binary.BigEndian.AppendUint64(nil, seq), b); err != nil {
			return nil, err
		}
		if c.Title == "" && m.Role == "user" {
			c.Title = autoTitle(m.Content)
		}
		out = append(out, m)
	}
	c.MessageCount += len(msgs)
	return out, nil
}

// readMessages returns the thread of conversation bucket cb in order.
func (d *DB) readMessages(ctx context.Context, cb *bolt.Bucket) ([]ipc.ConversationMessage, error) {
	var out []ipc.ConversationMessage
	err := cb.Bucket(messagesKey).ForEach(func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var m ipc.ConversationMessage
		if err := json.Unmarshal(v, &m); err != nil {
			d.skipped("conversation message", k, err)
			return nil
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// autoTitle is the first line of text, cut to autoTitleRunes runes.
func autoTitle(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) <= autoTitleRunes {
		return line
	}
	r := []rune(line)
	return strings.TrimSpace(string(r[:autoTitleRunes-1])) + "…"
}
