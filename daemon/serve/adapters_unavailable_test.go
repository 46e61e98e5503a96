package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestDaemonServesWithoutAdaptersDir: a daemon whose --adapters-dir cannot
// be created (a file in its way: read-only for every user, root too)
// starts and serves models, and refuses adapter installs with a 503 naming
// the directory. It did not start at all.
func TestDaemonServesWithoutAdaptersDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "drop"), []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, drop, dial := startAdapterDaemonIn(t, dir)
	c := dial("test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	temp := float32(0)
	req := ipc.ChatCompletionRequest{Model: "tiny-qwen2", Messages: []ipc.Message{{Role: "user", Content: "hello"}}}
	req.Temperature, req.MaxTokens = &temp, 2
	if _, err := c.Chat(ctx, req); err != nil {
		t.Fatalf("chat: %v", err)
	}
	src := filepath.Join(dir, "tone.gguf")
	randomAdapterFile(t, filepath.Join(dir, "models", "tiny-qwen2.gguf"), src, 4)
	_, err := c.InstallAdapterPath(ctx, src, "tone")
	var apiErr *ipc.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 || !strings.Contains(err.Error(), drop) {
		t.Fatalf("install: %v, want a 503 naming %s", err, drop)
	}
}
