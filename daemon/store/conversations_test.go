package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
	bolt "go.etcd.io/bbolt"
)

func openTemp(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func roles(msgs []ipc.ConversationMessage) string {
	var s []string
	for _, m := range msgs {
		s = append(s, m.Role+":"+m.Content)
	}
	return strings.Join(s, " ")
}

func TestConversationCRUD(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	temp := float32(0.2)
	c, err := db.CreateConversation(ctx, ipc.Conversation{Model: "m", System: "be brief",
		Adapters: []ipc.AdapterRef{{Name: "tone", Scale: 0.5}}, Sampling: &ipc.SamplingFields{Temperature: &temp},
		Messages: []ipc.ConversationMessage{{Role: "user", Content: "What is a page table?\nAnd more."}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ID, "conv-") || len(c.ID) != len("conv-")+24 || c.CreatedAt.IsZero() || !c.UpdatedAt.Equal(c.CreatedAt) {
		t.Fatalf("created %+v", c)
	}
	if c.Title != "What is a page table?" || c.MessageCount != 1 || len(c.Messages) != 1 || !strings.HasPrefix(c.Messages[0].ID, "msg-") || c.Messages[0].Time.IsZero() {
		t.Fatalf("created %+v", c)
	}

	got, err := db.Conversation(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.System != "be brief" || got.Model != "m" || len(got.Adapters) != 1 || got.Sampling == nil || *got.Sampling.Temperature != 0.2 ||
		got.MessageCount != 1 || len(got.Messages) != 1 || got.Messages[0].ID != c.Messages[0].ID {
		t.Fatalf("read back %+v", got)
	}

	title := "Paging"
	upd, err := db.UpdateConversation(ctx, c.ID, ipc.ConversationUpdate{Title: &title})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Title != "Paging" || upd.System != "be brief" || len(upd.Messages) != 1 || !upd.UpdatedAt.After(c.UpdatedAt) && !upd.UpdatedAt.Equal(c.UpdatedAt) {
		t.Fatalf("updated %+v", upd)
	}

	if err := db.DeleteConversation(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"get": func() error { _, err := db.Conversation(ctx, c.ID); return err }(),
		"update": func() error {
			_, err := db.UpdateConversation(ctx, c.ID, ipc.ConversationUpdate{Title: &title})
			return err
		}(),
		"append": func() error {
			_, err := db.AppendMessages(ctx, c.ID, []ipc.ConversationMessage{{Role: "user"}})
			return err
		}(),
		"delete": db.DeleteConversation(ctx, c.ID),
		"empty":  func() error { _, err := db.Conversation(ctx, ""); return err }(),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after delete: %v, want ErrNotFound", name, err)
		}
	}
	list, err := db.Conversations(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("list after delete: %+v, %v", list, err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestConversationsListOrderAndAppend(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	var ids []string
	for i := 0; i < 3; i++ {
		c, err := db.CreateConversation(ctx, ipc.Conversation{Title: fmt.Sprint("c", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
		time.Sleep(time.Millisecond) // distinct update times
	}
	// Appending to the oldest makes it the most recent.
	for i := 0; i < 5; i++ {
		c, err := db.AppendMessages(ctx, ids[0], []ipc.ConversationMessage{
			{Role: "user", Content: fmt.Sprint("q", i)},
			{Role: "assistant", Content: fmt.Sprint("a", i), RequestID: fmt.Sprint("chatcmpl-", i), Stats: &ipc.ReplyStats{CompletionTokens: i}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if c.MessageCount != 2*(i+1) || len(c.Messages) != 2*(i+1) {
			t.Fatalf("after append %d: count %d, %d messages", i, c.MessageCount, len(c.Messages))
		}
	}
	list, err := db.Conversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range list {
		order = append(order, c.Title)
		if c.Messages != nil {
			t.Fatalf("list carries messages: %+v", c)
		}
	}
	if strings.Join(order, ",") != "c0,c2,c1" || list[0].MessageCount != 10 || list[1].MessageCount != 0 {
		t.Fatalf("list order %v, counts %d %d", order, list[0].MessageCount, list[1].MessageCount)
	}
	c, err := db.Conversation(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(c.Messages); got != "user:q0 assistant:a0 user:q1 assistant:a1 user:q2 assistant:a2 user:q3 assistant:a3 user:q4 assistant:a4" {
		t.Fatalf("thread %s", got)
	}
	if c.Messages[9].RequestID != "chatcmpl-4" || c.Messages[9].Stats == nil || c.Messages[9].Stats.CompletionTokens != 4 {
		t.Fatalf("last message %+v", c.Messages[9])
	}
	if c.Title != "c0" {
		t.Fatalf("a set title was replaced: %q", c.Title)
	}
	seen := map[string]bool{}
	for _, m := range c.Messages {
		if seen[m.ID] {
			t.Fatalf("duplicate message id %s", m.ID)
		}
		seen[m.ID] = true
	}
}

func TestConversationReplaceKeepsKnownIDs(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	c, err := db.CreateConversation(ctx, ipc.Conversation{Messages: []ipc.ConversationMessage{
		{Role: "system", Content: "s"}, {Role: "user", Content: "q1"}, {Role: "assistant", Content: "a1"},
		{Role: "user", Content: "q2"}, {Role: "assistant", Content: "a2"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Title != "q1" {
		t.Fatalf("auto title %q", c.Title)
	}
	// Regenerate the last answer: keep the first four, new last one; a
	// forged id and a repeated id get fresh ones.
	msgs := append([]ipc.ConversationMessage{}, c.Messages[:4]...)
	msgs[3].Content = "q2 edited"
	msgs = append(msgs, ipc.ConversationMessage{ID: "msg-forged", Role: "assistant", Content: "a2'"},
		ipc.ConversationMessage{ID: c.Messages[1].ID, Role: "user", Content: "dup"})
	before := time.Now()
	upd, err := db.UpdateConversation(ctx, c.ID, ipc.ConversationUpdate{Messages: &msgs})
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(upd.Messages); got != "system:s user:q1 assistant:a1 user:q2 edited assistant:a2' user:dup" || upd.MessageCount != 6 {
		t.Fatalf("replaced thread %s (count %d)", got, upd.MessageCount)
	}
	for i := 0; i < 4; i++ {
		if upd.Messages[i].ID != c.Messages[i].ID || !upd.Messages[i].Time.Equal(c.Messages[i].Time) {
			t.Fatalf("message %d: id %s time %v, want %s %v", i, upd.Messages[i].ID, upd.Messages[i].Time, c.Messages[i].ID, c.Messages[i].Time)
		}
	}
	if upd.Messages[4].ID == "msg-forged" || upd.Messages[5].ID == c.Messages[1].ID || upd.Messages[4].Time.Before(before.Add(-time.Second)) {
		t.Fatalf("new messages %+v", upd.Messages[4:])
	}
	// Appends after a replace continue the thread in order.
	upd, err = db.AppendMessages(ctx, c.ID, []ipc.ConversationMessage{{Role: "assistant", Content: "end"}})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Messages[6].Content != "end" || upd.MessageCount != 7 {
		t.Fatalf("append after replace: %s", roles(upd.Messages))
	}
	// Replacing with nothing empties the thread.
	empty := []ipc.ConversationMessage{}
	if upd, err = db.UpdateConversation(ctx, c.ID, ipc.ConversationUpdate{Messages: &empty}); err != nil || upd.MessageCount != 0 || len(upd.Messages) != 0 {
		t.Fatalf("emptied: %+v %v", upd, err)
	}
}

func exchange(id string) Exchange {
	return Exchange{ID: id, Endpoint: "chat.completions", Model: "m", Adapters: []ipc.AdapterRef{{Name: "tone", Scale: 1}},
		Prompt: []ipc.Message{{Role: "user", Content: "q " + id}}, Answer: "a " + id}
}

func TestFeedbackLinksToExchange(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	for _, id := range []string{"chatcmpl-1", "chatcmpl-2"} {
		if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: id, Model: "m", Status: "ok"}, exchange(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: "a"}, exchange("b")); err == nil {
		t.Fatal("mismatched ids accepted")
	}
	recs, _ := db.RecentRequests(ctx, 10)
	if len(recs) != 2 || recs[0].ID != "chatcmpl-2" {
		t.Fatalf("request log %+v", recs)
	}
	c, err := db.CreateConversation(ctx, ipc.Conversation{Messages: []ipc.ConversationMessage{{Role: "assistant", Content: "a", RequestID: "chatcmpl-1"}}})
	if err != nil {
		t.Fatal(err)
	}

	_, err = db.AddFeedback(ctx, ipc.FeedbackRequest{RequestID: "chatcmpl-404", Rating: 1})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `unknown request_id "chatcmpl-404"`) {
		t.Fatalf("unknown request: %v", err)
	}
	for _, req := range []ipc.FeedbackRequest{
		{RequestID: "chatcmpl-1", Rating: 1, ConversationID: "conv-nope"},
		{RequestID: "chatcmpl-1", Rating: 1, ConversationID: c.ID, MessageID: "msg-nope"},
	} {
		if _, err := db.AddFeedback(ctx, req); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%+v: %v", req, err)
		}
	}

	fb1, err := db.AddFeedback(ctx, ipc.FeedbackRequest{RequestID: "chatcmpl-1", Rating: -1, Correction: "better", ConversationID: c.ID, MessageID: c.Messages[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fb1.ID, "fb-") || fb1.Model != "m" || len(fb1.Adapters) != 1 || fb1.Answer != "a chatcmpl-1" ||
		len(fb1.Prompt) != 1 || fb1.Prompt[0].Content != "q chatcmpl-1" || fb1.Correction != "better" {
		t.Fatalf("feedback %+v", fb1)
	}
	if _, err := db.AddFeedback(ctx, ipc.FeedbackRequest{RequestID: "chatcmpl-2", Rating: 1}); err != nil {
		t.Fatal(err)
	}
	// Rating chatcmpl-1 again replaces its first rating and becomes newest.
	if _, err := db.AddFeedback(ctx, ipc.FeedbackRequest{RequestID: "chatcmpl-1", Rating: 1}); err != nil {
		t.Fatal(err)
	}
	list, _, err := db.RecentFeedback(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].RequestID != "chatcmpl-1" || list[0].Rating != 1 || list[1].RequestID != "chatcmpl-2" {
		t.Fatalf("feedback list %+v", list)
	}
	if list, _, _ := db.RecentFeedback(ctx, 1); len(list) != 1 {
		t.Fatalf("limit 1 gave %d", len(list))
	}
	// The rating outlives its conversation.
	if err := db.DeleteConversation(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if list, _, _ := db.RecentFeedback(ctx, 10); len(list) != 2 || list[0].Answer != "a chatcmpl-1" {
		t.Fatalf("after conversation delete: %+v", list)
	}
}

func TestExchangesAreCapped(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	db.maxExchanges = 3
	for i := 0; i < 7; i++ {
		id := fmt.Sprint("cmpl-", i)
		if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: id}, exchange(id)); err != nil {
			t.Fatal(err)
		}
	}
	// A reused id (Ollama's template fallback) must not be dropped when
	// its older position is trimmed.
	if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: "cmpl-4"}, exchange("cmpl-4")); err != nil {
		t.Fatal(err)
	}
	if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: "cmpl-7"}, exchange("cmpl-7")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		_, err := db.Exchange(ctx, fmt.Sprint("cmpl-", i))
		want := i == 4 || i >= 6
		if (err == nil) != want {
			t.Errorf("exchange %d: err %v, want kept=%v", i, err, want)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("exchange %d: %v", i, err)
		}
	}
}

func TestExchangesByteBudget(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	db.maxExchangeBytes = 64 << 10
	big := func(id string, n int) Exchange {
		ex := exchange(id)
		ex.Answer = strings.Repeat("x", n)
		return ex
	}
	// 40 exchanges of ~4 KiB: only the newest that fit in 64 KiB stay.
	for i := 0; i < 40; i++ {
		id := fmt.Sprint("cmpl-", i)
		if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: id}, big(id, 4000)); err != nil {
			t.Fatal(err)
		}
		if n := db.ExchangeBytes(); n > db.maxExchangeBytes {
			t.Fatalf("after %d exchanges: %d bytes stored, budget %d", i+1, n, db.maxExchangeBytes)
		}
	}
	kept := 0
	for i := 0; i < 40; i++ {
		_, err := db.Exchange(ctx, fmt.Sprint("cmpl-", i))
		if err == nil {
			kept++
		} else if kept > 0 {
			t.Fatalf("exchange %d dropped after a newer one was kept: oldest first", i)
		}
	}
	if kept < 10 || kept > 16 {
		t.Fatalf("%d exchanges of 4 KB kept in a 64 KiB budget", kept)
	}
	if _, err := db.Exchange(ctx, "cmpl-39"); err != nil {
		t.Fatal("the newest exchange was dropped")
	}
	// One larger than an eighth of the budget is not kept; its request
	// record is.
	if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: "huge"}, big("huge", 9<<10)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exchange(ctx, "huge"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("oversized exchange: %v, want ErrNotFound", err)
	}
	recs, _ := db.RecentRequests(ctx, 1)
	if len(recs) != 1 || recs[0].ID != "huge" {
		t.Fatalf("the oversized exchange's request record: %+v", recs)
	}
	// The total survives reopening, and is rebuilt when it is missing.
	want := db.ExchangeBytes()
	path := db.db.Path()
	db.db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(exchangesMeta)).Delete(bytesKey) })
	db.Close()
	db2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if got := db2.ExchangeBytes(); got != want {
		t.Fatalf("rebuilt total %d, want %d", got, want)
	}
}

// TestExchangeRingMigration opens a state.db written before the ring kept
// ids' positions and its count: they are rebuilt and the caps still hold.
func TestExchangeRingMigration(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	db.maxExchanges = 4
	for i := 0; i < 4; i++ {
		id := fmt.Sprint("cmpl-", i)
		db.LogCompletion(ctx, ipc.RequestRecord{ID: id}, exchange(id))
	}
	path := db.db.Path()
	db.db.Update(func(tx *bolt.Tx) error {
		tx.DeleteBucket([]byte(Exchanges + ".ids"))
		return tx.Bucket([]byte(exchangesMeta)).Delete(countKey)
	})
	db.Close()
	db2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	db2.maxExchanges = 4
	for i := 4; i < 6; i++ {
		id := fmt.Sprint("cmpl-", i)
		if err := db2.LogCompletion(ctx, ipc.RequestRecord{ID: id}, exchange(id)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 6; i++ {
		_, err := db2.Exchange(ctx, fmt.Sprint("cmpl-", i))
		if want := i >= 2; (err == nil) != want {
			t.Errorf("exchange %d after migration: err %v, want kept=%v", i, err, want)
		}
	}
}

// TestRecentFeedbackBytesBounded: ratings carry their exchange (up to an
// eighth of the exchange budget each), so a list of a thousand was an
// answer of gigabytes; the list stops at the byte bound, says so, and
// always holds one rating.
func TestRecentFeedbackBytesBounded(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	big := strings.Repeat("x", 10<<10)
	for i := range 5 {
		id := fmt.Sprint("chatcmpl-", i)
		ex := exchange(id)
		ex.Prompt[0].Content = big
		if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: id, Model: "m", Status: "ok"}, ex); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AddFeedback(ctx, ipc.FeedbackRequest{RequestID: id, Rating: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		bound, limit, want int
		more               bool
	}{
		{bound: 1 << 30, limit: 10, want: 5},
		{bound: 25 << 10, limit: 10, want: 2, more: true}, // two records of ~10 KiB fit, the third does not
		{bound: 1, limit: 10, want: 1, more: true},        // one is always returned
		{bound: 25 << 10, limit: 1, want: 1},              // the limit, not the bound, ended it
	} {
		db.maxFeedbackListBytes = tc.bound
		list, more, err := db.RecentFeedback(ctx, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != tc.want || more != tc.more {
			t.Errorf("bound %d, limit %d: %d ratings, more %v; want %d, %v", tc.bound, tc.limit, len(list), more, tc.want, tc.more)
		}
	}
}
