package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestMatMulWeightQ4_0InterleavedOrder checks that a Q4_0 weight made by
// MatMulWeight sums in llama.cpp's repacked order, bit for bit, whether
// the backend repacked it (rows a multiple of 16, where this CPU has the
// Q4_0x16 kernel), runs the interleaved tile on the GGUF layout (a
// multiple of 8) or the vector order (other row counts), for token counts
// around the kernel's eight rows and several thread counts, and for rows
// long enough that the product is split over ranges of blocks.
func TestMatMulWeightQ4_0InterleavedOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	for _, tc := range []struct {
		in, out    int
		repackable bool
	}{
		{256, 16, true},
		{512, 400, true},
		{4864, 32, true}, // from 2 tokens on, split over ranges of blocks (chunkActBytes)
		{96, 40, false},  // a multiple of 8, not of 16
		{64, 37, false},
	} {
		w := randRows(r, tc.out, tc.in)
		rb, _ := quant.Q4_0.RowBytes(tc.in)
		raw := make([]byte, tc.out*rb)
		for o := range tc.out {
			if err := quant.Quantize(quant.Q4_0, raw[o*rb:(o+1)*rb], w[o*tc.in:(o+1)*tc.in]); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []int{1, 2, 3, 4, 5, 8, 13, 64} {
			x := randRows(r, n, tc.in)
			for _, threads := range []int{1, 3} {
				t.Run(fmt.Sprintf("%dx%d/n%d/t%d", tc.out, tc.in, n, threads), func(t *testing.T) {
					b := New(Options{Threads: threads, Exact: true})
					defer b.Close()
					wt, err := b.MatMulWeight(quant.Q4_0, tc.out, tc.in, raw)
					if err != nil {
						t.Fatal(err)
					}
					repacked := wt.(compute.Repacked).Repacked()
					if want := tc.repackable && quant.PackedFor(quant.Q4_0) != nil; repacked != want {
						t.Fatalf("Repacked() = %v, want %v", repacked, want)
					}
					xt, dst := b.New(n, tc.in), b.New(n, tc.out)
					b.Upload(xt, x)
					b.MatMul(dst, xt, wt)
					got := F32(dst)
					dot := quant.DotQ4_0Interleaved
					if tc.out%8 != 0 || (!repacked && quant.InterleavedTileFor(quant.Q4_0) == nil) {
						dot = func(n int, w, a []byte) float32 { return quant.VecDot(quant.Q4_0, n, w, a) }
					}
					ab, _ := quant.Q8_0.RowBytes(tc.in)
					a := make([]byte, ab)
					quantize, _ := quant.QuantizeRowFor(quant.Q8_0)
					for i := range n {
						quantize(a, x[i*tc.in:(i+1)*tc.in])
						for o := range tc.out {
							want := dot(tc.in, raw[o*rb:(o+1)*rb], a)
							if g := got[i*tc.out+o]; math.Float32bits(g) != math.Float32bits(want) {
								t.Fatalf("dst[%d][%d] = %g, want %g", i, o, g, want)
							}
						}
					}
				})
			}
		}
	}
}

