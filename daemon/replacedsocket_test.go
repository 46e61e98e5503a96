package daemon

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// listeningHandler is a slog handler that closes ready when the server
// logs that it listens.
type listeningHandler struct {
	slog.Handler
	ready chan struct{}
}

func (listeningHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h listeningHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "ruvllmd listening" {
		close(h.ready)
	}
	return nil
}

// TestShutdownKeepsReplacingDaemonsSocket: a daemon whose socket file was
// removed while it ran (a /tmp cleaner, a user), and another daemon
// started on the path meanwhile, leaves that daemon's socket in place when
// it shuts down. Closing its listener unlinked the path whatever it held
// by then, and the other daemon ran on, unreachable.
func TestShutdownKeepsReplacingDaemonsSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "s.sock")
	ready := make(chan struct{})
	log := slog.New(listeningHandler{Handler: slog.DiscardHandler, ready: ready})
	s, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Second) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	other, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the other daemon's socket: %v", err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial the other daemon: %v", err)
	}
	c.Close()
}
