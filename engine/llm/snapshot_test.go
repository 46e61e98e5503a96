package llm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/prefix"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestSaveCacheRoundTrip checks that a saved snapshot restores the prefix
// into a freshly loaded model, that saving again replaces the file and
// leaves no temporary files behind, and that a damaged snapshot is
// rejected with prefix.ErrBadSnapshot and nothing loaded.
func TestSaveCacheRoundTrip(t *testing.T) {
	path := synthetic(t, "llama", quant.Q8_0)
	dir := t.TempDir()
	snap := filepath.Join(dir, "prefix.snap")
	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(1 + i%50)
	}
	load := func() *Model {
		m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: 128, Sequences: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	gen := func(m *Model) Result {
		res, err := m.Generate(context.Background(), Request{Tokens: prompt, MaxTokens: 4, IgnoreEOS: true}, func(Token) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	m := load()
	gen(m)
	for range 2 { // the second save replaces the first
		n, err := m.SaveCache(snap, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("saved no blocks after a 40-token prompt")
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("directory after two saves holds %d entries, want only the snapshot", len(entries))
	}

	fresh := load()
	n, err := fresh.LoadCache(snap)
	if err != nil || n == 0 {
		t.Fatalf("LoadCache: %d blocks, %v", n, err)
	}
	if res := gen(fresh); res.CachedTokens == 0 {
		t.Errorf("first request after loading the snapshot: no cached tokens")
	}

	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(snap, data, 0o600); err != nil {
		t.Fatal(err)
	}
	other := load()
	if n, err := other.LoadCache(snap); !errors.Is(err, prefix.ErrBadSnapshot) || n != 0 {
		t.Errorf("damaged snapshot: %d blocks, %v; want 0 and ErrBadSnapshot", n, err)
	}
}

// TestSnapshotKeepsArithmeticsApart checks that a prefix snapshot saved by
// a model in the default arithmetic is refused by the same file loaded in
// the exact one (its keys and values, and its cache layout, are not
// those), and restored by another default-mode load.
func TestSnapshotKeepsArithmeticsApart(t *testing.T) {
	path := synthetic(t, "llama", quant.F16)
	snap := filepath.Join(t.TempDir(), "prefix.snap")
	load := func(exact bool) *Model {
		m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: 128, Sequences: 1, Exact: exact})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	m := load(false)
	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(1 + i%50)
	}
	if _, err := m.Generate(context.Background(), Request{Tokens: prompt, MaxTokens: 2, IgnoreEOS: true}, func(Token) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n, err := m.SaveCache(snap, 1000); err != nil || n == 0 {
		t.Fatalf("save: %d blocks, %v", n, err)
	}
	if n, err := load(true).LoadCache(snap); !errors.Is(err, prefix.ErrBadSnapshot) || n != 0 {
		t.Fatalf("exact-mode load of a default-mode snapshot: %d blocks, %v; want ErrBadSnapshot", n, err)
	}
	if n, err := load(false).LoadCache(snap); err != nil || n == 0 {
		t.Fatalf("default-mode load: %d blocks, %v", n, err)
	}
}
