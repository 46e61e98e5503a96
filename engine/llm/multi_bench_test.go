package llm

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// BenchmarkChoicesTTFT measures the time until every choice of a
// 1,000-token prompt has its first token, for n = 1 and n = 4 (issue 22's
// target: n = 4 at most 1.3× n = 1, one prefill). It runs the shared
// llama-19m q8_0 model when ../shared is there, else a synthetic one.
//
//	go test ./engine/llm -run '^$' -bench ChoicesTTFT -benchtime 10x
func BenchmarkChoicesTTFT(b *testing.B) {
	path := testpath.SharedIfPresent(b, "models/ruvllm-test-llama-19m-q8_0.gguf")
	if path == "" {
		path = synthetic(b, "llama", quant.Q8_0)
	}
	m, err := Load(context.Background(), path, Options{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := make([]int32, 1000)
	for _, n := range []int{1, 4} {
		b.Run(map[int]string{1: "n=1", 4: "n=4"}[n], func(b *testing.B) {
			var total time.Duration
			for range b.N {
				for i := range prompt {
					prompt[i] = int32(3 + rng.IntN(1000)) // a new prompt: nothing cached
				}
				start := time.Now()
				var mu sync.Mutex
				first := map[int]bool{}
				var allFirst time.Duration
				_, err := m.GenerateN(context.Background(), Request{Tokens: prompt, MaxTokens: 2, IgnoreEOS: true}, n, func(i int, _ Token) error {
					mu.Lock()
					defer mu.Unlock()
					if !first[i] {
						first[i] = true
						if len(first) == n {
							allFirst = time.Since(start)
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				total += allFirst
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-ttft-all-choices")
		})
	}
}
