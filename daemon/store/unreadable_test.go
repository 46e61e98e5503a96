package store

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
	bolt "go.etcd.io/bbolt"
)

// TestListingsSkipUnreadableRecords: a record that no longer decodes (a
// damaged page's value) is left out of listings and reported, instead of
// failing every listing of its bucket: GET /v1/conversations answered 500
// "unexpected end of JSON input" for ever.
func TestListingsSkipUnreadableRecords(t *testing.T) {
	db := openTemp(t)
	var logs bytes.Buffer
	db.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	var ids []string
	for _, title := range []string{"one", "two", "three"} {
		c, err := db.CreateConversation(ctx, ipc.Conversation{Title: title, Messages: []ipc.ConversationMessage{
			{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	// Damage the second's metadata and the third's first message.
	err := db.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket([]byte(Conversations))
		if err := root.Bucket([]byte(ids[1])).Put(metaKey, []byte(`{"id":"x","tit`)); err != nil {
			return err
		}
		mb := root.Bucket([]byte(ids[2])).Bucket(messagesKey)
		k, _ := mb.Cursor().First()
		return mb.Put(k, []byte("\x00garbage"))
	})
	if err != nil {
		t.Fatal(err)
	}
	list, err := db.Conversations(ctx)
	if err != nil || len(list) != 2 || list[0].ID != ids[2] || list[1].ID != ids[0] {
		t.Fatalf("list %+v, %v: want the two readable ones", list, err)
	}
	c, err := db.Conversation(ctx, ids[2])
	if err != nil || len(c.Messages) != 1 || c.Messages[0].Content != "hello" {
		t.Fatalf("conversation with a damaged message: %+v, %v", c.Messages, err)
	}
	if n := strings.Count(logs.String(), "unreadable record left out"); n < 2 {
		t.Fatalf("%d reports in the log:\n%s", n, logs.String())
	}
}
