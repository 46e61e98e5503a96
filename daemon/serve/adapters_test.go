package serve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/ipc"
)

// startAdapterDaemon is a real ruvllmd with a drop folder.
func startAdapterDaemon(t *testing.T) (dir, drop string, dial func(app string) *ipc.Client) {
	t.Helper()
	return startAdapterDaemonIn(t, t.TempDir())
}

// startAdapterDaemonIn is startAdapterDaemon in the directory dir.
func startAdapterDaemonIn(t *testing.T, dir string) (_, drop string, dial func(app string) *ipc.Client) {
	t.Helper()
	writeModel(t, dir)
	sock := filepath.Join(dir, "run", "ruvllm.sock")
	drop = filepath.Join(dir, "drop")
	cfg := daemon.Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"),
		AdaptersDir: drop, CacheDir: filepath.Join(dir, "cache"), MaxBodyBytes: 64 << 10, Threads: 2, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Config: cfg, Model: "tiny-qwen2", KeepAlive: time.Minute}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	dial = func(app string) *ipc.Client {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := ipc.Dial(context.Background(), ipc.WithSocket(sock), ipc.WithApp(app))
			if err == nil {
				t.Cleanup(c.Close)
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("daemon did not start: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return dir, drop, dial
}

func randomAdapterFile(t *testing.T, modelPath, out string, seed uint64) {
	t.Helper()
	base, err := gguf.Open(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	w, err := lora.Random(base, lora.RandomOptions{Rank: 8, Alpha: 16, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
}

// TestDropAdapterUsableByAnotherClient: a file copied into the drop folder
// is announced on /v1/events and usable by a request from another client
// within 2 s, without a restart; the API lists, uploads and removes.
func TestDropAdapterUsableByAnotherClient(t *testing.T) {
	dir, drop, dial := startAdapterDaemon(t)
	watcher, user := dial("watcher"), dial("editor")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	temp := float32(0)
	chat := func(c *ipc.Client, refs []ipc.AdapterRef) (string, error) {
		req := ipc.ChatCompletionRequest{Model: "tiny-qwen2", Messages: []ipc.Message{{Role: "user", Content: "hello there"}}}
		req.Temperature, req.MaxTokens, req.Adapters = &temp, 10, refs
		resp, err := c.Chat(ctx, req)
		if err != nil {
			return "", err
		}
		return resp.Choices[0].Message.Content, nil
	}
	plain, err := chat(user, nil) // also loads the model
	if err != nil {
		t.Fatal(err)
	}
	if _, err = chat(user, []ipc.AdapterRef{{Name: "tone"}}); err == nil || !strings.Contains(err.Error(), "unknown adapter") {
		t.Fatalf("unknown adapter: err = %v", err)
	}
	var apiErr *ipc.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Fatalf("unknown adapter status: %v", err)
	}

	var mu sync.Mutex
	var events []string
	evCtx, evCancel := context.WithCancel(ctx)
	defer evCancel()
	go watcher.Events(evCtx, func(e ipc.Event) error {
		mu.Lock()
		events = append(events, e.Type)
		mu.Unlock()
		return nil
	})
	time.Sleep(100 * time.Millisecond) // let the subscription start

	// Copy the adapter into the folder the way a file manager does.
	src := filepath.Join(dir, "tone.gguf")
	randomAdapterFile(t, filepath.Join(dir, "models", "tiny-qwen2.gguf"), src, 4)
	b, _ := os.ReadFile(src)
	if err := os.WriteFile(filepath.Join(drop, "tone.gguf"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	copied := time.Now()
	var adapted string
	for {
		out, err := chat(user, []ipc.AdapterRef{{Name: "tone", Scale: 0.8}})
		if err == nil {
			adapted = out
			break
		}
		if time.Since(copied) > 2*time.Second {
			t.Fatalf("adapter not usable 2 s after the drop: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Logf("usable %v after the drop", time.Since(copied).Round(time.Millisecond))
	if adapted == plain {
		t.Errorf("the adapter did not change the answer (%q)", plain)
	}
	mu.Lock()
	got := strings.Join(events, ",")
	mu.Unlock()
	if !strings.Contains(got, "adapter.installed") {
		t.Errorf("events %q lack adapter.installed", got)
	}

	// Ollama bodies select adapters through options.adapters.
	sock := &testDaemon{sock: filepath.Join(dir, "run", "ruvllm.sock")}
	code, body := sock.post(t, "/api/generate",
		`{"model":"tiny-qwen2","prompt":"hi","stream":false,"options":{"temperature":0,"num_predict":3,"adapters":[{"name":"nope"}]}}`)
	if code != 400 || !strings.Contains(string(body), "unknown adapter") {
		t.Errorf("ollama unknown adapter: %d %s", code, body)
	}

	// Upload (the app's drag and drop), list, remove.
	src2 := filepath.Join(dir, "mail.gguf")
	randomAdapterFile(t, filepath.Join(dir, "models", "tiny-qwen2.gguf"), src2, 5)
	if st, _ := os.Stat(src2); st.Size() <= 64<<10 {
		t.Fatalf("upload of %d bytes does not exceed the 64 KiB body limit; the test would prove nothing", st.Size())
	}
	info, err := user.UploadAdapter(ctx, src2, "")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "mail" || info.Rank != 8 {
		t.Fatalf("uploaded %+v", info)
	}
	list, err := user.Adapters(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list %+v, %v", list, err)
	}
	if _, err := chat(user, []ipc.AdapterRef{{Name: "mail"}, {Name: "tone", Scale: 0.5}}); err != nil {
		t.Fatalf("two adapters: %v", err)
	}
	if err := user.RemoveAdapter(ctx, "tone"); err != nil {
		t.Fatal(err)
	}
	if err := user.RemoveAdapter(ctx, "tone"); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("second remove: %v", err)
	}
	if _, err := chat(user, []ipc.AdapterRef{{Name: "tone"}}); err == nil {
		t.Fatal("removed adapter still usable")
	}
}
