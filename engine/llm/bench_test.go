package llm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

func TestBench(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.Q8_0),
		Options{Threads: 2, ContextLength: 40, BatchSize: 16, Sequences: 1, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	figs, err := m.Bench(context.Background(), BenchOptions{PromptTokens: 16, GenTokens: 8, Reps: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 || figs[0].Test != "pp16" || figs[0].Tokens != 16 || figs[1].Test != "tg8" || figs[1].Tokens != 8 {
		t.Fatalf("figures %+v: want pp16 then tg8", figs)
	}
	for _, f := range figs {
		if len(f.Samples) != 3 {
			t.Errorf("%s: %d samples, want 3", f.Test, len(f.Samples))
		}
		mean, lo, hi := 0.0, f.Samples[0], f.Samples[0]
		for _, s := range f.Samples {
			if !(s > 0) {
				t.Errorf("%s: sample %v, want > 0", f.Test, s)
			}
			mean += s / float64(len(f.Samples))
			lo, hi = min(lo, s), max(hi, s)
		}
		if d := f.Mean - mean; d > 1e-9*mean || d < -1e-9*mean {
			t.Errorf("%s: mean %v, samples average %v", f.Test, f.Mean, mean)
		}
		if f.Stddev < 0 || f.Stddev > hi-lo {
			t.Errorf("%s: stddev %v outside [0, %v]", f.Test, f.Stddev, hi-lo)
		}
	}

	// Only the tests asked for run; a test longer than the context fails.
	figs, err = m.Bench(context.Background(), BenchOptions{PromptTokens: 0, GenTokens: 4, Reps: 1})
	if err != nil || len(figs) != 1 || figs[0].Test != "tg4" {
		t.Errorf("tg only: %+v, %v", figs, err)
	}
	if _, err := m.Bench(context.Background(), BenchOptions{PromptTokens: 64, Reps: 1}); err == nil || !strings.Contains(err.Error(), "context") {
		t.Errorf("pp64 in a context of 40: err %v, want a context error", err)
	}
}

// TestBenchAtDepth: -d runs the tests after a context read from the
// prefix cache, so each repetition computes only its own tokens.
func TestBenchAtDepth(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.Q8_0),
		Options{Threads: 2, ContextLength: 128, BatchSize: 32, Sequences: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	figs, err := m.Bench(context.Background(), BenchOptions{PromptTokens: 16, GenTokens: 8, Reps: 2, Depth: 64})
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 || figs[0].Test != "pp16 @ d64" || figs[1].Test != "tg8 @ d64" || len(figs[0].Samples) != 2 || figs[1].Mean <= 0 {
		t.Fatalf("figures %+v: want pp16 @ d64 and tg8 @ d64", figs)
	}
	if st := m.CacheStats(); st.HitTokens < 64*5 {
		t.Errorf("cache %+v: every one of the 6 runs after the fill reads the 64-token context from it", st)
	}
	if _, err := m.Bench(context.Background(), BenchOptions{PromptTokens: 64, Reps: 1, Depth: 64}); err == nil || !strings.Contains(err.Error(), "context") {
		t.Errorf("pp64 at depth 64 in a context of 128: %v, want a context error", err)
	}
	// The cache holds whole blocks: the rest of a depth of 17 was computed
	// again in every repetition and timed with the test's tokens.
	for _, d := range []int{5, 17, 63} {
		if _, err := m.Bench(context.Background(), BenchOptions{PromptTokens: 8, Reps: 1, Depth: d}); err == nil || !strings.Contains(err.Error(), "multiple of 16") {
			t.Errorf("depth %d: %v, want an error asking for a multiple of 16", d, err)
		}
	}
	off, err := Load(context.Background(), synthetic(t, "llama", quant.Q8_0), Options{Threads: 1, ContextLength: 128, Sequences: 1, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if _, err := off.Bench(context.Background(), BenchOptions{GenTokens: 4, Reps: 1, Depth: 32}); err == nil || !strings.Contains(err.Error(), "prefix cache") {
		t.Errorf("depth without the prefix cache: %v", err)
	}
}

func TestMeanStddev(t *testing.T) {
	for _, c := range []struct {
		x        []float64
		mean, sd float64
	}{
		{nil, 0, 0},
		{[]float64{3}, 3, 0},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 2.138089935299395}, // sample (n-1) stddev
	} {
		mean, sd := meanStddev(c.x)
		if mean != c.mean || fmt.Sprintf("%.12f", sd) != fmt.Sprintf("%.12f", c.sd) {
			t.Errorf("meanStddev(%v) = %v, %v; want %v, %v", c.x, mean, sd, c.mean, c.sd)
		}
	}
}

// TestMemoryFigures checks the arithmetic `ruvllm bench` prints against the
// model's shape: with F32 weights every parameter is 4 bytes, and the token
// embedding is read per token only where it doubles as the output matrix.
func TestMemoryFigures(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2"} { // untied, tied
		t.Run(arch, func(t *testing.T) {
			o := testmodel.DefaultOptions()
			m, err := Load(context.Background(), synthetic(t, arch, quant.F32),
				Options{Threads: 1, ContextLength: 40, Sequences: 1, KVType: quant.F16})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			info := m.Info()
			want := 4 * int64(info.Parameters)
			if arch == "llama" {
				want -= 4 * int64(info.VocabSize*info.EmbeddingSize)
			}
			if got := m.WeightBytesPerToken(); got != want {
				t.Errorf("weight bytes per token %d, want %d", got, want)
			}
			// 40 tokens round up to 3 blocks of 16; K and V, F16.
			kv := int64(48 * o.Layers * 2 * o.KVHeads * (o.Dim / o.Heads) * 2)
			if got := m.KVBytes(); got != kv {
				t.Errorf("KV bytes %d, want %d", got, kv)
			}
		})
	}
	rss, err := PeakRSS()
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if rss < 1<<20 || rss > 1<<40 {
		t.Errorf("peak RSS %d bytes: implausible", rss)
	}
}

// TestGenerateAllocationsPerToken bounds what one more generated token
// costs in allocations through the whole path (scheduler, model, sampler,
// detokenizer, delivery): the difference between a long and a short
// generation. The forward pass allocates nothing (engine/model's
// TestDecodeStepDoesNotAllocate); what remains is the token's text.
func TestGenerateAllocationsPerToken(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.Q8_0),
		Options{Threads: 2, ContextLength: 200, Sequences: 1, NoPrefixCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	gen := func(n int) func() {
		return func() {
			req := Request{Tokens: []int32{1, 2, 3}, MaxTokens: n, IgnoreEOS: true}
			if _, err := m.Generate(context.Background(), req, func(Token) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	gen(150)() // sizes every buffer
	short, long := testing.AllocsPerRun(5, gen(20)), testing.AllocsPerRun(5, gen(150))
	if perToken := (long - short) / 130; perToken > 3 {
		t.Errorf("%.2f allocations per generated token (%v for 20 tokens, %v for 150), want ≤ 3", perToken, short, long)
	}
}

// BenchmarkGenerate measures a 64-token greedy generation through Generate
// on a tiny model, where the per-token overhead outside the forward pass
// shows; allocs/op with -benchmem is per 64 tokens.
func BenchmarkGenerate(b *testing.B) {
	m, err := Load(context.Background(), synthetic(b, "llama", quant.Q8_0),
		Options{Threads: 2, ContextLength: 128, Sequences: 1, NoPrefixCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	req := Request{Tokens: []int32{1, 2, 3}, MaxTokens: 64, IgnoreEOS: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(context.Background(), req, func(Token) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(64*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// TestPrefixCapacityShortPrompt: a prompt under one KV block caches
// nothing, so the capacity in prompts is not defined; such a count (ruvllm
// bench --kv-prompt) is an error, where a negative one panicked making
// the prompt and one of 1 to 15 tokens divided by zero once the cache
// evicted.
func TestPrefixCapacityShortPrompt(t *testing.T) {
	m, err := Load(context.Background(), synthetic(t, "llama", quant.Q8_0),
		Options{Threads: 1, ContextLength: 128, Sequences: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, n := range []int{-1, 0, 1, blockSize - 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if _, err := m.PrefixCapacity(context.Background(), n); err == nil || !strings.Contains(err.Error(), "one KV block") {
				t.Errorf("PrefixCapacity(%d): %v, want an error about one KV block", n, err)
			}
		})
	}
}
