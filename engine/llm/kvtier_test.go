package llm

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestKVColdTier generates from the shared llama with a quantized cold
// tier: tokens whose context fits the hot window are the f16 cache's
// tokens, finished requests leave cold blocks in the prefix cache, a
// snapshot carries them to a freshly loaded model, and perplexity with
// old positions read cold stays near f16's.
func TestKVColdTier(t *testing.T) {
	path := filepath.Join(testpath.Shared(t, "models"), "ruvllm-test-llama-19m-q8_0.gguf")
	const window = 64
	load := func(cold quant.Type) *Model {
		m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: 512, KVCold: cold, KVHotWindow: window})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	plain := load(0)
	defer plain.Close()
	for _, cold := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		t.Run(cold.String(), func(t *testing.T) {
			m := load(cold)
			defer m.Close()
			info := m.KVInfo()
			want := map[quant.Type]float64{quant.Q8_0: 34.0 / 64, quant.Q4_0: 18.0 / 64}[cold]
			if math.Abs(info.ColdBytesPerToken/info.HotBytesPerToken-want) > 1e-9 || info.BudgetBytes != plain.KVInfo().BudgetBytes {
				t.Fatalf("KVInfo %+v: cold/hot should be %.4f within f16's budget %d", info, want, plain.KVInfo().BudgetBytes)
			}
			if info.CapacityTokens <= plain.KVInfo().CapacityTokens*3/2 {
				t.Fatalf("capacity %d positions, f16 %d", info.CapacityTokens, plain.KVInfo().CapacityTokens)
			}
			// A prompt and reply within the hot window: nothing is read cold.
			req := Request{Prompt: "The kernel", MaxTokens: 40, IgnoreEOS: true}
			a, _, _ := generate(t, m, req)
			b, _, _ := generate(t, plain, req)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("within the window: %v\nf16: %v", a, b)
			}
			// A long prompt: its old blocks go cold, and the cache keeps them.
			long := Request{Prompt: strings.Repeat(specPrompt+"\n", 3), MaxTokens: 20, IgnoreEOS: true}
			_, _, res := generate(t, m, long)
			if res.PromptTokens < 3*window {
				t.Fatalf("prompt of only %d tokens", res.PromptTokens)
			}
			st := m.CacheStats()
			full := st.Blocks - st.PartialBlocks
			if st.ColdBlocks == 0 || st.ColdBlocks != full {
				t.Fatalf("cache %+v: every full cached block should be cold", st)
			}
			snap := filepath.Join(t.TempDir(), "prefix.snap")
			if n, err := m.SaveCache(snap, 1000); err != nil || n == 0 {
				t.Fatalf("SaveCache = %d, %v", n, err)
			}
			fresh := load(cold)
			defer fresh.Close()
			if n, err := fresh.LoadCache(snap); err != nil || n != full {
				t.Fatalf("LoadCache = %d, %v; want %d", n, err, full)
			}
			if _, err := plain.LoadCache(snap); err == nil {
				t.Fatal("an f16 cache loaded a snapshot with cold blocks")
			}
			_, _, again := generate(t, fresh, long)
			if again.CachedTokens == 0 {
				t.Fatal("the restored cold prefix was not reused")
			}
		})
	}
	// Perplexity with old positions read from the cold tier.
	text := strings.Repeat(strings.Join(specDocs, "\n\n")+"\n\n", 3)
	base, err := plain.Perplexity(context.Background(), text, 256, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cold := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		m := load(cold)
		res, err := m.Perplexity(context.Background(), text, 256, nil)
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: perplexity %.4f against f16 %.4f (%+.2f%%)", cold, res.Perplexity, base.Perplexity, 100*(res.Perplexity/base.Perplexity-1))
		if res.Perplexity == base.Perplexity || math.Abs(res.Perplexity/base.Perplexity-1) > 0.05 {
			t.Fatalf("%s: perplexity %.4f, f16 %.4f", cold, res.Perplexity, base.Perplexity)
		}
	}
}

func TestParseKVType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want quant.Type
		err  bool
	}{{"", 0, false}, {"f16", 0, false}, {"F16", 0, false}, {"q8_0", quant.Q8_0, false}, {"Q4_0", quant.Q4_0, false}, {"q4_k", 0, true}, {"f32", 0, true}} {
		got, err := ParseKVType(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseKVType(%q) = %v, %v", tc.in, got, err)
		}
	}
}
