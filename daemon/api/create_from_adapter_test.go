package api

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
)

// TestCreateFromAdapterFile: a LoRA adapter file given as a created
// model's from is a 400 naming from; it was created (200) and every
// request to it then failed to load it (422).
func TestCreateFromAdapterFile(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	f, err := gguf.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lora.Random(f, lora.RandomOptions{Rank: 4, Seed: 1})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "style.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	resp, b := ta.post(t, "/api/create", `{"model":"wrong","from":`+quote(path)+`,"stream":false}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "adapter") {
		t.Fatalf("create from an adapter file: %d %s, want 400", resp.StatusCode, b)
	}
	ta.postOK(t, "/api/create", `{"model":"right","from":`+quote(base)+`,"stream":false}`)
}
