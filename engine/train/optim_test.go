package train

import (
	"math"
	"testing"
)

// TestAdamWWarmup: Adam's first step moves every value by about LR
// whatever its gradient; with Warmup the t-th of the first steps moves it
// by LR·t/Warmup, and later steps by LR as without it.
func TestAdamWWarmup(t *testing.T) {
	shape := func() *Adapter {
		return &Adapter{Rank: 1, Alpha: 1, Targets: map[string]*Pair{"blk.0.attn_q": {Kind: "attn_q", In: 2, Out: 2, A: make([]float32, 2), B: make([]float32, 2)}}}
	}
	for _, tc := range []struct {
		warmup int
		moves  []float64 // |Δ| of a value per step, in units of LR
	}{
		{0, []float64{1, 1, 1, 1, 1}},
		{4, []float64{0.25, 0.5, 0.75, 1, 1}},
	} {
		a, g := shape(), shape()
		for _, v := range g.Vectors() {
			for i := range v {
				v[i] = 1e-3 * float32(i+1) // tiny gradients: Adam moves them by LR anyway
			}
		}
		const lr = 0.01
		opt := NewAdamW(a, lr, 0)
		opt.Warmup = tc.warmup
		prev := float64(a.Targets["blk.0.attn_q"].A[0])
		for step, want := range tc.moves {
			if err := opt.Step(a, g); err != nil {
				t.Fatal(err)
			}
			cur := float64(a.Targets["blk.0.attn_q"].A[0])
			if got := math.Abs(cur-prev) / lr; math.Abs(got-want) > 1e-3 {
				t.Errorf("warmup %d, step %d: moved %.4f·LR, want %.4f·LR", tc.warmup, step+1, got, want)
			}
			prev = cur
		}
	}
}
