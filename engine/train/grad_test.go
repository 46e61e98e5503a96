package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// tinyBase builds a random model of arch with weights of type typ.
func tinyBase(t testing.TB, arch string, typ quant.Type) *Base {
	t.Helper()
	o := testmodel.Options{Arch: arch, Layers: 2, Dim: 32, Heads: 4, KVHeads: 2, FF: 64, ContextLength: 64, Type: typ, Seed: 7}
	if typ.BlockSize() > 1 {
		o.Dim, o.FF = 64, 128 // whole quantization blocks
	}
	w, err := testmodel.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBase(f, BaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// randomAdapter is an adapter whose B is random too, so that every value
// has a gradient.
func randomAdapter(t testing.TB, b *Base, rank int, seed uint64, layers []int) *Adapter {
	t.Helper()
	a, err := NewAdapter(b, AdapterConfig{Rank: rank, Alpha: 2 * float32(rank), Seed: seed, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	for _, p := range a.Targets {
		for i := range p.B {
			p.B[i] = float32(rng.NormFloat64() * 0.3)
		}
	}
	return a
}

// gradExamples are a likelihood, an unlikelihood and an avoid term, of
// different lengths, so one batch packs spans of unequal size.
func gradExamples(vocab int) []Example {
	rng := rand.New(rand.NewPCG(5, 6))
	tok := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(rng.IntN(vocab))
		}
		return out
	}
	return []Example{
		{Tokens: tok(9), Start: 4},
		{Tokens: tok(6), Start: 2, Weight: -0.5},
		{Tokens: tok(7), Start: 5, Weight: 2, Avoid: []Avoid{{Pos: 5, Token: 3, Weight: 0.7}}},
	}
}

// withTeacher appends to gradExamples a distillation example whose
// teacher is the base under another random adapter (so the divergence
// and its gradient are not zero).
func withTeacher(t testing.TB, b *Base) []Example {
	ex, _ := teacherExamples(t, b)
	return ex
}

// teacherExamples is withTeacher, also returning the teacher's adapter
// (randomAdapter fills B in map order: a second call with the same seed
// gives another adapter).
func teacherExamples(t testing.TB, b *Base) ([]Example, []Applied) {
	t.Helper()
	ex := gradExamples(b.cfg.Vocab)
	rng := rand.New(rand.NewPCG(8, 9))
	tokens := make([]int32, 8)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(b.cfg.Vocab))
	}
	e := Example{Tokens: tokens, Start: 3, Weight: 1.5}
	teacher := []Applied{{Adapter: randomAdapter(t, b, 2, 31, nil), Scale: 1}}
	th, err := NewTrainer(b, Options{Threads: 1}).Teach(context.Background(), teacher, []Example{e})
	if err != nil {
		t.Fatal(err)
	}
	e.Teacher = th[0]
	return append(ex, e), teacher
}

