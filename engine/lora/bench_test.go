package lora_test

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// BenchmarkDecodeLoRA measures one decode step (forward of one token at
// position 128 plus the logits) of a Q8_0 model with the layer shapes of a
// ~1B llama (dim 2048, 16 heads, 4 kv heads, ff 5632; 2 layers), without
// and with a rank-16 F32 adapter on all four attention matrices; reports
// %overhead, computed from the fastest step of each variant.
// RUVLLM_BENCH_THREADS sets the CPU threads (default 2).
func BenchmarkDecodeLoRA(b *testing.B) {
	o := testmodel.Options{Arch: "llama", Layers: 2, Dim: 2048, Heads: 16, KVHeads: 4, FF: 5632,
		ContextLength: 512, Type: quant.Q8_0, Seed: 1}
	base := baseModel(b, o)
	threads := 2
	if v, err := strconv.Atoi(os.Getenv("RUVLLM_BENCH_THREADS")); err == nil && v > 0 {
		threads = v
	}
	e := newEngineThreads(b, base, threads)
	fa := randomAdapter(b, base, lora.RandomOptions{Rank: 16, Alpha: 32, Seed: 9,
		Kinds: []string{"attn_q", "attn_k", "attn_v", "attn_output"}})
	a, err := lora.LoadGGUF(fa, base, e.b)
	if err != nil {
		b.Fatal(err)
	}
	blocks := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	// Fill positions [0,128) once so decode attends over a real history.
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(i % 200)
	}
	e.m.Forward(&model.Batch{Tokens: prompt, Spans: []compute.Span{{N: 128, Blocks: blocks}}}, e.store)
	none := &model.Batch{Tokens: []int32{42}, Spans: []compute.Span{{N: 1, Pos: 128, Blocks: blocks}}}
	with := &model.Batch{Tokens: none.Tokens, Spans: none.Spans, Adapters: [][]lora.Applied{{{Adapter: a, Scale: 1}}}}
	rows := []int32{0}
	step := func(batch *model.Batch) time.Duration {
		start := time.Now()
		e.m.Logits(e.m.Forward(batch, e.store), rows)
		return time.Since(start)
	}
	// The two variants alternate step by step, so load from other
	// processes hits both alike; the minimum and the median of each are
	// reported, and the overhead from the minima (the least disturbed).
	var tNone, tWith []time.Duration
	for b.Loop() {
		tNone = append(tNone, step(none))
		tWith = append(tWith, step(with))
	}
	minNone, minWith := slices.Min(tNone), slices.Min(tWith)
	slices.Sort(tNone)
	slices.Sort(tWith)
	b.ReportMetric(float64(minNone.Microseconds()), "us-min-none")
	b.ReportMetric(float64(minWith.Microseconds()), "us-min-lora")
	b.ReportMetric(float64(tNone[len(tNone)/2].Microseconds()), "us-med-none")
	b.ReportMetric(float64(tWith[len(tWith)/2].Microseconds()), "us-med-lora")
	b.ReportMetric(100*(float64(minWith)/float64(minNone)-1), "%overhead")
}