// TestMatMulWeightKQuantVectorOrder checks that a Q2_K, Q3_K, IQ3_XXS,
// IQ3_S or Q4_1 weight made by MatMulWeight sums in the order of
// llama.cpp's AVX2 vector dot product (quant.VecDot), bit for bit, in both
// modes, whether the backend took a repacked layout (rows a multiple of
// 16, where this CPU has the kernel: Q2_Kx16, Q3_Kx16, the i-quant panel
// from 16 tokens on, Q5_1x16 for Q4_1) or not, for token counts around the kernels' four rows and the
// panel's 16 and several thread counts; and that the exact mode's
// native-fp16 build, whose Q2_K order is another, keeps Q2_K in the GGUF
// layout.
func TestMatMulWeightKQuantVectorOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 23))
	for _, typ := range []quant.Type{quant.Q2_K, quant.Q3_K, quant.IQ3_XXS, quant.IQ3_S, quant.Q4_1} {
		for _, tc := range []struct {
			in, out    int
			repackable bool
		}{
			{256, 16, true},
			{1024, 400, true},
			{512, 40, false},
		} {
			raw := quantized(t, typ, tc.out, tc.in, randRows(r, tc.out, tc.in))
			rb, _ := typ.RowBytes(tc.in)
			ab, _ := quant.VecDotType(typ).RowBytes(tc.in)
			quantize, _ := quant.QuantizeRowFor(quant.VecDotType(typ))
			a := make([]byte, ab)
			for _, n := range []int{1, 2, 3, 4, 5, 8, 13, 16, 37} {
				x := randRows(r, n, tc.in)
				for _, opts := range []Options{{Threads: 1, Exact: true}, {Threads: 3, Exact: true}, {Threads: 1}, {Threads: 3}} {
					t.Run(fmt.Sprintf("%s/%dx%d/n%d/t%d/exact%v", typ, tc.out, tc.in, n, opts.Threads, opts.Exact), func(t *testing.T) {
						b := New(opts)
						defer b.Close()
						wt, err := b.MatMulWeight(typ, tc.out, tc.in, raw)
						if err != nil {
							t.Fatal(err)
						}
						if want := tc.repackable && quant.PackedFor(typ) != nil; wt.(compute.Repacked).Repacked() != want {
							t.Fatalf("Repacked() = %v, want %v", !want, want)
						}
						xt, dst := b.New(n, tc.in), b.New(n, tc.out)
						b.Upload(xt, x)
						b.MatMul(dst, xt, wt)
						got := F32(dst)
						for i := range n {
							quantize(a, x[i*tc.in:(i+1)*tc.in])
							for o := range tc.out {
								want := quant.VecDot(typ, tc.in, raw[o*rb:(o+1)*rb], a)
								if g := got[i*tc.out+o]; math.Float32bits(g) != math.Float32bits(want) {
									t.Fatalf("dst[%d][%d] = %g, want %g", i, o, g, want)
								}
							}
						}
					})
				}
			}
		}
	}
	b := New(Options{Threads: 1, Exact: true, Build: BuildNativeFP16})
	defer b.Close()
	wt, err := b.MatMulWeight(quant.Q2_K, 16, 256, quantized(t, quant.Q2_K, 16, 256, randRows(r, 16, 256)))
	if err != nil {
		t.Fatal(err)
	}
	if wt.(compute.Repacked).Repacked() {
		t.Fatal("the native-fp16 build repacked a Q2_K weight into the vector order")
	}
}

// TestRepackedMatMulDoesNotAllocate checks the decode step of a repacked
// Q4_0 weight, as TestDecodeOpsDoNotAllocate does the others.
func TestRepackedMatMulDoesNotAllocate(t *testing.T) {
	if quant.PackedFor(quant.Q4_0) == nil {
		t.Skip("no Q4_0x16 kernel on this CPU")
	}
	b := New(Options{Threads: 2})
	defer b.Close()
	const in, out = 256, 512
	rb, _ := quant.Q4_0.RowBytes(in)
	raw := make([]byte, out*rb)
	r := rand.New(rand.NewPCG(3, 4))
	for o := range out {
		if err := quant.Quantize(quant.Q4_0, raw[o*rb:(o+1)*rb], randRows(r, 1, in)); err != nil {
			t.Fatal(err)
		}
	}
	wt, err := b.MatMulWeight(quant.Q4_0, out, in, raw)
	if err != nil {
		t.Fatal(err)
	}
	x, dst := b.New(1, in), b.New(1, out)
	b.Upload(x, randRows(r, 1, in))
	op := func() { b.MatMul(dst, x, wt) }
	op()
	if n := testing.AllocsPerRun(20, op); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}

