package llm

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestForcedLogitsFollowGenerate checks that ForcedLogits along a greedy
// generation's tokens gives, at every step, logits whose argmax is the
// token Generate chose, for the prebuilt arithmetic and for the native
// AVX512-FP16 one (whose F16 products depend on the rows of a pass, so
// that both paths must pass the same rows: the last layer's feed-forward
// network of the output row on its own, model.Batch.Outputs).
func TestForcedLogitsFollowGenerate(t *testing.T) {
	ctx := context.Background()
	o := testmodel.DefaultOptions()
	o.Arch, o.Type, o.Seed = "qwen2", quant.F16, 11
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := testmodel.Write(ctx, o, path); err != nil {
		t.Fatal(err)
	}
	for _, build := range []cpu.LlamaBuild{cpu.BuildPrebuilt, cpu.BuildNativeFP16} {
		m, err := Load(ctx, path, Options{Threads: 2, ContextLength: 256, Sequences: 1, NoPrefixCache: true,
			NewBackend: func() (compute.Backend, error) {
				return cpu.New(cpu.Options{Threads: 2, Exact: true, Build: build}), nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		prompt := []int32{1, 5, 9, 13, 17, 21, 25}
		var toks []int32
		if _, err := m.Generate(ctx, Request{Tokens: prompt, MaxTokens: 12}, func(tok Token) error {
			if tok.ID >= 0 {
				toks = append(toks, tok.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(toks) == 0 {
			t.Fatalf("build %d: no tokens generated", build)
		}
		steps := 0
		if err := m.ForcedLogits(ctx, prompt, toks, func(step int, logits []float32) error {
			best := 0
			for i, v := range logits {
				if v > logits[best] {
					best = i
				}
			}
			if int32(best) != toks[step] {
				t.Errorf("build %d, step %d: argmax %d, Generate chose %d", build, step, best, toks[step])
			}
			steps++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if steps != len(toks) {
			t.Errorf("build %d: %d steps for %d tokens", build, steps, len(toks))
		}
		m.Close()
	}
}
