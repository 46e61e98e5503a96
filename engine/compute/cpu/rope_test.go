package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
)

// TestRoPETablesMatchFresh runs a sequence of RoPE calls on one backend,
// which keeps the angles of earlier calls, and checks each result bit for
// bit against a fresh backend's: the same positions under other
// parameters, other dimensions or other frequency factors, other
// positions, a token tree, and parameter sets alternating as the layers of
// a model with local and global attention do.
func TestRoPETablesMatchFresh(t *testing.T) {
	const heads, headDim = 3, 16
	r := rand.New(rand.NewPCG(7, 8))
	normal := compute.RoPE{Mode: compute.RoPENormal, FreqBase: 10000}
	neox := compute.RoPE{Mode: compute.RoPENeox, FreqBase: 10000}
	local := compute.RoPE{Mode: compute.RoPENeox, FreqBase: 10000, FreqScale: 0.25}
	partial := compute.RoPE{Mode: compute.RoPENeox, FreqBase: 10000, Dims: 8}
	yarn := compute.RoPE{Mode: compute.RoPENeox, FreqBase: 500, FreqScale: 0.25, ExtFactor: 1, AttnFactor: 1.1, BetaFast: 32, BetaSlow: 1, OrigCtx: 64}
	spans := []compute.Span{{N: 3, Pos: 40}, {Row: 3, N: 2, Pos: 7}}
	moved := []compute.Span{{N: 3, Pos: 41}, {Row: 3, N: 2, Pos: 7}}
	tree := []compute.Span{{N: 5, Pos: 40, Tree: []int32{-1, 0, 0, 1, 2}}}

	mk := func(b *Backend, vals []float32) compute.Tensor {
		x := b.New(5, heads*headDim)
		b.Upload(x, vals)
		return x
	}
	factorsA := make([]float32, headDim/2)
	factorsB := make([]float32, headDim/2)
	for i := range factorsA {
		factorsA[i], factorsB[i] = 1+float32(i), 2+float32(i)
	}
	type call struct {
		p       compute.RoPE
		factors []float32
		spans   []compute.Span
	}
	calls := []call{
		{normal, nil, spans}, {normal, nil, spans}, {neox, nil, spans}, {neox, nil, moved},
		{local, nil, moved}, {neox, nil, moved}, {local, nil, moved}, {partial, nil, moved},
		{yarn, nil, moved}, {neox, factorsA, moved}, {neox, factorsB, moved}, {neox, factorsA, moved},
		{neox, nil, tree}, {neox, nil, moved}, {normal, nil, spans},
	}
	b := New(Options{Threads: 2})
	defer b.Close()
	// One factors tensor whose values change between calls, as a freed
	// tensor's memory may come back with other values.
	bf := b.New(1, headDim/2)
	for i, c := range calls {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			vals := randRows(r, 5, heads*headDim)
			got := make([]float32, len(vals))
			want := make([]float32, len(vals))
			for k, be := range []*Backend{b, New(Options{Threads: 2})} {
				p := c.p
				if c.factors != nil {
					f := bf
					if k == 1 {
						f = be.New(1, len(c.factors))
					}
					be.Upload(f, c.factors)
					p.Factors = f
				}
				x := mk(be, vals)
				be.RoPE(x, c.spans, heads, headDim, p)
				be.Download(x, [][]float32{got, want}[k])
				if k == 1 {
					be.Close()
				}
			}
			for e := range got {
				if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
					t.Fatalf("call %d element %d: %v, a fresh backend %v", i, e, got[e], want[e])
				}
			}
		})
	}
}
