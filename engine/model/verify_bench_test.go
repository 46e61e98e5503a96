package model

import (
	"fmt"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// BenchmarkVerifyPass measures a speculation verification pass on the
// shared llama-19m files: Forward of k tokens at position ~250 (a chain
// after the pending token) and the logits of all k rows, the work of a
// scheduler step that verifies k-1 drafted tokens. Compare k>1 with k=1
// (a decode step). Threads: RUVLLM_BENCH_THREADS (default 2).
func BenchmarkVerifyPass(b *testing.B) {
	for _, typ := range []string{"f16", "q8_0", "q4_0"} {
		path := testpath.Shared(b, "models/ruvllm-test-llama-19m-"+typ+".gguf")
		for _, k := range []int{1, 2, 3, 4, 5, 6, 7, 8} {
			b.Run(fmt.Sprintf("%s/k=%d", typ, k), func(b *testing.B) {
				f, err := gguf.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				be := cpu.New(cpu.Options{Threads: benchThreads()})
				defer be.Close()
				m, err := Load(f, be)
				if err != nil {
					b.Fatal(err)
				}
				c := m.Config()
				const bs, ctx = 16, 512
				blocks := ctx / bs
				kv, err := be.NewKVStore(compute.KVConfig{Layers: c.Layers, Blocks: blocks, BlockSize: bs, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Type: quant.F16})
				if err != nil {
					b.Fatal(err)
				}
				table := make([]int32, blocks)
				for i := range table {
					table[i] = int32(i)
				}
				const pos = 250
				toks := make([]int32, pos)
				for i := range toks {
					toks[i] = int32(i*7+1) % int32(c.Vocab)
				}
				m.Forward(&Batch{Tokens: toks, Spans: []compute.Span{{N: pos, Blocks: table}}}, kv)
				// Alternate the k-token pass with a 1-token pass and report
				// the lowest time of each and their ratio: on a shared
				// machine the lowest is the pass's own cost.
				batches := [2]Batch{
					{Tokens: toks[:k], Spans: []compute.Span{{N: k, Pos: pos, Blocks: table}}},
					{Tokens: toks[:1], Spans: []compute.Span{{N: 1, Pos: pos, Blocks: table}}},
				}
				rows := make([]int32, k)
				for i := range rows {
					rows[i] = int32(i)
				}
				best := [2]time.Duration{time.Hour, time.Hour}
				b.ResetTimer()
				for b.Loop() {
					for i := range batches {
						t0 := time.Now()
						h := m.Forward(&batches[i], kv)
						m.Logits(h, rows[:len(batches[i].Tokens)])
						best[i] = min(best[i], time.Since(t0))
					}
				}
				b.ReportMetric(float64(best[0].Microseconds()), "µs-min-k")
				b.ReportMetric(float64(best[1].Microseconds()), "µs-min-1")
				b.ReportMetric(float64(best[0])/float64(best[1]), "ratio")
			})
		}
	}
}
