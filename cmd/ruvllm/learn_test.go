package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestLearnAndTrainCommands: `ruvllm feedback` says when a correction was
// learned, `ruvllm learn status|undo|export` show and control it, and
// `ruvllm train` fine-tunes an adapter from a JSONL file.
func TestLearnAndTrainCommands(t *testing.T) {
	dir, err := os.MkdirTemp("", "rvlearn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	model := filepath.Join(dir, "models", "tiny.gguf")
	os.MkdirAll(filepath.Dir(model), 0o700)
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
	if err := testmodel.Write(context.Background(), o, model); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, dir, serve.Options{Model: "tiny", Preload: true, KeepAlive: time.Minute})
	c, err := ipc.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	temp := float32(0)
	req := ipc.ChatCompletionRequest{Model: "tiny", Messages: []ipc.Message{{Role: "user", Content: "What is a pipe?"}}}
	req.Temperature, req.MaxTokens = &temp, 4
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, newFeedbackCmd(), resp.ID, "down", "--correction", "A pipe joins programs.")
	if err != nil || !regexp.MustCompile(`learn(ed in \d+ ms|ing: queued)`).MatchString(out) {
		t.Fatalf("feedback: %q %v", out, err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		out, _, err = runCLI(t, newLearnCmd(), "status")
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^\s+user\s+1\s+1\s+0\s+1\s`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed the learned correction:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out, "tiny: ready") {
		t.Fatalf("status:\n%s", out)
	}
	gguf := filepath.Join(dir, "learned.gguf")
	if out, _, err := runCLI(t, newLearnCmd(), "export", "-o", gguf); err != nil || !strings.Contains(out, "wrote") {
		t.Fatalf("export: %q %v", out, err)
	}
	if st, err := os.Stat(gguf); err != nil || st.Size() < 1000 {
		t.Fatalf("exported file: %v %v", st, err)
	}
	if out, _, err := runCLI(t, newLearnCmd(), "undo"); err != nil || !strings.Contains(out, "undo: user on tiny") {
		t.Fatalf("undo: %q %v", out, err)
	}
	if _, _, err := runCLI(t, newLearnCmd(), "undo"); err == nil || !strings.Contains(err.Error(), "no update to undo") {
		t.Fatalf("second undo: %v", err)
	}
	if _, _, err := runCLI(t, newLearnCmd(), "pause", "--scope", "nobody"); err == nil || !strings.Contains(err.Error(), "scope") {
		t.Fatalf("bad scope: %v", err)
	}

	data := filepath.Join(dir, "train.jsonl")
	os.WriteFile(data, []byte(`{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello. Cheers, Ana."}]}
{"messages":[{"role":"user","content":"Bye"},{"role":"assistant","content":"Goodbye. Cheers, Ana."}]}
`), 0o600)
	out, errOut, err := runCLI(t, newTrainCmd(), data, "-m", "tiny", "--suffix", "ana", "--epochs", "2")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, errOut)
	}
	if !regexp.MustCompile(`^ft:tiny:ana:[0-9a-f]{12}\n$`).MatchString(out) || !strings.Contains(errOut, "uploaded") {
		t.Fatalf("train printed %q, stderr %q", out, errOut)
	}
	if _, _, err := runCLI(t, newTrainCmd(), data); err == nil || !strings.Contains(err.Error(), "-m") {
		t.Fatalf("train without a model: %v", err)
	}
}

// TestWriteFileAtomicBesideTarget: learn export's file is written beside
// -o, not in the working directory (where the rename to another file
// system failed, "invalid cross-device link"); here the working directory
// is gone, so a temporary file there cannot even be made.
func TestWriteFileAtomicBesideTarget(t *testing.T) {
	gone := t.TempDir()
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "learned.gguf")
	n, err := writeFileAtomic(out, func(w io.Writer) (int64, error) {
		k, err := io.WriteString(w, "GGUF data")
		return int64(k), err
	})
	if got, _ := os.ReadFile(out); err != nil || n != 9 || string(got) != "GGUF data" {
		t.Fatalf("n %d, err %v, file %q", n, err, got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	_, err = writeFileAtomic(out, func(w io.Writer) (int64, error) { return 0, io.ErrUnexpectedEOF })
	if got, _ := os.ReadFile(out); err == nil || string(got) != "GGUF data" {
		t.Errorf("a failed write: err %v, file %q (want the old one kept)", err, got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind after a failure: %v", ents)
	}
}