// TestMatMulWeightQ4_KRepacked checks a repacked Q4_K weight's MatMul
// against Q4Kx16Reference on the same groups, bit for bit, and against
// the GGUF vector order within float32 rounding.
func TestMatMulWeightQ4_KRepacked(t *testing.T) {
	p := quant.PackedFor(quant.Q4_K)
	if p == nil {
		t.Skip("no Q4_Kx16 kernel on this CPU")
	}
	r := rand.New(rand.NewPCG(19, 23))
	const in, out = 512, 48
	w := randRows(r, out, in)
	rb, _ := quant.Q4_K.RowBytes(in)
	raw := make([]byte, out*rb)
	for o := range out {
		if err := quant.Quantize(quant.Q4_K, raw[o*rb:(o+1)*rb], w[o*in:(o+1)*in]); err != nil {
			t.Fatal(err)
		}
	}
	packed := make([]byte, p.Bytes(out, in))
	if err := p.Repack(packed, raw, out, in); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 4, 9} {
		x := randRows(r, n, in)
		b := New(Options{Threads: 3})
		wt, err := b.MatMulWeight(quant.Q4_K, out, in, raw)
		if err != nil {
			t.Fatal(err)
		}
		if !wt.(compute.Repacked).Repacked() {
			t.Fatal("Q4_K weight of 48 rows not repacked")
		}
		xt, dst := b.New(n, in), b.New(n, out)
		b.Upload(xt, x)
		b.MatMul(dst, xt, wt)
		got := F32(dst)
		ab, _ := quant.Q8_K.RowBytes(in)
		a := make([]byte, ab)
		aux := make([]uint32, p.AuxWords*in/p.BlockSize)
		quantize, _ := quant.QuantizeRowFor(quant.Q8_K)
		want := make([]float32, quant.Q4x16Rows)
		for i := range n {
			quantize(a, x[i*in:(i+1)*in])
			p.Aux(aux, a)
			for g := 0; g < out/quant.Q4x16Rows; g++ {
				gb := p.BlockBytes * in / p.BlockSize
				quant.Q4Kx16Reference(in/p.BlockSize, packed[g*gb:(g+1)*gb], a, ab, aux, len(aux), 1, want, quant.Q4x16Rows)
				for k, v := range want {
					o := g*quant.Q4x16Rows + k
					if g := got[i*out+o]; math.Float32bits(g) != math.Float32bits(v) {
						t.Fatalf("n=%d dst[%d][%d] = %g, want %g", n, i, o, g, v)
					}
					if vec := quant.VecDot(quant.Q4_K, in, raw[o*rb:(o+1)*rb], a); math.Abs(float64(vec-v)) > 1e-3*math.Abs(float64(vec))+1e-3 {
						t.Fatalf("n=%d dst[%d][%d] = %g, vector order %g", n, i, o, v, vec)
					}
				}
			}
		}
		b.Close()
	}
}

// TestMatMulWeightQ8_0Repacked checks that a Q8_0 weight of a multiple of
// 16 rows is repacked where the CPU has the Q8_0x16 kernel, and that its
// MatMul still gives the vector order of ggml_vec_dot_q8_0_q8_0 bit for
// bit, for any number of activation rows and threads. With AMX on,
// weights of a multiple of 32 rows keep the AMX order instead and are
// not repacked.
func TestMatMulWeightQ8_0Repacked(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 31))
	for _, tc := range []struct {
		in, out int
		amx     AMXMode
		packed  bool // repacked where the kernel exists
	}{
		{384, 128, AMXOff, true},
		{1024, 48, AMXOff, true},
		{96, 40, AMXOff, false}, // not a multiple of 16
		{384, 48, AMXOn, true},  // not a multiple of 32: the vector order
		{384, 64, AMXOn, false}, // the AMX order
	} {
		w := randRows(r, tc.out, tc.in)
		rb, _ := quant.Q8_0.RowBytes(tc.in)
		raw := make([]byte, tc.out*rb)
		for o := range tc.out {
			if err := quant.Quantize(quant.Q8_0, raw[o*rb:(o+1)*rb], w[o*tc.in:(o+1)*tc.in]); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []int{1, 2, 3, 4, 5, 8, 11} {
			x := randRows(r, n, tc.in)
			for _, threads := range []int{1, 3} {
				t.Run(fmt.Sprintf("%dx%d/amx%d/n%d/t%d", tc.out, tc.in, tc.amx, n, threads), func(t *testing.T) {
					b := New(Options{Threads: threads, AMX: tc.amx, Exact: true})
					defer b.Close()
					wt, err := b.MatMulWeight(quant.Q8_0, tc.out, tc.in, raw)
					if err != nil {
						t.Fatal(err)
					}
					repacked := wt.(compute.Repacked).Repacked()
					if want := tc.packed && quant.PackedFor(quant.Q8_0) != nil; repacked != want {
						t.Fatalf("Repacked() = %v, want %v", repacked, want)
					}
					xt, dst := b.New(n, tc.in), b.New(n, tc.out)
					b.Upload(xt, x)
					b.MatMul(dst, xt, wt)
					got := F32(dst)
					dot := func(n int, w, a []byte) float32 { return quant.VecDot(quant.Q8_0, n, w, a) }
					if tc.amx == AMXOn && tc.out%32 == 0 {
						dot = quant.DotQ8_0Interleaved
					}
					a := make([]byte, rb)
					quantize, _ := quant.QuantizeRowFor(quant.Q8_0)
					for i := range n {
						quantize(a, x[i*tc.in:(i+1)*tc.in])
						for o := range tc.out {
							want := dot(tc.in, raw[o*rb:], a)
							if g := got[i*tc.out+o]; math.Float32bits(g) != math.Float32bits(want) {
								t.Fatalf("row %d col %d: %v, want %v", i, o, g, want)
							}
						}
					}
				})
			}
		}
	}
}

