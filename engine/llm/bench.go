package llm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// BenchOptions selects what Bench measures, in the manner of llama-bench:
// PromptTokens of prompt processing (pp) and GenTokens of generation (tg),
// each repeated Reps times.
type BenchOptions struct {
	PromptTokens int
	GenTokens    int
	Reps         int
	// Parallel, when above 1, adds a test of that many generations of
	// GenTokens running at once ("tg128x8"): their aggregate tokens per
	// second, from the first request to the last token, as continuous
	// batching serves concurrent clients. The model needs a KV pool of
	// Parallel sequences.
	Parallel int
	// Depth, when above 0, runs the pp and tg tests after a context of
	// Depth random tokens, as llama-bench -d does ("pp512 @ d4096"): the
	// context is computed once, untimed, and every repetition reads it
	// from the prefix cache, so the timed part is the N new tokens'
	// attention over Depth cached positions. The model needs the prefix
	// cache and a context of Depth + the test's tokens. The cache holds
	// whole KV blocks, so Depth is a multiple of 16 tokens.
	Depth int
	// NoWarmup skips the untimed run before each test's repetitions (as
	// llama-bench --no-warmup): at tens of thousands of tokens it costs as
	// much as a repetition.
	NoWarmup bool
}

// BenchFigure is the throughput of one test over its repetitions.
type BenchFigure struct {
	Test    string    `json:"test"` // "pp512", "tg128"
	Tokens  int       `json:"tokens"`
	Mean    float64   `json:"tokens_per_second"`
	Stddev  float64   `json:"stddev"`
	Samples []float64 `json:"samples"`
}

// BenchReport is what `ruvllm bench` prints for one model: its identity,
// the measured figures, and the memory arithmetic that goes with them.
type BenchReport struct {
	Model      string `json:"model"`
	FileType   string `json:"file_type"`
	FileSize   int64  `json:"size_bytes"`
	Parameters uint64 `json:"parameters"`
	Backend    string `json:"backend"`
	// ISA is the instruction set of the dot-product kernels (quant.Accelerated):
	// "go" when every weight type runs the portable reference.
	ISA string `json:"isa"`
	// Exact is set when the model ran in llama.cpp's arithmetic (--exact).
	Exact   bool `json:"exact,omitempty"`
	Threads int  `json:"threads"`
	// KVBytes is the KV cache the bench allocated (context × layers × K and V).
	KVBytes int64 `json:"kv_bytes"`
	// ContextLength is the context the KV cache was sized for (per
	// sequence), KVBytesPerToken its bytes per position: keys and values
	// of every layer.
	ContextLength   int     `json:"context_length"`
	KVBytesPerToken float64 `json:"kv_bytes_per_token"`
	// WeightBytesPerToken is what one decode step reads of the weights: every
	// matrix but the token embedding, of which only one row is gathered
	// (unless it doubles as the output projection).
	WeightBytesPerToken int64 `json:"weight_bytes_per_token"`
	// PeakRSS is the process's peak resident memory (VmHWM) after the runs,
	// 0 where /proc is not available.
	PeakRSS int64         `json:"peak_rss_bytes"`
	Results []BenchFigure `json:"results"`
}

// WeightBytesPerToken is the number of weight bytes one decode step reads;
// divided by memory bandwidth it gives the fastest possible decode.
func (m *Model) WeightBytesPerToken() int64 {
	var n, embd int64
	tied := true
	for _, t := range m.file.Tensors {
		switch t.Name {
		case "token_embd.weight":
			embd = t.Size
			continue
		case "output.weight":
			tied = false
		}
		n += t.Size
	}
	if tied {
		n += embd
	}
	return n
}

// KVBytes is the size of the model's KV cache.
func (m *Model) KVBytes() int64 {
	return int64(m.kv.BlockBytes()) * int64(m.kv.Config().Blocks)
}

// KVBytesPerToken is what one position of a sequence takes in the KV
// cache: keys and values of every layer.
func (m *Model) KVBytesPerToken() float64 {
	return float64(m.kv.BlockBytes()) / float64(m.kv.Config().BlockSize)
}

