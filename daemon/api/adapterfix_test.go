package api

import (
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/adapters"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
)

// randomAdapter writes a random rank-4 LoRA adapter for the model at base
// into dir and returns its path.
func randomAdapter(t *testing.T, base, dir, name string, seed uint64, alpha float32) string {
	t.Helper()
	f, err := gguf.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := lora.Random(f, lora.RandomOptions{Rank: 4, Alpha: alpha, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// withAdapterPool gives ta an adapter pool whose adapters are checked
// against the model at base, its registry in dir.
func withAdapterPool(t *testing.T, ta *testAPI, base, dir string) *adapters.Pool {
	t.Helper()
	pool, err := adapters.New(adapters.Options{RegistryDir: filepath.Join(dir, "registry"), Store: ta.srv.Store(),
		Base: func() string { return base }, UsedBy: ta.api.AdapterUsers})
	if err != nil {
		t.Fatal(err)
	}
	ta.api.SetAdapters(pool)
	return pool
}
