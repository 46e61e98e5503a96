package llm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// BenchOptions selects what Bench measures, in the manner of llama-bench:
// PromptTokens of prompt processing (pp) and GenTokens of generation (tg),
// each repeated Reps times.
type BenchOptions struct {
	PromptTokens int
	GenTokens    int
	Reps         int
}

// BenchFigure is the throughput of one test over its repetitions.
type BenchFigure struct {
	Test    string    `json:"test"` // "pp512", "tg128"
	Tokens  int       `json:"tokens"`
	Mean    float64   `json:"tokens_per_second"`
	Stddev  float64   `json:"stddev"`
	Samples []float64 `json:"samples"`
}

// Bench measures prompt processing and generation speed with random tokens
// and greedy decoding that ignores end-of-generation tokens. A warm-up run
// precedes the measured repetitions.
func (m *Model) Bench(ctx context.Context, o BenchOptions) ([]BenchFigure, error) {
	if o.Reps <= 0 {
		o.Reps = 5
	}
	vocab := m.net.Config().Vocab
	r := rand.New(rand.NewPCG(1, 2))
	randomTokens := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(r.IntN(vocab))
		}
		return t
	}
	var out []BenchFigure
	run := func(test string, n int, req func() Request, measure func(Result) float64) error {
		if n <= 0 {
			return nil
		}
		if n+1 >= m.opts.ContextLength {
			return fmt.Errorf("%s: %d tokens do not fit the context of %d", test, n, m.opts.ContextLength)
		}
		fig := BenchFigure{Test: test, Tokens: n}
		for rep := -1; rep < o.Reps; rep++ { // rep -1 warms up
			res, err := m.Generate(ctx, req(), func(Token) error { return nil })
			if err != nil {
				return fmt.Errorf("%s: %w", test, err)
			}
			if rep >= 0 {
				fig.Samples = append(fig.Samples, measure(res))
			}
		}
		fig.Mean, fig.Stddev = meanStddev(fig.Samples)
		out = append(out, fig)
		return nil
	}
	err := run(fmt.Sprintf("pp%d", o.PromptTokens), o.PromptTokens,
		func() Request { return Request{Tokens: randomTokens(o.PromptTokens), MaxTokens: 1, IgnoreEOS: true} },
		func(res Result) float64 { return float64(res.PromptTokens) / res.Timings.PromptEval.Seconds() })
	if err != nil {
		return nil, err
	}
	err = run(fmt.Sprintf("tg%d", o.GenTokens), o.GenTokens,
		func() Request { return Request{Tokens: randomTokens(1), MaxTokens: o.GenTokens + 1, IgnoreEOS: true} },
		// The first token comes from the prompt pass; Eval covers the rest.
		func(res Result) float64 { return float64(res.CompletionTokens-1) / res.Timings.Eval.Seconds() })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func meanStddev(x []float64) (mean, sd float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)-1))
}