// PeakRSS returns the peak resident set size of this process (VmHWM in
// /proc/self/status), in bytes.
func PeakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak rss: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 3 && string(f[0]) == "VmHWM:" && string(f[2]) == "kB" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("peak rss: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("peak rss: no VmHWM in /proc/self/status")
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
	var depth []int32 // the context every test reads first (Depth)
	suffix := ""
	if o.Depth > 0 {
		if m.cache == nil {
			return nil, fmt.Errorf("bench at depth %d: the prefix cache is off", o.Depth)
		}
		// The prefix cache holds whole blocks: the rest of the depth was
		// computed again in every repetition and timed as prompt tokens.
		if o.Depth%blockSize != 0 {
			return nil, fmt.Errorf("bench at depth %d: the context comes from the prefix cache in whole KV blocks of %d tokens; want a multiple of %d", o.Depth, blockSize, blockSize)
		}
		if o.Depth+max(o.PromptTokens, o.GenTokens)+1 >= m.opts.ContextLength {
			return nil, fmt.Errorf("bench at depth %d: %d more tokens do not fit the context of %d", o.Depth, max(o.PromptTokens, o.GenTokens), m.opts.ContextLength)
		}
		depth = randomTokens(o.Depth)
		if _, err := m.Generate(ctx, Request{Tokens: depth, MaxTokens: 1, IgnoreEOS: true}, func(Token) error { return nil }); err != nil {
			return nil, fmt.Errorf("bench: filling the context of depth %d: %w", o.Depth, err)
		}
		suffix = fmt.Sprintf(" @ d%d", o.Depth)
	}
	// atDepth is a test's prompt: the depth context, then n new tokens.
	atDepth := func(n int) []int32 { return append(slices.Clip(depth), randomTokens(n)...) }
	run := func(test string, n int, req func() Request, measure func(Result) float64) error {
		if n <= 0 {
			return nil
		}
		test += suffix
		if o.Depth+n+1 >= m.opts.ContextLength {
			return fmt.Errorf("%s: %d tokens do not fit the context of %d", test, o.Depth+n, m.opts.ContextLength)
		}
		fig := BenchFigure{Test: test, Tokens: n}
		first := -1 // rep -1 warms up
		if o.NoWarmup {
			first = 0
		}
		for rep := first; rep < o.Reps; rep++ {
			res, err := m.Generate(ctx, req(), func(Token) error { return nil })
			if err != nil {
				return fmt.Errorf("%s: %w", test, err)
			}
			if res.CachedTokens < o.Depth {
				return fmt.Errorf("%s: only %d of the %d context tokens came from the prefix cache", test, res.CachedTokens, o.Depth)
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
		func() Request { return Request{Tokens: atDepth(o.PromptTokens), MaxTokens: 1, IgnoreEOS: true} },
		func(res Result) float64 {
			return float64(res.PromptTokens-res.CachedTokens) / res.Timings.PromptEval.Seconds()
		})
	if err != nil {
		return nil, err
	}
	err = run(fmt.Sprintf("tg%d", o.GenTokens), o.GenTokens,
		func() Request { return Request{Tokens: atDepth(1), MaxTokens: o.GenTokens + 1, IgnoreEOS: true} },
		// The first token comes from the prompt pass; Eval covers the rest.
		func(res Result) float64 { return float64(res.CompletionTokens-1) / res.Timings.Eval.Seconds() })
	if err != nil {
		return nil, err
	}
	if o.Parallel > 1 && o.GenTokens > 0 && o.Depth == 0 {
		fig, err := m.benchParallel(ctx, o, randomTokens)
		if err != nil {
			return nil, err
		}
		out = append(out, fig)
	}
	return out, nil
}

// benchParallel measures o.Parallel concurrent generations of o.GenTokens
// tokens each: total generated tokens over the wall time from submitting
// the first to receiving the last token.
func (m *Model) benchParallel(ctx context.Context, o BenchOptions, randomTokens func(int) []int32) (BenchFigure, error) {
	fig := BenchFigure{Test: fmt.Sprintf("tg%dx%d", o.GenTokens, o.Parallel), Tokens: o.GenTokens * o.Parallel}
	for rep := -1; rep < o.Reps; rep++ { // rep -1 warms up
		reqs := make([]Request, o.Parallel)
		for i := range reqs {
			reqs[i] = Request{Tokens: randomTokens(1), MaxTokens: o.GenTokens, IgnoreEOS: true}
		}
		g, gctx := errgroup.WithContext(ctx)
		var generated atomic.Int64
		start := time.Now()
		for _, req := range reqs {
			g.Go(func() error {
				res, err := m.Generate(gctx, req, func(Token) error { return nil })
				generated.Add(int64(res.CompletionTokens))
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return fig, fmt.Errorf("%s: %w", fig.Test, err)
		}
		if rep >= 0 {
			fig.Samples = append(fig.Samples, float64(generated.Load())/time.Since(start).Seconds())
		}
	}
	fig.Mean, fig.Stddev = meanStddev(fig.Samples)
	return fig, nil
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
