package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// randRows returns rows×cols values, normally distributed.
func randRows(r *rand.Rand, rows, cols int) []float32 {
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// weight encodes vals as a rows×cols weight of type t.
func weight(t *testing.T, b *Backend, typ quant.Type, rows, cols int, vals []float32) compute.Tensor {
	t.Helper()
	rb, err := typ.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, rows*rb)
	for i := 0; i < rows; i++ {
		if err := quant.Quantize(typ, raw[i*rb:(i+1)*rb], vals[i*cols:(i+1)*cols]); err != nil {
			t.Fatal(err)
		}
	}
	w, err := b.Weight(typ, rows, cols, raw)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestMatMulTiledBitExact checks that every element of the tiled,
// multi-threaded MatMul equals one call of the reference dot kernel on the
// same rows, bit for bit, for token counts around the multi-row group size,
// output sizes that leave partial tiles, and several thread counts.
func TestMatMulTiledBitExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, tc := range []struct {
		typ     quant.Type
		in, out int
	}{
		{quant.F32, 64, 37},
		{quant.F16, 96, 300},
		{quant.Q8_0, 256, 1000},
		{quant.Q4_0, 512, 129},
		{quant.Q4_K, 512, 300},
		{quant.Q6_K, 256, 67},
	} {
		w := randRows(r, tc.out, tc.in)
		for _, n := range []int{1, 2, 3, 4, 5, 8, 13, 64} {
			x := randRows(r, n, tc.in)
			want := refMatMul(t, tc.typ, w, x, tc.out, tc.in)
			for _, threads := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%dx%d/n%d/t%d", tc.typ, tc.out, tc.in, n, threads), func(t *testing.T) {
					b := New(Options{Threads: threads})
					defer b.Close()
					wt := weight(t, b, tc.typ, tc.out, tc.in, w)
					xt, dst := b.New(n, tc.in), b.New(n, tc.out)
					b.Upload(xt, x)
					b.MatMul(dst, xt, wt)
					got := F32(dst)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("dst[%d][%d] = %g, want %g", i/tc.out, i%tc.out, got[i], want[i])
						}
					}
				})
			}
		}
	}
}

// refMatMul is MatMul written the obvious way: quantize each activation
// row, one dot per output element.
func refMatMul(t *testing.T, typ quant.Type, w, x []float32, out, in int) []float32 {
	t.Helper()
	rb, _ := typ.RowBytes(in)
	wraw := make([]byte, out*rb)
	for o := 0; o < out; o++ {
		if err := quant.Quantize(typ, wraw[o*rb:(o+1)*rb], w[o*in:(o+1)*in]); err != nil {
			t.Fatal(err)
		}
	}
	vt := quant.VecDotType(typ)
	ab, _ := vt.RowBytes(in)
	quantize, err := quant.QuantizeRowFor(vt)
	if err != nil {
		t.Fatal(err)
	}
	n := len(x) / in
	res := make([]float32, n*out)
	a := make([]byte, ab)
	for r := 0; r < n; r++ {
		quantize(a, x[r*in:(r+1)*in])
		for o := 0; o < out; o++ {
			res[r*out+o] = quant.VecDot(typ, in, wraw[o*rb:(o+1)*rb], a)
		}
	}
	return res
}

