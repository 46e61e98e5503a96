package daemon

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestShutdownEndsEventStreams checks that an open /v1/events stream, which
// the desktop app always holds, ends when a shutdown begins instead of
// holding the shutdown for its whole grace period.
func TestShutdownEndsEventStreams(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "s.sock")
	s, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Hour) }()
	var c *ipc.Client
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err = ipc.Dial(ctx, ipc.WithSocket(sock)); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	live := make(chan struct{})
	var once sync.Once
	ended := make(chan error, 1)
	go func() {
		ended <- c.Events(context.Background(), func(e ipc.Event) error {
			if e.Type == "test.ping" {
				once.Do(func() { close(live) })
			}
			return nil
		})
	}()
	// The stream is live once a ping published now comes back.
	for subscribed := false; !subscribed; {
		s.Events().Publish("test.ping", nil)
		select {
		case <-live:
			subscribed = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the shutdown waits for the open event stream (its grace period is an hour)")
	}
	if err := <-ended; err != nil {
		t.Fatalf("the event stream ended with %v, want its end", err)
	}
}
