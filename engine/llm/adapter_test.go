package llm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// adapterFixture writes a synthetic base model, a random adapter and the
// model with the adapter merged at scale.
func adapterFixture(t *testing.T, scale float32) (basePath, adapterPath, mergedPath string) {
	t.Helper()
	dir := t.TempDir()
	basePath = filepath.Join(dir, "base.gguf")
	o := testmodel.DefaultOptions()
	o.Seed = 11
	if err := testmodel.Write(context.Background(), o, basePath); err != nil {
		t.Fatal(err)
	}
	base, err := gguf.Open(basePath)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	w, err := lora.Random(base, lora.RandomOptions{Rank: 8, Alpha: 16, Seed: 5, Name: "tone"})
	if err != nil {
		t.Fatal(err)
	}
	adapterPath = filepath.Join(dir, "tone.gguf")
	if err := w.WriteFile(adapterPath); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(adapterPath)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lora.LoadGGUF(f, base, nil)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	mw, err := lora.Merge(context.Background(), base, []lora.Applied{{Adapter: a, Scale: scale}})
	if err != nil {
		t.Fatal(err)
	}
	mergedPath = filepath.Join(dir, "merged.gguf")
	if err := mw.WriteFile(mergedPath); err != nil {
		t.Fatal(err)
	}
	return basePath, adapterPath, mergedPath
}

func loadTest(t *testing.T, path string) *Model {
	t.Helper()
	m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: 256, KVType: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func generateIDs(t *testing.T, m *Model, req Request) ([]int32, Result) {
	t.Helper()
	var ids []int32
	res, err := m.Generate(context.Background(), req, func(tok Token) error {
		if tok.ID >= 0 {
			ids = append(ids, tok.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, res
}

// TestAdapterThroughScheduler runs requests with and without an adapter
// concurrently through the scheduler and checks each equals the merged or
// the base model's greedy output; the prefix cache never crosses adapters.
func TestAdapterThroughScheduler(t *testing.T) {
	const scale = 0.8
	basePath, adapterPath, mergedPath := adapterFixture(t, scale)
	m := loadTest(t, basePath)
	merged := loadTest(t, mergedPath)
	a, err := m.LoadAdapter(adapterPath)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 20, 33, 47, 52, 66, 71, 80, 95, 101, 120, 130, 140, 150, 160, 170, 180}
	withReq := Request{Tokens: prompt, MaxTokens: 12, IgnoreEOS: true, Adapters: []lora.Applied{{Adapter: a, Scale: scale}}}
	plainReq := Request{Tokens: prompt, MaxTokens: 12, IgnoreEOS: true}

	wantWith, _ := generateIDs(t, merged, plainReq)
	wantPlain, _ := generateIDs(t, loadTest(t, basePath), plainReq)
	if fmt.Sprint(wantWith) == fmt.Sprint(wantPlain) {
		t.Fatal("the adapter does not change the output; the test would prove nothing")
	}

	var wg sync.WaitGroup
	got := make([][]int32, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := plainReq
			if i%2 == 0 {
				req = withReq
			}
			got[i], _ = generateIDs(t, m, req)
		}()
	}
	wg.Wait()
	for i, g := range got {
		want := wantPlain
		if i%2 == 0 {
			want = wantWith
		}
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("request %d (adapter %v): %v, want %v", i, i%2 == 0, g, want)
		}
	}

	// The cache now holds the prompt under both namespaces; a new scale is
	// a new namespace and must recompute.
	other := withReq
	other.Adapters = []lora.Applied{{Adapter: a, Scale: 0.3}}
	if _, res := generateIDs(t, m, other); res.CachedTokens != 0 {
		t.Errorf("scale 0.3 reused %d cached tokens of another adapter set", res.CachedTokens)
	}
	if _, res := generateIDs(t, m, withReq); res.CachedTokens == 0 {
		t.Error("the same adapter and scale did not reuse its cached prefix")
	}

	// An adapter of another model is refused.
	foreign := *a
	foreign.Base = "elsewhere"
	bad := withReq
	bad.Adapters = []lora.Applied{{Adapter: &foreign, Scale: 1}}
	if _, err := m.Generate(context.Background(), bad, func(Token) error { return nil }); !errors.Is(err, ErrForeignAdapter) {
		t.Fatalf("foreign adapter: err = %v", err)
	}
}

// TestUseAdapter: an adapter built in memory from the same values as a
// file gives the file's outputs, and one for another model is refused.
func TestUseAdapter(t *testing.T) {
	basePath, adapterPath, _ := adapterFixture(t, 1)
	m := loadTest(t, basePath)
	fromFile, err := m.LoadAdapter(adapterPath)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]lora.Dense{}
	for name, p := range fromFile.Targets {
		a, _ := p.HostA.Floats()
		b, _ := p.HostB.Floats()
		targets[name] = lora.Dense{In: p.In, Out: p.Out, Rank: p.Rank, A: a, B: b}
	}
	mem, err := lora.FromDense("learned", fromFile.Arch, fromFile.Alpha, targets, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.UseAdapter(mem); err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 20, 33, 47, 52, 66}
	want, _ := generateIDs(t, m, Request{Tokens: prompt, MaxTokens: 8, IgnoreEOS: true, Adapters: []lora.Applied{{Adapter: fromFile, Scale: 1}}})
	got, _ := generateIDs(t, m, Request{Tokens: prompt, MaxTokens: 8, IgnoreEOS: true, Adapters: []lora.Applied{{Adapter: mem, Scale: 1}}})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("in-memory adapter: %v, file: %v", got, want)
	}
	bad, err := lora.FromDense("bad", fromFile.Arch, 1, map[string]lora.Dense{"blk.99.attn_q": targets["blk.0.attn_q"]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.UseAdapter(bad); !errors.Is(err, lora.ErrMismatch) {
		t.Fatalf("adapter for a missing layer: %v", err)
	}
	if err := m.Yield(context.Background()); err != nil {
		t.Fatalf("Yield on an idle model: %v", err)
	}
}