// TestMatMulMultiMatchesMatMul checks that MatMulMulti writes every output
// exactly as separate MatMul calls do, for weights that share a repacked
// layout (fused into one loop), weights of another layout or none (run
// alone), token counts around the kernel's rows and thread counts.
func TestMatMulMultiMatchesMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 41))
	const in = 256
	type spec struct {
		typ  quant.Type
		rows int
	}
	for _, set := range [][]spec{
		{{quant.Q8_0, 64}, {quant.Q8_0, 32}, {quant.Q8_0, 32}}, // q, k, v
		{{quant.Q8_0, 48}, {quant.Q8_0, 48}},                   // gate, up
		{{quant.Q4_K, 32}, {quant.Q4_K, 16}, {quant.Q6_K, 16}}, // Q4_K_M's v
		{{quant.Q4_0, 32}, {quant.Q8_0, 32}, {quant.Q4_0, 16}}, // two layouts
		{{quant.Q8_0, 40}, {quant.F32, 16}},                    // not a multiple of 16, F32
	} {
		for _, mode := range []struct {
			threads int
			exact   bool
		}{{1, true}, {3, true}, {1, false}, {3, false}} {
			threads := mode.threads
			b := New(Options{Threads: threads, AMX: AMXOff, Exact: mode.exact})
			var ws []compute.Tensor
			name := fmt.Sprintf("exact=%v/", mode.exact)
			for _, s := range set {
				raw := quantized(t, s.typ, s.rows, in, randRows(r, s.rows, in))
				w, err := b.MatMulWeight(s.typ, s.rows, in, raw)
				if err != nil {
					t.Fatal(err)
				}
				ws = append(ws, w)
				name += fmt.Sprintf("%s×%d,", s.typ, s.rows)
			}
			for _, n := range []int{1, 2, 5, 8, 17} {
				t.Run(fmt.Sprintf("%s/t%d/n%d", name, threads, n), func(t *testing.T) {
					x := b.New(n, in)
					b.Upload(x, randRows(r, n, in))
					var got, want []compute.Tensor
					for _, w := range ws {
						got, want = append(got, b.New(n, w.Rows())), append(want, b.New(n, w.Rows()))
						b.MatMul(want[len(want)-1], x, w)
					}
					b.MatMulMulti(got, x, ws)
					for i := range ws {
						g, w := F32(got[i]), F32(want[i])
						for k := range w {
							if math.Float32bits(g[k]) != math.Float32bits(w[k]) {
								t.Fatalf("weight %d element %d: %v, MatMul gives %v", i, k, g[k], w[k])
							}
						}
					}
				})
			}
			b.Close()
		}
	}
}

// quantized encodes vals as rows×cols GGUF data of type typ.
func quantized(t *testing.T, typ quant.Type, rows, cols int, vals []float32) []byte {
	t.Helper()
	rb, err := typ.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, rows*rb)
	for i := range rows {
		if err := quant.Quantize(typ, raw[i*rb:(i+1)*rb], vals[i*cols:(i+1)*cols]); err != nil {
			t.Fatal(err)
		}
	}
	return raw
}
