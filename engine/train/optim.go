package train

import (
	"fmt"
	"math"
)

// AdamW is the Adam optimizer with decoupled weight decay (Loshchilov &
// Hutter) over an adapter's values: its moments are adapters of the same
// shape, so the whole state serialises with the adapter.
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	// M and V are the first and second moment estimates.
	M, V *Adapter
	// Steps is how many updates were applied (for bias correction).
	Steps int
	// Warmup, when positive, ramps the learning rate up linearly over
	// the first Warmup steps (LR·t/Warmup at step t): Adam's first steps
	// move every value by about LR whatever its gradient's size, since
	// the bias-corrected ratio m/√v starts at ±1.
	Warmup int
}

// NewAdamW returns an optimizer for adapters shaped like a, with the
// usual defaults for fields left zero (β1 0.9, β2 0.999, ε 1e-8).
func NewAdamW(a *Adapter, lr, weightDecay float64) *AdamW {
	return &AdamW{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay,
		M: a.ZeroLike(), V: a.ZeroLike()}
}

// Step applies one update to a with gradient g.
func (o *AdamW) Step(a, g *Adapter) error {
	if !a.SameShape(g) || !a.SameShape(o.M) || !a.SameShape(o.V) {
		return fmt.Errorf("optimizer step: adapter, gradient and moments differ in shape")
	}
	o.Steps++
	c1 := 1 - math.Pow(o.Beta1, float64(o.Steps))
	c2 := 1 - math.Pow(o.Beta2, float64(o.Steps))
	lr := o.LR
	if o.Warmup > 0 && o.Steps < o.Warmup {
		lr *= float64(o.Steps) / float64(o.Warmup)
	}
	ps, gs, ms, vs := a.Vectors(), g.Vectors(), o.M.Vectors(), o.V.Vectors()
	for i, p := range ps {
		gi, mi, vi := gs[i], ms[i], vs[i]
		for j := range p {
			gj := float64(gi[j])
			m := o.Beta1*float64(mi[j]) + (1-o.Beta1)*gj
			v := o.Beta2*float64(vi[j]) + (1-o.Beta2)*gj*gj
			mi[j], vi[j] = float32(m), float32(v)
			w := float64(p[j])
			w -= lr * (m/c1/(math.Sqrt(v/c2)+o.Eps) + o.WeightDecay*w)
			p[j] = float32(w)
		}
	}
	return nil
}

// Clone returns a deep copy of the optimizer state.
func (o *AdamW) Clone() *AdamW {
	c := *o
	c.M, c.V = o.M.Clone(), o.V.Clone()
	return &c
}

// Norm is the L2 norm of all of g's values.
func Norm(g *Adapter) float64 {
	var s float64
	for _, v := range g.Vectors() {
		for _, x := range v {
			s += float64(x) * float64(x)
		}
	}
	return math.Sqrt(s)
}

// Clip scales g so that its norm is at most maxNorm and returns the norm
// before clipping; maxNorm ≤ 0 clips nothing.
func Clip(g *Adapter, maxNorm float64) float64 {
	norm := Norm(g)
	if maxNorm > 0 && norm > maxNorm {
		s := float32(maxNorm / norm)
		for _, v := range g.Vectors() {
			for i := range v {
				v[i] *= s
			}
		}
	}
	return norm
}

// Zero sets every value of g to zero.
func Zero(g *Adapter) {
	for _, v := range g.Vectors() {
		clear(v)
	}
}