// TestGradientsFiniteDifferences checks the analytic gradient of every
// adapter value against central differences of the float64 objective,
// for llama and qwen2 (biases, neox rotation) over F32 and Q8_0 weights,
// with a frozen adapter beneath the trained one, on every kind of term
// (likelihood, unlikelihood, avoid, distillation).
func TestGradientsFiniteDifferences(t *testing.T) {
	for _, tc := range []struct {
		arch   string
		typ    quant.Type
		layers []int
	}{
		{"llama", quant.F32, nil},
		{"qwen2", quant.F32, nil},
		{"llama", quant.Q8_0, nil},
		{"qwen2", quant.F32, []int{1}}, // backward stops at layer 1
	} {
		t.Run(fmt.Sprintf("%s/%s/%v", tc.arch, tc.typ, tc.layers), func(t *testing.T) {
			b := tinyBase(t, tc.arch, tc.typ)
			a := randomAdapter(t, b, 2, 11, tc.layers)
			frozen := []Applied{{Adapter: randomAdapter(t, b, 3, 12, nil), Scale: 0.5}}
			ex := withTeacher(t, b)
			n := newNet[float64](b, 2, nil)
			pairs := pairsOf[float64](a)
			grads := pairsOf[float64](a.ZeroLike())
			ctx := context.Background()
			if _, err := run(ctx, n, frozen, a, pairs, grads, ex, 64); err != nil {
				t.Fatal(err)
			}
			objective := func() float64 {
				l, err := run(ctx, n, frozen, a, pairs, nil, ex, 64)
				if err != nil {
					t.Fatal(err)
				}
				return l.Objective
			}
			// Every 13th value (co-prime with the matrices' widths, so
			// rows and columns of every matrix are sampled) keeps the
			// test fast.
			const h, stride = 1e-5, 13
			checked := 0
			var worst float64
			for _, name := range a.Names() {
				p, g := pairs[name], grads[name]
				for _, m := range []struct {
					v, g []float64
				}{{p.a, g.a}, {p.b, g.b}} {
					for i := checked % stride; i < len(m.v); i += stride {
						old := m.v[i]
						m.v[i] = old + h
						up := objective()
						m.v[i] = old - h
						down := objective()
						m.v[i] = old
						fd := (up - down) / (2 * h)
						diff := math.Abs(fd - m.g[i])
						scale := math.Max(math.Abs(fd), 1e-4)
						worst = math.Max(worst, diff/scale)
						if diff > 1e-6*scale+1e-9 {
							t.Fatalf("%s value %d: analytic %.9g, finite differences %.9g", name, i, m.g[i], fd)
						}
						checked++
					}
				}
			}
			t.Logf("%d values checked, worst relative difference %.2g", checked, worst)
		})
	}
}

// TestPackingInvariance: packing examples into one batch or running them
// one batch each gives the same loss and gradients (attention never
// crosses spans, positions restart per example).
func TestPackingInvariance(t *testing.T) {
	b := tinyBase(t, "qwen2", quant.F32)
	a := randomAdapter(t, b, 2, 3, nil)
	ex := withTeacher(t, b)
	n := newNet[float64](b, 2, nil)
	var losses [2]float64
	var gs [2]map[string]*pairF[float64]
	for i, maxTokens := range []int{64, 1} {
		gs[i] = pairsOf[float64](a.ZeroLike())
		l, err := run(context.Background(), n, nil, a, pairsOf[float64](a), gs[i], ex, maxTokens)
		if err != nil {
			t.Fatal(err)
		}
		losses[i] = l.Objective
	}
	if math.Abs(losses[0]-losses[1]) > 1e-12 {
		t.Fatalf("packed loss %v, unpacked %v", losses[0], losses[1])
	}
	for name, g := range gs[0] {
		for i, v := range g.a {
			if d := math.Abs(v - gs[1][name].a[i]); d > 1e-12 {
				t.Fatalf("%s A[%d]: packed %v, unpacked %v", name, i, v, gs[1][name].a[i])
			}
		}
	}
}

// TestFloat32MatchesFloat64: the float32 trainer's gradients (the
// assembly kernels) agree with the float64 ones to float32 precision.
func TestFloat32MatchesFloat64(t *testing.T) {
	b := tinyBase(t, "llama", quant.F16)
	a := randomAdapter(t, b, 4, 21, nil)
	ex := withTeacher(t, b)
	g64 := pairsOf[float64](a.ZeroLike())
	l64, err := run(context.Background(), newNet[float64](b, 1, nil), nil, a, pairsOf[float64](a), g64, ex, 512)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrainer(b, Options{Threads: 2})
	g32 := a.ZeroLike()
	l32, err := tr.Gradients(context.Background(), a, nil, ex, g32)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(l32.Objective - l64.Objective); d > 1e-5*math.Abs(l64.Objective) {
		t.Fatalf("objective float32 %v, float64 %v", l32.Objective, l64.Objective)
	}
	for name, p := range g32.Targets {
		q := g64[name]
		for _, m := range []struct {
			f32 []float32
			f64 []float64
		}{{p.A, q.a}, {p.B, q.b}} {
			var num, den float64
			for i, v := range m.f32 {
				d := float64(v) - m.f64[i]
				num += d * d
				den += m.f64[i] * m.f64[i]
			}
			if rel := math.Sqrt(num / math.Max(den, 1e-30)); rel > 1e-4 {
				t.Fatalf("%s: float32 gradient differs from float64 by %.2g relative", name, rel)
			}
		}
	}
}