// TestElementwise checks the hand-tuned f32 loops against their plain
// definitions, on sizes that are split across workers and ones that are
// not.
func TestElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{7, 64, 3 * elementGrain} {
		b := New(Options{Threads: 3})
		x, y := randRows(r, 1, n), randRows(r, 1, n)
		xt, yt, dt := b.New(1, n), b.New(1, n), b.New(1, n)
		b.Upload(xt, x)
		b.Upload(yt, y)
		check := func(op string, want func(i int) float32) {
			t.Helper()
			got := F32(dt)
			for i := range got {
				if w := want(i); math.Float32bits(got[i]) != math.Float32bits(w) {
					t.Fatalf("%s n=%d: [%d] = %g, want %g", op, n, i, got[i], w)
				}
			}
		}
		b.Add(dt, xt, yt)
		check("Add", func(i int) float32 { return x[i] + y[i] })
		b.Scale(dt, 0.37)
		check("Scale", func(i int) float32 { return (x[i] + y[i]) * 0.37 })
		b.SwiGLU(dt, xt, yt)
		// llama.cpp's vector exponential: quant.SwiGLU's row, within a
		// few ulps of silu computed with math.Exp.
		swiglu := make([]float32, n)
		quant.SwiGLU(swiglu, x, y)
		check("SwiGLU", func(i int) float32 { return swiglu[i] })
		for i, got := range F32(dt) {
			g := float64(x[i])
			if want := g / (1 + math.Exp(-g)) * float64(y[i]); math.Abs(float64(got)-want) > 1e-6*math.Abs(want)+1e-30 {
				t.Fatalf("SwiGLU n=%d: [%d] = %g, silu·u = %g", n, i, got, want)
			}
		}
		b.GeGLU(dt, xt, yt)
		check("GeGLU", func(i int) float32 {
			g := float64(x[i])
			return float32(0.5*g*(1+math.Tanh(0.7978845608028654*(g+0.044715*g*g*g)))) * y[i]
		})
		b.RMSNorm(dt, xt, yt, 1e-5)
		var sum float64
		for _, v := range x {
			sum += float64(v * v)
		}
		scale := 1 / float32(math.Sqrt(float64(float32(sum/float64(n))+1e-5)))
		check("RMSNorm", func(i int) float32 { return x[i] * scale * y[i] })
		b.Close()
	}
}

// TestDecodeOpsDoNotAllocate checks that once its scratch memory has grown,
// each operation of a decode step allocates nothing.
func TestDecodeOpsDoNotAllocate(t *testing.T) {
	b := New(Options{Threads: 2})
	defer b.Close()
	r := rand.New(rand.NewPCG(1, 2))
	const dim, heads, kvHeads, hd = 128, 4, 2, 32
	wq := weight(t, b, quant.Q8_0, dim, dim, randRows(r, dim, dim))
	norm := weight(t, b, quant.F32, 1, dim, randRows(r, 1, dim))
	x, h, q := b.New(1, dim), b.New(1, dim), b.New(1, dim)
	k, v := b.New(1, kvHeads*hd), b.New(1, kvHeads*hd)
	b.Upload(x, randRows(r, 1, dim))
	b.Upload(k, randRows(r, 1, kvHeads*hd))
	b.Upload(v, randRows(r, 1, kvHeads*hd))
	kv, err := b.NewKVStore(compute.KVConfig{Layers: 1, Blocks: 4, BlockSize: 16, KVHeads: kvHeads, HeadDim: hd, Type: quant.F16})
	if err != nil {
		t.Fatal(err)
	}
	spans := []compute.Span{{N: 1, Pos: 5, Blocks: []int32{0}}}
	rope := compute.RoPE{Mode: compute.RoPENeox, FreqBase: 10000}
	// RoPE at a new position each call (three positions against a table of
	// two), with frequency factors: the angle table is refilled in place.
	factors := weight(t, b, quant.F32, 1, hd/2, randRows(r, 1, hd/2))
	scaled := compute.RoPE{Mode: compute.RoPENormal, FreqBase: 10000, Factors: factors}
	moving := [3][]compute.Span{{{N: 1, Pos: 6, Blocks: []int32{0}}}, {{N: 1, Pos: 7, Blocks: []int32{0}}}, {{N: 1, Pos: 8, Blocks: []int32{0}}}}
	step := 0
	att := compute.Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: 0.17}
	for name, op := range map[string]func(){
		"RMSNorm": func() { b.RMSNorm(h, x, norm, 1e-5) },
		"MatMul":  func() { b.MatMul(q, h, wq) },
		"RoPE":    func() { b.RoPE(q, spans, heads, hd, rope) },
		"RoPE, new positions, factors": func() {
			step++
			b.RoPE(q, moving[step%3], heads, hd, scaled)
		},
		"Attend": func() { b.Attend(h, q, k, v, kv, spans, att) },
		"Add":    func() { b.Add(x, x, h) },
		"SwiGLU": func() { b.SwiGLU(h, x, q) },
		"AddRow": func() { b.AddRow(h, norm) },
	} {
		op() // grow scratch
		if n := testing.AllocsPerRun(20, op); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}
