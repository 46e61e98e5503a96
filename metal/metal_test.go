//go:build darwin

package metal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// These tests need a Mac with a Metal device; they skip without one. They
// have been compiled (GOOS=darwin go vet) but never run: see doc.go.

func openOrSkip(t *testing.T) *Backend {
	t.Helper()
	b, err := New(Options{Threads: 2})
	if errors.Is(err, ErrNoDevice) {
		t.Skip("no Metal device")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// closeTo reports the first element of got farther than tol·(1+|want|)
// from want.
func closeTo(got, want []float32, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d elements, want %d", len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
			return fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// pair runs the same operation on the Metal and the CPU backend.
type pair struct {
	t   *testing.T
	gpu *Backend
	cpu *cpu.Backend
}

func (p pair) tensors(rows, cols int, data []float32) (compute.Tensor, compute.Tensor) {
	g, c := p.gpu.New(rows, cols), p.cpu.New(rows, cols)
	if data != nil {
		p.gpu.Upload(g, data)
		p.cpu.Upload(c, data)
	}
	return g, c
}

func (p pair) weights(typ quant.Type, rows, cols int, data []float32) (compute.Tensor, compute.Tensor, []float32) {
	p.t.Helper()
	rb, err := typ.RowBytes(cols)
	if err != nil {
		p.t.Fatal(err)
	}
	raw := make([]byte, rb*rows)
	if err := quant.Quantize(typ, raw, data); err != nil {
		p.t.Fatal(err)
	}
	deq := make([]float32, rows*cols)
	if err := quant.Dequantize(typ, raw, deq); err != nil {
		p.t.Fatal(err)
	}
	g, err := p.gpu.Weight(typ, rows, cols, raw)
	if err != nil {
		p.t.Fatal(err)
	}
	c, err := p.cpu.Weight(typ, rows, cols, raw)
	if err != nil {
		p.t.Fatal(err)
	}
	return g, c, deq
}

func (p pair) download(g, c compute.Tensor) ([]float32, []float32) {
	gv, cv := make([]float32, g.Rows()*g.Cols()), make([]float32, c.Rows()*c.Cols())
	p.gpu.Download(g, gv)
	p.cpu.Download(c, cv)
	return gv, cv
}

func newPair(t *testing.T) pair {
	c := cpu.New(cpu.Options{Threads: 2})
	t.Cleanup(c.Close)
	return pair{t: t, gpu: openOrSkip(t), cpu: c}
}

// TestMatMulAndGetRows compares the GPU kernels with a float64 product of
// the dequantized weights and unrounded activations (the CPU backend
// rounds activations to Q8_0 for quantized weights, the kernels do not),
// and the CPU fallback types with the CPU backend exactly.
func TestMatMulAndGetRows(t *testing.T) {
	p := newPair(t)
	r := rand.New(rand.NewPCG(1, 2))
	const n, in, out = 5, 512, 67
	for _, typ := range []quant.Type{quant.F32, quant.F16, quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.Q5_0} {
		x := randVec(r, n*in)
		wg, wc, deq := p.weights(typ, out, in, randVec(r, out*in))
		xg, xc := p.tensors(n, in, x)
		dg, dc := p.tensors(n, out, nil)
		p.gpu.MatMul(dg, xg, wg)
		p.cpu.MatMul(dc, xc, wc)
		got, cpuGot := p.download(dg, dc)
		if _, gpu := kernelSuffix[typ]; !gpu {
			if err := closeTo(got, cpuGot, 0); err != nil {
				t.Errorf("MatMul %s (CPU fallback): %v", typ, err)
			}
		} else {
			want := make([]float32, n*out)
			for i := range n {
				for o := range out {
					var s, mag float64
					for k := range in {
						s += float64(deq[o*in+k]) * float64(x[i*in+k])
						mag += math.Abs(float64(deq[o*in+k]) * float64(x[i*in+k]))
					}
					want[i*out+o] = float32(s)
					if d := math.Abs(float64(got[i*out+o]) - s); d > 1e-5*mag+1e-6 {
						t.Errorf("MatMul %s [%d,%d] = %v, want %v", typ, i, o, got[i*out+o], s)
					}
				}
			}
		}
		ids := []int32{3, 0, 66, 3}
		gg, gc := p.tensors(len(ids), in, nil)
		p.gpu.GetRows(gg, wg, ids)
		p.cpu.GetRows(gc, wc, ids)
		rows, cpuRows := p.download(gg, gc)
		if err := closeTo(rows, cpuRows, 0); err != nil {
			t.Errorf("GetRows %s: %v", typ, err)
		}
	}
}

func TestElementwise(t *testing.T) {
	p := newPair(t)
	r := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 7, 300
	a, b := randVec(r, rows*cols), randVec(r, rows*cols)
	ops := []struct {
		name string
		tol  float64
		run  func(be compute.Backend, dst, x, y, w compute.Tensor)
	}{
		{"Add", 0, func(be compute.Backend, dst, x, y, w compute.Tensor) { be.Add(dst, x, y) }},
		{"AddRow", 0, func(be compute.Backend, dst, x, y, w compute.Tensor) { be.Add(dst, x, y); be.AddRow(dst, w) }},
		{"Scale", 0, func(be compute.Backend, dst, x, y, w compute.Tensor) { be.Add(dst, x, y); be.Scale(dst, 0.3) }},
		{"Softcap", 1e-6, func(be compute.Backend, dst, x, y, w compute.Tensor) { be.Add(dst, x, y); be.Softcap(dst, 1.5) }},
		{"SwiGLU", 1e-6, func(be compute.Backend, dst, x, y, w compute.Tensor) { be.SwiGLU(dst, x, y) }},
		{"GeGLU", 1e-6, func(be compute.Backend, dst, x, y, w compute.Tensor) { be.GeGLU(dst, x, y) }},
		{"RMSNorm", 1e-5, func(be compute.Backend, dst, x, y, w compute.Tensor) { be.RMSNorm(dst, x, w, 1e-5) }},
		{"RMSNorm-aliased", 1e-5, func(be compute.Backend, dst, x, y, w compute.Tensor) {
			be.Add(dst, x, y)
			be.RMSNorm(dst, dst, w, 1e-6)
		}},
	}
	for _, op := range ops {
		xg, xc := p.tensors(rows, cols, a)
		yg, yc := p.tensors(rows, cols, b)
		wg, wc, _ := p.weights(quant.F32, 1, cols, randVec(r, cols))
		dg, dc := p.tensors(rows, cols, nil)
		op.run(p.gpu, dg, xg, yg, wg)
		op.run(p.cpu, dc, xc, yc, wc)
		got, want := p.download(dg, dc)
		if err := closeTo(got, want, op.tol); err != nil {
			t.Errorf("%s: %v", op.name, err)
		}
	}
}

func TestRoPE(t *testing.T) {
	p := newPair(t)
	r := rand.New(rand.NewPCG(5, 6))
	const heads, headDim = 4, 64
	spans := []compute.Span{{Row: 0, N: 3, Pos: 0}, {Row: 3, N: 2, Pos: 1000}}
	for _, rp := range []compute.RoPE{
		{Mode: compute.RoPENormal, FreqBase: 10000},
		{Mode: compute.RoPENeox, FreqBase: 1e6, Dims: 32},
		{Mode: compute.RoPENeox, FreqBase: 10000, FreqScale: 0.25, ExtFactor: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1, OrigCtx: 2048},
	} {
		x := randVec(r, 5*heads*headDim)
		xg, xc := p.tensors(5, heads*headDim, x)
		p.gpu.RoPE(xg, spans, heads, headDim, rp)
		p.cpu.RoPE(xc, spans, heads, headDim, rp)
		got, want := p.download(xg, xc)
		// The table is computed on the host exactly as the CPU does; only
		// the GPU's multiply-adds may contract.
		if err := closeTo(got, want, 1e-6); err != nil {
			t.Errorf("RoPE %+v: %v", rp, err)
		}
	}
}

func TestAttend(t *testing.T) {
	p := newPair(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, kvType := range []quant.Type{quant.F32, quant.F16} {
		for _, a := range []compute.Attention{
			{Layer: 1, Heads: 4, KVHeads: 2, HeadDim: 32, Scale: 1 / float32(math.Sqrt(32))},
			{Layer: 0, Heads: 4, KVHeads: 4, HeadDim: 32, Scale: 0.2, Softcap: 20, Window: 5},
		} {
			cfg := compute.KVConfig{Layers: 2, Blocks: 8, BlockSize: 4, KVHeads: a.KVHeads, HeadDim: a.HeadDim, Type: kvType}
			sg, err := p.gpu.NewKVStore(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := p.cpu.NewKVStore(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// A prefill of two sequences, then one decode step each, so the
			// second call reads keys the first stored.
			steps := [][]compute.Span{
				{{Row: 0, N: 7, Pos: 0, Blocks: []int32{5, 1}}, {Row: 7, N: 3, Pos: 0, Blocks: []int32{2}}},
				{{Row: 0, N: 1, Pos: 7, Blocks: []int32{5, 1}}, {Row: 1, N: 1, Pos: 3, Blocks: []int32{2, 6}}},
			}
			for i, spans := range steps {
				n := 0
				for _, s := range spans {
					n = max(n, s.Row+s.N)
				}
				qg, qc := p.tensors(n, a.Heads*a.HeadDim, randVec(r, n*a.Heads*a.HeadDim))
				kv := a.KVHeads * a.HeadDim
				kg, kc := p.tensors(n, kv, randVec(r, n*kv))
				vg, vc := p.tensors(n, kv, randVec(r, n*kv))
				dg, dc := p.tensors(n, a.Heads*a.HeadDim, nil)
				p.gpu.Attend(dg, qg, kg, vg, sg, spans, a)
				p.cpu.Attend(dc, qc, kc, vc, sc, spans, a)
				got, want := p.download(dg, dc)
				if err := closeTo(got, want, 2e-3); err != nil {
					t.Errorf("Attend %s %+v step %d: %v", kvType, a, i, err)
				}
			}
			bg, bc := make([]byte, sg.BlockBytes()), make([]byte, sc.BlockBytes())
			for blk := range int32(cfg.Blocks) {
				if err := sg.ReadBlock(blk, bg); err != nil {
					t.Fatal(err)
				}
				if err := sc.ReadBlock(blk, bc); err != nil {
					t.Fatal(err)
				}
				if string(bg) != string(bc) {
					t.Errorf("%s KV block %d differs from the CPU backend's", kvType, blk)
				}
			}
		}
	}
}

// TestWholeModels runs synthetic models of every family and several
// weight types on Metal and on the CPU and compares their perplexity.
func TestWholeModels(t *testing.T) {
	openOrSkip(t) // skip early without a device
	text := strings.Repeat("Metal kernels compute the same model as the CPU backend. ", 30)
	for _, arch := range testmodel.Arches() {
		for _, typ := range []quant.Type{quant.F16, quant.Q8_0, quant.Q4_K} {
			path := filepath.Join(t.TempDir(), arch+".gguf")
			o := testmodel.DefaultOptions()
			o.Arch, o.Type, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = arch, typ, 2, 256, 4, 2, 512, 512
			if err := testmodel.Write(context.Background(), o, path); err != nil {
				t.Fatal(err)
			}
			ppl := func(nb func() (compute.Backend, error)) float64 {
				m, err := llm.Load(context.Background(), path, llm.Options{Threads: 2, NewBackend: nb})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				res, err := m.Perplexity(context.Background(), text, 64, nil)
				if err != nil {
					t.Fatal(err)
				}
				return res.Perplexity
			}
			want := ppl(nil)
			got := ppl(func() (compute.Backend, error) { return Open(Options{Threads: 2}) })
			// Quantized weights: the CPU rounds activations to Q8_0, Metal
			// keeps them f32, so allow more for those.
			tol := 1e-3
			if typ != quant.F16 {
				tol = 2e-2
			}
			if math.Abs(got-want) > tol*want || math.IsNaN(got) {
				t.Errorf("%s %s: perplexity on Metal %.5f, CPU %.5f", arch, typ, got, want)
			}
		}
	}
}
