package train

import (
	"context"
	"sync"

	"github.com/ruvllm/ruvllm/engine/gemm"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/mapfault"
)

// Float is the element type of a pass: float32 for training, float64 for
// the gradient checks of the tests.
type Float = gemm.Float

// net runs forward and backward passes over a Base in float type F.
// Weights are read as F: for float32 the Base's dense copies or rows
// dequantized on the fly; for float64, copies made on first use (tests
// run it on tiny models only).
type net[F Float] struct {
	b       *Base
	threads int
	// yield, when set, is called between layers: background training
	// gives way to serving there (Options.Yield).
	yield func(context.Context) error

	mu    sync.Mutex
	conv  map[*matrix][]F  // float64 copies of matrices
	convV map[*float32][]F // float64 copies of vectors, by first element
}

func newNet[F Float](b *Base, threads int, yield func(context.Context) error) *net[F] {
	return &net[F]{b: b, threads: max(threads, 1), yield: yield,
		conv: map[*matrix][]F{}, convV: map[*float32][]F{}}
}

// is32 reports whether F is float32.
func is32[F Float]() bool {
	var z F
	_, ok := any(z).(float32)
	return ok
}

// vec returns v as []F (aliased for float32).
func (n *net[F]) vec(v []float32) []F {
	if v == nil {
		return nil
	}
	if f, ok := any(v).([]F); ok {
		return f
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.convV[&v[0]]; ok {
		return c
	}
	c := make([]F, len(v))
	for i, x := range v {
		c[i] = F(x)
	}
	n.convV[&v[0]] = c
	return c
}

// weight returns rows [r0, r1) of m as a dense []F: a view of the dense
// copy, or the rows dequantized into *scratch.
func (n *net[F]) weight(m *matrix, r0, r1 int, scratch *[]F) []F {
	if is32[F]() {
		if m.dense != nil {
			return any(m.dense[r0*m.cols : r1*m.cols]).([]F)
		}
		need := (r1 - r0) * m.cols
		if cap(*scratch) < need {
			*scratch = make([]F, need)
		}
		buf := (*scratch)[:need]
		// The loader dequantized one row of every matrix: the type is
		// known to work and the data long enough.
		_ = m.dequantize(r0, r1, any(buf).([]float32))
		return buf
	}
	n.mu.Lock()
	c, ok := n.conv[m]
	n.mu.Unlock()
	if !ok {
		tmp := make([]float32, m.rows*m.cols)
		_ = m.dequantize(0, m.rows, tmp)
		c = make([]F, len(tmp))
		for i, x := range tmp {
			c[i] = F(x)
		}
		n.mu.Lock()
		n.conv[m] = c
		n.mu.Unlock()
	}
	return c[r0*m.cols : r1*m.cols]
}

// par runs fn over [0, total) split into at most threads ranges whose
// bounds are multiples of grain (except the end), in parallel.
func (n *net[F]) par(total, grain int, fn func(lo, hi int)) {
	parts := min(n.threads, (total+grain-1)/grain)
	if parts <= 1 {
		fn(0, total)
		return
	}
	units := (total + grain - 1) / grain
	var wg sync.WaitGroup
	var faults mapfault.Group
	lo := 0
	for p := range parts {
		hi := min(total, lo+(units*(p+1)/parts-units*p/parts)*grain)
		if p == parts-1 {
			hi = total
		}
		if hi > lo {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				defer faults.Catch(mapfault.Arm())
				fn(lo, hi)
			}(lo, hi)
		}
		lo = hi
	}
	wg.Wait()
	faults.Raise()
}

// pairF is one LoRA pair in F.
type pairF[F Float] struct {
	rank, in, out int
	a, b          []F
}

// use is one adapter's pair on one projection during a pass.
type use[F Float] struct {
	p     *pairF[F]
	scale F         // user scale × alpha/rank
	grad  *pairF[F] // nil for a frozen adapter
	z     []F       // saved x·Aᵀ (T×rank) of a trainable pair
}

// adapterSet is what a pass applies: per layer and projection, the pairs
// of every applied adapter.
type adapterSet[F Float] struct {
	uses   [][nKinds][]use[F]
	lowest int // lowest layer with a trainable pair (layers when none)
}

// toF returns v as []F (aliased for float32).
func toF[F Float](v []float32) []F {
	if f, ok := any(v).([]F); ok {
		return f
	}
	c := make([]F, len(v))
	for i, x := range v {
		c[i] = F(x)
	}
	return c
}

// pairsOf converts an adapter's pairs to F.
func pairsOf[F Float](a *Adapter) map[string]*pairF[F] {
	out := make(map[string]*pairF[F], len(a.Targets))
	for k, p := range a.Targets {
		out[k] = &pairF[F]{rank: a.Rank, in: p.In, out: p.Out, a: toF[F](p.A), b: toF[F](p.B)}
	}
	return out
}

// newAdapterSet plans a pass: frozen adapters, then the trainable one
// (pairs and grads keyed like its targets; nil for a forward pass).
func newAdapterSet[F Float](layers int, frozen []Applied, train *Adapter, pairs, grads map[string]*pairF[F]) *adapterSet[F] {
	s := &adapterSet[F]{uses: make([][nKinds][]use[F], layers), lowest: layers}
	add := func(a *Adapter, scale float32, ps, gs map[string]*pairF[F]) {
		for k, p := range a.Targets {
			kind := kindIndex(p.Kind)
			if kind < 0 || p.Layer < 0 || p.Layer >= layers {
				continue
			}
			u := use[F]{p: ps[k], scale: F(scale * a.Scale())}
			if gs != nil {
				u.grad = gs[k]
				s.lowest = min(s.lowest, p.Layer)
			}
			s.uses[p.Layer][kind] = append(s.uses[p.Layer][kind], u)
		}
	}
	for _, ap := range frozen {
		if ap.Adapter == nil || ap.Scale == 0 {
			continue
		}
		add(ap.Adapter, ap.Scale, pairsOf[F](ap.Adapter), nil)
	}
	if train != nil {
		add(train, 1, pairs, grads)
	}
	return s
}

func kindIndex(kind string) int {
	for i, k := range lora.Kinds {
		if k == kind {
			return i
		}
	}
	return -1
}
