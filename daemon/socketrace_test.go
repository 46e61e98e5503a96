package daemon

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestShutdownKeepsNextDaemonsSocket: a daemon that starts on the same
// socket path while another shuts down (the path is free once the old
// listeners close) keeps its socket when the old one exits. The old one
// removed whatever socket was at the path, leaving the new daemon running
// and unreachable.
func TestShutdownKeepsNextDaemonsSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "s.sock")
	s, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var next net.Listener
	// Shutdown hooks run after the listeners closed and before the
	// socket file is removed: the next daemon starts there.
	s.OnShutdown(func(context.Context) error {
		if err := clearStaleSocket(sock, nil); err != nil {
			return err
		}
		var err error
		next, err = net.Listen("unix", sock)
		return err
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Second) }()
	// Serving: an answer comes from its accept loop.
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := client.Get("http://ruvllm/v1/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	client.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if next == nil {
		t.Fatal("the next daemon could not listen")
	}
	defer next.Close()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the next daemon's socket: %v", err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial the next daemon: %v", err)
	}
	c.Close()
}
