package daemon

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHandlerPanicLoggedAsError(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "s.sock")
	var logs syncBuffer
	s, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("GET /v1/test-panic", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("a bug in a handler")
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Second) }()
	defer func() {
		cancel()
		<-done
	}()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	// Serving: an answer comes from its accept loop.
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
	if resp, err := client.Get("http://ruvllm/v1/test-panic"); err == nil {
		resp.Body.Close()
		t.Fatalf("a panicking handler answered %s", resp.Status)
	}
	// net/http logs the panic before it closes the connection, so the
	// line is there once the client saw the connection close.
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "a bug in a handler") {
			line = l
		}
	}
	if !strings.Contains(line, "level=ERROR") {
		t.Fatalf("the panic's log line: %q, want it at level ERROR", line)
	}
}
