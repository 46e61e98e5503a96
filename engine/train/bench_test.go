package train

import (
	"context"
	"fmt"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// BenchmarkStep measures one training step (forward, backward, AdamW)
// on the shared 19M llama for one 72-token example with a 32-token
// answer: the instant loop's unit of work, for a rank-2 adapter on every
// projection and on the top half of the layers.
func BenchmarkStep(b *testing.B) {
	for _, file := range []string{"ruvllm-test-llama-19m-f16.gguf", "ruvllm-test-llama-19m-q4_0.gguf"} {
		f, err := gguf.Open(testpath.Shared(b, "models/"+file))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for _, dense := range []int64{0, -1} {
			base, err := NewBase(f, BaseOptions{DenseBytes: dense})
			if err != nil {
				b.Fatal(err)
			}
			for _, layers := range [][]int{nil, {4, 5, 6, 7}} {
				a, err := NewAdapter(base, AdapterConfig{Rank: 2, Layers: layers})
				if err != nil {
					b.Fatal(err)
				}
				tokens := make([]int32, 72)
				for i := range tokens {
					tokens[i] = int32(100 + 37*i%5000)
				}
				ex := []Example{{Tokens: tokens, Start: 40}}
				tr := NewTrainer(base, Options{})
				opt := NewAdamW(a, 1e-3, 0)
				name := fmt.Sprintf("%s/dense=%v/layers=%d", file, dense == 0, len(a.Targets)/7)
				b.Run(name, func(b *testing.B) {
					cpu0 := cpuTime()
					for b.Loop() {
						if _, err := tr.Step(context.Background(), a, opt, ex, StepConfig{}); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
				})
			}
		}
	}
}

// BenchmarkEvaluate measures a forward pass over two 128-token chunks
// of general text on the shared 19M llama with a rank-4 adapter on every
// projection: the cost of one measurement of sona's general-text guard.
func BenchmarkEvaluate(b *testing.B) {
	f, err := gguf.Open(testpath.Shared(b, "models/ruvllm-test-llama-19m-f16.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	base, err := NewBase(f, BaseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAdapter(base, AdapterConfig{Rank: 4})
	if err != nil {
		b.Fatal(err)
	}
	var ex []Example
	for c := range 2 {
		tokens := make([]int32, 128)
		for i := range tokens {
			tokens[i] = int32(100 + (37*i+11*c)%5000)
		}
		ex = append(ex, Example{Tokens: tokens, Start: 1})
	}
	tr := NewTrainer(base, Options{Threads: 2})
	applied := []Applied{{Adapter: a, Scale: 1}}
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := tr.Evaluate(context.Background(), applied, ex); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}
