package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestRatingUnrecordedCompletion: a completion whose recording failed (the
// state store could not grow, as on a full disk: here a file-size limit)
// is refused a rating with that failure, where it got only "not on
// record", as for an id never made.
func TestRatingUnrecordedCompletion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	limited := old
	limited.Cur = uint64(st.Size())
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limited); err != nil {
		t.Skipf("cannot limit file sizes: %v", err)
	}
	id := "chatcmpl-unrecorded"
	rec := ipc.RequestRecord{ID: id, Time: time.Now(), Endpoint: "chat.completions", Status: "ok"}
	ex := Exchange{ID: id, Endpoint: "chat.completions", Answer: strings.Repeat("a", 1<<20)}
	lerr := db.LogCompletion(context.Background(), rec, ex)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if lerr == nil {
		t.Fatal("LogCompletion past the file-size limit succeeded")
	}
	if !strings.Contains(lerr.Error(), id) {
		t.Errorf("LogCompletion error %q does not name the completion", lerr)
	}

	_, err = db.AddFeedback(context.Background(), ipc.FeedbackRequest{RequestID: id, Rating: 1})
	if !errors.Is(err, ErrNotRecorded) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("rating the unrecorded completion: %v, want ErrNotRecorded (and ErrNotFound)", err)
	}
	if cause := errors.Unwrap(lerr); cause == nil || !strings.Contains(err.Error(), cause.Error()) {
		t.Errorf("rating error %q does not give the cause %q", err, cause)
	}
	_, err = db.AddFeedback(context.Background(), ipc.FeedbackRequest{RequestID: "chatcmpl-never", Rating: 1})
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotRecorded) {
		t.Fatalf("rating an id never made: %v, want ErrNotFound alone", err)
	}
}
