package serve

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestKeepAliveZeroUnloadsOnceIdle: ruvllmd --keep-alive 0 unloads a model
// as soon as its request ends, as Ollama's OLLAMA_KEEP_ALIVE=0 does; the 0
// was taken as "unset" and the model stayed loaded for the 5 min default.
func TestKeepAliveZeroUnloadsOnceIdle(t *testing.T) {
	dir := t.TempDir()
	writeModel(t, dir)
	sock := filepath.Join(dir, "run", "ruvllm.sock")
	cfg := daemon.Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"),
		CacheDir: filepath.Join(dir, "cache"), MaxBodyBytes: 64 << 10, Threads: 2, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := Options{Config: cfg, Model: "tiny-qwen2"}
	fs := pflag.NewFlagSet("ruvllmd", pflag.ContinueOnError)
	RegisterFlags(&o, fs)
	if err := fs.Parse([]string{"--keep-alive", "0"}); err != nil {
		t.Fatal(err)
	}
	if err := FinishFlags(&o, fs); err != nil || !o.UnloadIdle {
		t.Fatalf("--keep-alive 0: unload idle %v, %v", o.UnloadIdle, err)
	}
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	var c *ipc.Client
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if c, err = ipc.Dial(context.Background(), ipc.WithSocket(sock)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer c.Close()
	var out ipc.OllamaGenerateResponse
	if err := c.Do(context.Background(), "POST", "/api/generate",
		map[string]any{"model": "tiny-qwen2", "prompt": "Hi", "stream": false, "options": map[string]any{"num_predict": 2}}, &out); err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Loaded) != 0 {
		t.Fatalf("loaded %+v after the request with --keep-alive 0, want none", h.Loaded)
	}
}