// TestYieldAndCancel: a pass calls Yield before every layer and weight
// product, and stops with Yield's first error (calling it no more) or the
// context's.
func TestYieldAndCancel(t *testing.T) {
	b := tinyBase(t, "llama", quant.F32)
	a := randomAdapter(t, b, 1, 1, nil)
	calls := 0
	stop := errors.New("serving needs the machine")
	tr := NewTrainer(b, Options{Threads: 1, Yield: func(ctx context.Context) error {
		calls++
		if calls > 3 {
			return stop
		}
		return nil
	}})
	_, err := tr.Gradients(context.Background(), a, nil, gradExamples(b.cfg.Vocab), a.ZeroLike())
	if !errors.Is(err, stop) || calls != 4 {
		t.Fatalf("err %v after %d yields, want the yield's error and no yield after the 4th", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewTrainer(b, Options{}).Evaluate(ctx, nil, gradExamples(b.cfg.Vocab)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled evaluate: %v", err)
	}
}

// TestStepLearns: a few AdamW steps on one example lower its loss, and a
// fresh adapter (B = 0) leaves the base's loss exactly as it was.
func TestStepLearns(t *testing.T) {
	b := tinyBase(t, "llama", quant.F32)
	a, err := NewAdapter(b, AdapterConfig{Rank: 2})
	if err != nil {
		t.Fatal(err)
	}
	ex := gradExamples(b.cfg.Vocab)[:1]
	tr := NewTrainer(b, Options{Threads: 1})
	ctx := context.Background()
	base, err := tr.Evaluate(ctx, nil, ex)
	if err != nil {
		t.Fatal(err)
	}
	same, err := tr.Evaluate(ctx, []Applied{{Adapter: a, Scale: 1}}, ex)
	if err != nil {
		t.Fatal(err)
	}
	if same.Objective != base.Objective {
		t.Fatalf("fresh adapter changed the loss: %v -> %v", base.Objective, same.Objective)
	}
	opt := NewAdamW(a, 1e-2, 0)
	var last StepResult
	for range 20 {
		if last, err = tr.Step(ctx, a, opt, ex, StepConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	after, err := tr.Evaluate(ctx, []Applied{{Adapter: a, Scale: 1}}, ex)
	if err != nil {
		t.Fatal(err)
	}
	if !(after.NLL < 0.5*base.NLL) {
		t.Fatalf("NLL %v -> %v after 20 steps (last step %+v)", base.NLL, after.NLL, last)
	}
}

func TestBadExamples(t *testing.T) {
	b := tinyBase(t, "llama", quant.F32)
	tr := NewTrainer(b, Options{})
	th, err := tr.Teach(context.Background(), nil, []Example{{Tokens: []int32{1, 2}, Start: 1}})
	if err != nil {
		t.Fatal(err)
	}
	teacher := th[0]
	other := tinyBase(t, "qwen2", quant.F32)
	if _, err := NewTrainer(other, Options{}).Evaluate(context.Background(), nil,
		[]Example{{Tokens: []int32{1, 2}, Start: 1, Teacher: teacher}}); err == nil {
		t.Error("a teacher of another base model accepted")
	}
	for _, e := range []Example{
		{Tokens: []int32{1}, Start: 1},
		{Tokens: []int32{1, 2}, Start: 0},
		{Tokens: []int32{1, 2}, Start: 2},
		{Tokens: []int32{1, int32(b.cfg.Vocab)}, Start: 1},
		{Tokens: []int32{1, -1}, Start: 1},
		{Tokens: make([]int32, b.cfg.ContextLength+1), Start: 1},
		{Tokens: []int32{1, 2}, Start: 1, Weight: float32(math.NaN())},
		{Tokens: []int32{1, 2}, Start: 1, Avoid: []Avoid{{Pos: 2, Token: 1}}},
		{Tokens: []int32{1, 2}, Start: 1, Avoid: []Avoid{{Pos: 1, Token: 1, Weight: -1}}},
		{Tokens: []int32{1, 2, 3}, Start: 1, Teacher: teacher},          // two positions, a teacher of one
		{Tokens: []int32{1, 2}, Start: 1, Weight: -1, Teacher: teacher}, // distillation is never negative
	} {
		if _, err := tr.Evaluate(context.Background(), nil, []Example{e}); err == nil {
			t.Errorf("example %+v accepted", e)
		}
	}
}

// TestDistillation: the distillation term is zero with a zero gradient
// when the trained model is its teacher, positive otherwise, equals the
// KL divergence computed directly from the two models' distributions,
// and steps towards the teacher lower it.
func TestDistillation(t *testing.T) {
	b := tinyBase(t, "llama", quant.F32)
	ctx := context.Background()
	tr := NewTrainer(b, Options{Threads: 1})
	all, teacherAdapter := teacherExamples(t, b)
	e := all[3]
	e.Weight = 1
	th, err := tr.Teach(ctx, nil, []Example{e})
	if err != nil {
		t.Fatal(err)
	}
	self := e
	self.Teacher = th[0]
	fresh, err := NewAdapter(b, AdapterConfig{Rank: 2, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	g := fresh.ZeroLike()
	l, err := tr.Gradients(ctx, fresh, nil, []Example{self}, g)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l.Objective) > 1e-6 || Norm(g) > 1e-6 {
		t.Fatalf("the base distilled towards itself: objective %g, gradient norm %g", l.Objective, Norm(g))
	}
	// KL from the teacher (the base under another adapter) to the base,
	// directly from both models' distributions in float64.
	n := newNet[float64](b, 1, nil)
	probs := func(as []Applied) [][]float64 {
		bt := makeBatch([]Example{{Tokens: e.Tokens, Start: e.Start}}, []int{0}, 1)
		p, err := n.forward(ctx, bt, newAdapterSet[float64](len(b.layers), as, nil, nil, nil), false)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]float64
		D, V := b.cfg.Dim, b.cfg.Vocab
		W := n.weight(b.output, 0, V, &p.scr)
		for row := e.Start - 1; row < len(e.Tokens)-1; row++ {
			l := make([]float64, V)
			var m float64 = math.Inf(-1)
			for v := range V {
				for d := range D {
					l[v] += p.hN[row*D+d] * W[v*D+d]
				}
				m = math.Max(m, l[v])
			}
			var s float64
			for v := range l {
				l[v] = math.Exp(l[v] - m)
				s += l[v]
			}
			for v := range l {
				l[v] /= s
			}
			out = append(out, l)
		}
		return out
	}
	qs, ps := probs(teacherAdapter), probs(nil)
	var kl float64
	for i, q := range qs {
		for v, x := range q {
			kl += x * math.Log(x/ps[i][v])
		}
	}
	kl /= float64(len(qs))
	got, err := tr.Evaluate(ctx, nil, []Example{e})
	if err != nil {
		t.Fatal(err)
	}
	if !(kl > 1e-3) || math.Abs(got.Objective-kl) > 1e-4*kl {
		t.Fatalf("distillation objective %.9g, KL from the distributions %.9g", got.Objective, kl)
	}
	if got.NLL != 0 || got.Examples[0].Tokens != 0 {
		t.Fatalf("a distillation example counted in the NLL: %+v", got)
	}
	opt := NewAdamW(fresh, 1e-2, 0)
	for range 10 {
		if _, err := tr.Step(ctx, fresh, opt, []Example{e}, StepConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	after, err := tr.Evaluate(ctx, []Applied{{Adapter: fresh, Scale: 1}}, []Example{e})
	if err != nil {
		t.Fatal(err)
	}
	if !(after.Objective < 0.7*got.Objective) {
		t.Fatalf("steps towards the teacher: KL %g -> %g", got.Objective, after.Objective)
	}
}
