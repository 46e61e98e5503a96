package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestOllamaCommands drives list, show, cp and create as an Ollama user
// types them, against an in-process daemon: a Modelfile's FROM path is
// read relative to the Modelfile, not to the daemon's directory.
func TestOllamaCommands(t *testing.T) {
	dir, err := os.MkdirTemp("", "rvoll")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o700); err != nil {
		t.Fatal(err)
	}
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
	if err := testmodel.Write(context.Background(), o, filepath.Join(dir, "models", "tiny.gguf")); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := testmodel.Write(context.Background(), o, filepath.Join(work, "local.gguf")); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, dir, serve.Options{KeepAlive: time.Minute, MaxLoaded: 1})

	if out, _, err := runCLI(t, newListCmd()); err != nil || !strings.HasPrefix(out, "NAME") || !strings.Contains(out, "tiny") {
		t.Fatalf("list: %q %v", out, err)
	}
	if out, _, err := runCLI(t, newShowCmd(), "tiny"); err != nil || !strings.Contains(out, "qwen2") || !strings.Contains(out, "completion") {
		t.Fatalf("show: %q %v", out, err)
	}
	if out, _, err := runCLI(t, newCpCmd(), "tiny", "tiny-copy"); err != nil || !strings.Contains(out, "copied") {
		t.Fatalf("cp: %q %v", out, err)
	}
	mf := filepath.Join(work, "Modelfile")
	if err := os.WriteFile(mf, []byte("FROM ./local.gguf\nSYSTEM \"\"\"Answer in one word.\"\"\"\nPARAMETER temperature 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runCLI(t, newCreateCmd(), "oneword", "-f", mf); err != nil || strings.TrimSpace(out) != "success" {
		t.Fatalf("create: %q %v", out, err)
	}
	out, _, err := runCLI(t, newListCmd())
	if err != nil || !strings.Contains(out, "tiny-copy") || !strings.Contains(out, "oneword") {
		t.Fatalf("list after cp and create: %q %v", out, err)
	}
	if out, _, err := runCLI(t, newShowCmd(), "oneword", "--system"); err != nil || strings.TrimSpace(out) != "Answer in one word." {
		t.Fatalf("show --system: %q %v", out, err)
	}
	if out, _, err := runCLI(t, newShowCmd(), "oneword", "--modelfile"); err != nil || !strings.Contains(out, "FROM ") || !strings.Contains(out, "temperature 0") {
		t.Fatalf("show --modelfile: %q %v", out, err)
	}
	if _, _, err := runCLI(t, newShowCmd(), "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("show of a missing model: %v", err)
	}
	if _, _, err := runCLI(t, newCreateCmd(), "x", "-f", filepath.Join(work, "missing")); err == nil || !strings.Contains(err.Error(), "modelfile") {
		t.Fatalf("create without a Modelfile: %v", err)
	}
}
