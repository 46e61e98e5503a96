package lora_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// parse writes w into memory and parses it.
func parse(t testing.TB, w *gguf.Writer) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func baseModel(t testing.TB, o testmodel.Options) *gguf.File {
	t.Helper()
	w, err := testmodel.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, w)
}

func randomAdapter(t testing.TB, base *gguf.File, o lora.RandomOptions) *gguf.File {
	t.Helper()
	w, err := lora.Random(base, o)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, w)
}

func merged(t testing.TB, base *gguf.File, as []lora.Applied) *gguf.File {
	t.Helper()
	w, err := lora.Merge(context.Background(), base, as)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, w)
}

// engine is a model on the CPU backend with a KV store whose blocks are
// handed out to sequences in order.
type engine struct {
	b     *cpu.Backend
	m     model.Model
	store compute.KVStore
	next  int32
}

func newEngine(t testing.TB, f *gguf.File) *engine { return newEngineThreads(t, f, 2) }

func newEngineThreads(t testing.TB, f *gguf.File, threads int) *engine {
	t.Helper()
	b := cpu.New(cpu.Options{Threads: threads})
	t.Cleanup(b.Close)
	m, err := model.Load(f, b)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	store, err := b.NewKVStore(compute.KVConfig{Layers: c.Layers, Blocks: 64, BlockSize: 16, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Type: 0})
	if err != nil {
		t.Fatal(err)
	}
	return &engine{b: b, m: m, store: store}
}

// seq is one sequence of a greedy run.
type seq struct {
	prompt   []int32
	adapters []lora.Applied
	blocks   []int32
	tokens   []int32     // prompt then generated
	fed      int         // tokens stored in the KV cache
	logits   [][]float32 // logits after the prompt and after each generated token
}

// greedy runs the sequences together, one batch per step (the whole
// prompts first, then one token each), for steps generated tokens.
func (e *engine) greedy(t testing.TB, seqs []*seq, steps int) {
	t.Helper()
	vocab := e.m.Config().Vocab
	for _, s := range seqs {
		s.tokens = append([]int32(nil), s.prompt...)
		for range 4 { // 64 positions
			s.blocks = append(s.blocks, e.next)
			e.next++
		}
	}
	for step := 0; step <= steps; step++ {
		batch := &model.Batch{}
		var rows []int32
		anyAdapter := false
		for _, s := range seqs {
			n := len(s.tokens) - s.fed
			batch.Spans = append(batch.Spans, compute.Span{Row: len(batch.Tokens), N: n, Pos: s.fed, Blocks: s.blocks})
			batch.Tokens = append(batch.Tokens, s.tokens[s.fed:]...)
			batch.Adapters = append(batch.Adapters, s.adapters)
			anyAdapter = anyAdapter || s.adapters != nil
			rows = append(rows, int32(len(batch.Tokens)-1))
		}
		if !anyAdapter {
			batch.Adapters = nil
		}
		hidden := e.m.Forward(batch, e.store)
		logits := e.m.Logits(hidden, rows)
		all := make([]float32, len(rows)*vocab)
		e.b.Download(logits, all)
		for i, s := range seqs {
			l := all[i*vocab : (i+1)*vocab]
			s.logits = append(s.logits, l)
			s.fed = len(s.tokens)
			best := 0
			for j, v := range l {
				if v > l[best] {
					best = j
				}
			}
			s.tokens = append(s.tokens, int32(best))
		}
	}
}

// compare checks two runs of one sequence: same greedy tokens, and logits
// equal within rel of the largest magnitude. It returns the largest
// difference from base, to show the adapter did something.
func compare(t *testing.T, what string, got, want *seq) {
	t.Helper()
	if fmt.Sprint(got.tokens) != fmt.Sprint(want.tokens) {
		t.Errorf("%s: greedy tokens %v, merged model gives %v", what, got.tokens, want.tokens)
	}
	for step := range want.logits {
		var diff, mag float64
		for j, v := range want.logits[step] {
			diff = max(diff, math.Abs(float64(got.logits[step][j]-v)))
			mag = max(mag, math.Abs(float64(v)))
		}
		if diff > 1e-4*mag {
			t.Errorf("%s: step %d: logits differ by %g (max |logit| %g)", what, step, diff, mag)
		}
	}
}

func maxDiff(a, b *seq) float64 {
	var d float64
	for s := range a.logits {
		for j, v := range a.logits[s] {
			d = max(d, math.Abs(float64(v-b.logits[s][j])))
		}
	}
	return d
}

// TestRuntimeEqualsMerged is the adapter's correctness oracle: applying
// adapters at run time gives the logits and greedy tokens of the model
// with the adapters merged into its weights — one adapter, two combined
// with scales, and sequences with different adapters (or none) in one
// batch.
func TestRuntimeEqualsMerged(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "gemma2", "phi3"} {
		t.Run(arch, func(t *testing.T) {
			o := testmodel.DefaultOptions()
			o.Arch, o.Seed = arch, 7
			base := baseModel(t, o)
			rt := newEngine(t, base)
			fx := randomAdapter(t, base, lora.RandomOptions{Rank: 8, Alpha: 16, Seed: 1, Name: "x"})
			fy := randomAdapter(t, base, lora.RandomOptions{Rank: 4, Alpha: 4, Seed: 2, Name: "y", Kinds: []string{"attn_q", "attn_v", "ffn_down"}})
			x, err := lora.LoadGGUF(fx, base, rt.b)
			if err != nil {
				t.Fatal(err)
			}
			y, err := lora.LoadGGUF(fy, base, rt.b)
			if err != nil {
				t.Fatal(err)
			}
			one := []lora.Applied{{Adapter: x, Scale: 1}}
			two := []lora.Applied{{Adapter: x, Scale: 0.7}, {Adapter: y, Scale: 1.3}}
			mx := newEngine(t, merged(t, base, one))
			mxy := newEngine(t, merged(t, base, two))
			plain := newEngine(t, base)

			p0 := []int32{1, 17, 42, 99, 3, 250, 7}
			p1 := []int32{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
			p2 := []int32{200, 100}
			const steps = 6

			// Reference runs, each sequence alone.
			refX := &seq{prompt: p0}
			mx.greedy(t, []*seq{refX}, steps)
			refBase := &seq{prompt: p1}
			plain.greedy(t, []*seq{refBase}, steps)
			refXY := &seq{prompt: p2}
			mxy.greedy(t, []*seq{refXY}, steps)

			t.Run("one", func(t *testing.T) {
				s := &seq{prompt: p0, adapters: one}
				rt.greedy(t, []*seq{s}, steps)
				compare(t, "x", s, refX)
				unadapted := &seq{prompt: p0}
				plain.greedy(t, []*seq{unadapted}, steps)
				if d := maxDiff(s, unadapted); d < 1e-2 {
					t.Fatalf("adapter changed logits by only %g", d)
				}
			})
			t.Run("two combined", func(t *testing.T) {
				s := &seq{prompt: p2, adapters: two}
				rt.greedy(t, []*seq{s}, steps)
				compare(t, "0.7x+1.3y", s, refXY)
			})
			t.Run("one batch", func(t *testing.T) {
				a := &seq{prompt: p0, adapters: one}
				b := &seq{prompt: p1}
				c := &seq{prompt: p2, adapters: two}
				rt.greedy(t, []*seq{a, b, c}, steps)
				compare(t, "span 0 (x)", a, refX)
				compare(t, "span 1 (none)", b, refBase)
				compare(t, "span 2 (0.7x+1.3y)", c, refXY)
			})
		})
	}
}
