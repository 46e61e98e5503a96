package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

func TestPutGetListDelete(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type rec struct{ A int }
	if err := db.Put("things", "x", rec{1}); err != nil {
		t.Fatal(err)
	}
	var got rec
	if err := db.Get("things", "x", &got); err != nil || got.A != 1 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if err := db.Get("things", "missing", &got); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	n := 0
	db.List("things", func(string, []byte) error { n++; return nil })
	if n != 1 {
		t.Fatalf("List saw %d keys", n)
	}
	db.Delete("things", "x")
	if err := db.Get("things", "x", &got); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if runtimeAllowsSecondLock(path) {
		t.Fatal("a second open of a locked state.db succeeded")
	}
}

// runtimeAllowsSecondLock opens path from a child process (flock is per
// open file description, so a second process is the honest test).
func runtimeAllowsSecondLock(path string) bool {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpen$")
	cmd.Env = append(os.Environ(), "STORE_HELPER_OPEN="+path)
	return cmd.Run() == nil
}

func TestHelperOpen(t *testing.T) {
	path := os.Getenv("STORE_HELPER_OPEN")
	if path == "" {
		t.Skip("helper process only")
	}
	db, err := Open(path)
	if err != nil {
		os.Exit(3)
	}
	db.Close()
}

func TestRequestLogCapAndOrder(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.maxRecords = 5
	for i := 0; i < 12; i++ {
		if err := db.LogRequest(context.Background(), ipc.RequestRecord{ID: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := db.RecentRequests(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || recs[0].ID != "11" || recs[4].ID != "7" {
		t.Fatalf("log = %v, want ids 11..7", recs)
	}
}

// killWriter runs the writer helper test helper (a process that prints
// each id after its transaction commits) on a new state.db, kills it with
// SIGKILL at a random moment, and returns the file and the printed ids.
func killWriter(t *testing.T, r *rand.Rand, helper, env string) (string, map[string]bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), env+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	sc := bufio.NewScanner(out)
	deadline := time.After(time.Duration(50+r.IntN(300)) * time.Millisecond)
read:
	for sc.Scan() {
		committed[sc.Text()] = true
		select {
		case <-deadline:
			break read
		default:
		}
	}
	cmd.Process.Kill()
	for sc.Scan() { // ids printed before the kill landed
		committed[sc.Text()] = true
	}
	cmd.Wait()
	if len(committed) == 0 {
		t.Fatal("writer committed nothing before the kill")
	}
	return path, committed
}

// reopenChecked opens a killed writer's file and runs bbolt's check.
func reopenChecked(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	if err := db.Check(); err != nil {
		db.Close()
		t.Fatalf("consistency check: %v", err)
	}
	return db
}

// TestKillNineLosesNothingCommitted kills a request-log writer and checks
// the file is consistent and holds every record it reported committed.
func TestKillNineLosesNothingCommitted(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for round := 0; round < 3; round++ {
		path, committed := killWriter(t, r, "TestHelperWriter", "STORE_HELPER_WRITER")
		db := reopenChecked(t, path)
		recs, err := db.RecentRequests(context.Background(), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, r := range recs {
			have[r.ID] = true
		}
		for id := range committed {
			if !have[id] {
				t.Fatalf("round %d: committed record %s lost", round, id)
			}
		}
		db.Close()
		t.Logf("round %d: %d committed records survived SIGKILL", round, len(committed))
	}
}

// TestKillNineConversationsAndFeedback kills a writer that, per turn, logs
// a completion, appends the turn to a conversation and rates it, and
// checks every committed turn is intact and in order.
func TestKillNineConversationsAndFeedback(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for round := 0; round < 2; round++ {
		path, committed := killWriter(t, r, "TestHelperConversationWriter", "STORE_HELPER_CONV")
		db := reopenChecked(t, path)
		list, err := db.Conversations(ctx)
		if err != nil || len(list) != 1 {
			t.Fatalf("round %d: conversations %+v, %v", round, list, err)
		}
		c, err := db.Conversation(ctx, list[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.MessageCount != len(c.Messages) || len(c.Messages)%2 != 0 {
			t.Fatalf("round %d: count %d vs %d messages", round, c.MessageCount, len(c.Messages))
		}
		// The thread is the turns in order with no gaps, and holds at
		// least every committed one.
		for i := 0; i < len(c.Messages)/2; i++ {
			id := fmt.Sprintf("chatcmpl-%d", i)
			if q, a := c.Messages[2*i], c.Messages[2*i+1]; q.Content != "q"+id || a.RequestID != id || a.Content != "a"+id {
				t.Fatalf("round %d: turn %d is %+v %+v", round, i, q, a)
			}
		}
		fbs, _, err := db.RecentFeedback(ctx, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		rated := map[string]bool{}
		for _, fb := range fbs {
			rated[fb.RequestID] = fb.Answer == "a"+fb.RequestID
		}
		for id := range committed {
			if _, err := db.Exchange(ctx, id); err != nil {
				t.Fatalf("round %d: exchange %s lost: %v", round, id, err)
			}
			if !rated[id] {
				t.Fatalf("round %d: feedback for %s lost", round, id)
			}
		}
		if len(c.Messages)/2 < len(committed) {
			t.Fatalf("round %d: %d turns stored, %d committed", round, len(c.Messages)/2, len(committed))
		}
		db.Close()
		t.Logf("round %d: %d committed turns survived SIGKILL", round, len(committed))
	}
}

func TestHelperConversationWriter(t *testing.T) {
	path := os.Getenv("STORE_HELPER_CONV")
	if path == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	db, err := Open(path)
	if err != nil {
		os.Exit(3)
	}
	c, err := db.CreateConversation(ctx, ipc.Conversation{Title: "killed"})
	if err != nil {
		os.Exit(4)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		id := fmt.Sprintf("chatcmpl-%d", i)
		ex := Exchange{ID: id, Model: "m", Prompt: []ipc.Message{{Role: "user", Content: "q" + id}}, Answer: "a" + id}
		if err := db.LogCompletion(ctx, ipc.RequestRecord{ID: id, Model: "m"}, ex); err != nil {
			os.Exit(4)
		}
		if _, err := db.AppendMessages(ctx, c.ID, []ipc.ConversationMessage{{Role: "user", Content: "q" + id}, {Role: "assistant", Content: "a" + id, RequestID: id}}); err != nil {
			os.Exit(4)
		}
		if _, err := db.AddFeedback(ctx, ipc.FeedbackRequest{RequestID: id, Rating: 1, ConversationID: c.ID}); err != nil {
			os.Exit(4)
		}
		fmt.Fprintln(w, id)
		w.Flush()
	}
}

func TestHelperWriter(t *testing.T) {
	path := os.Getenv("STORE_HELPER_WRITER")
	if path == "" {
		t.Skip("helper process only")
	}
	db, err := Open(path)
	if err != nil {
		os.Exit(3)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		id := fmt.Sprintf("req-%d", i)
		if err := db.LogRequest(context.Background(), ipc.RequestRecord{ID: id, Model: "m", PromptTokens: i}); err != nil {
			os.Exit(4)
		}
		if err := db.Put(Settings, "last", i); err != nil {
			os.Exit(4)
		}
		fmt.Fprintln(w, id)
		w.Flush()
	}
}
