package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestMatMulWeightIQ4_NLInterleavedOrder checks that an IQ4_NL weight made
// by MatMulWeight sums in llama.cpp's repacked order (its 8-row
// interleaved IQ4_NL layout) where the row count is a multiple of 8 (the
// repacked IQ4_NLx16 layout at a multiple of 16, the interleaved tile
// otherwise), and in the vector dot product's order otherwise, bit for
// bit, for token counts around the tile's four rows and the packed
// kernel's eight, two thread counts and both arithmetic modes.
func TestMatMulWeightIQ4_NLInterleavedOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 23))
	for _, tc := range []struct{ in, out int }{{256, 16}, {384, 40}, {64, 37}, {4864, 32}} {
		w := randRows(r, tc.out, tc.in)
		rb, _ := quant.IQ4_NL.RowBytes(tc.in)
		raw := make([]byte, tc.out*rb)
		for o := range tc.out {
			if err := quant.Quantize(quant.IQ4_NL, raw[o*rb:(o+1)*rb], w[o*tc.in:(o+1)*tc.in]); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []int{1, 3, 4, 9, 17} {
			x := randRows(r, n, tc.in)
			for _, threads := range []int{1, 3} {
				exact := threads == 3 // both arithmetic modes take this order
				t.Run(fmt.Sprintf("%dx%d/n%d/t%d/exact=%v", tc.out, tc.in, n, threads, exact), func(t *testing.T) {
					b := New(Options{Threads: threads, Exact: exact})
					defer b.Close()
					wt, err := b.MatMulWeight(quant.IQ4_NL, tc.out, tc.in, raw)
					if err != nil {
						t.Fatal(err)
					}
					xt, dst := b.New(n, tc.in), b.New(n, tc.out)
					b.Upload(xt, x)
					b.MatMul(dst, xt, wt)
					got := F32(dst)
					dot := quant.DotIQ4_NLInterleaved
					if tc.out%8 != 0 || quant.InterleavedTileFor(quant.IQ4_NL) == nil {
						dot = func(n int, w, a []byte) float32 { return quant.VecDot(quant.IQ4_NL, n, w, a) }
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

// TestIQuantWeightsMatMul runs every i-quant through the backend's MatMul
// (prefill-sized and decode-sized) and its GetRows, against the
// dequantized weights in float64.
func TestIQuantWeightsMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 31))
	for _, typ := range []quant.Type{quant.IQ4_NL, quant.IQ4_XS, quant.IQ3_XXS, quant.IQ3_S, quant.IQ2_XXS,
		quant.IQ2_XS, quant.IQ2_S, quant.IQ1_S, quant.IQ1_M} {
		const in, out = 512, 24
		rb, _ := typ.RowBytes(in)
		raw := make([]byte, out*rb)
		for i := range raw {
			raw[i] = byte(r.Uint32())
		}
		// finite scales: rewrite every block's f16 d (IQ1_M keeps it in the
		// top nibbles of its scale words)
		bb := typ.BlockBytes()
		for off := 0; off < len(raw); off += bb {
			h := quant.FP32ToFP16(float32(r.NormFloat64() * 0.01))
			if typ == quant.IQ1_M {
				for k := 0; k < 4; k++ {
					raw[off+49+2*k] = raw[off+49+2*k]&0x0f | byte(h>>(4*k))<<4
				}
			} else {
				raw[off], raw[off+1] = byte(h), byte(h>>8)
			}
		}
		deq := make([]float32, out*in)
		if err := quant.Dequantize(typ, raw, deq); err != nil {
			t.Fatal(err)
		}
		b := New(Options{Threads: 2})
		wt, err := b.MatMulWeight(typ, out, in, raw)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		for _, n := range []int{1, 6} {
			x := randRows(r, n, in)
			xt, dst := b.New(n, in), b.New(n, out)
			b.Upload(xt, x)
			b.MatMul(dst, xt, wt)
			got := F32(dst)
			for i := range n {
				for o := range out {
					var want, mag float64
					for k := range in {
						p := float64(deq[o*in+k]) * float64(x[i*in+k])
						want += p
						mag += math.Abs(p)
					}
					// the activations are rounded to 8 bits
					if d := math.Abs(float64(got[i*out+o]) - want); d > 0.02*mag+1e-6 {
						t.Fatalf("%s n=%d dst[%d][%d] = %g, dequantized product %g", typ, n, i, o, got[i*out+o], want)
					}
				}
			}
		}
		emb, err := b.Weight(typ, out, in, raw)
		if err != nil {
			t.Fatal(err)
		}
		rows := b.New(2, in)
		b.GetRows(rows, emb, []int32{5, 17})
		for k, id := range []int{5, 17} {
			for j := range in {
				if g, w := F32(rows)[k*in+j], deq[id*in+j]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("%s GetRows row %d[%d] = %g, dequantized %g", typ, id, j, g, w)
				}
			}
		}
		b.Close()
	}
}

// TestMatMulWeightIQ4_XSBatching checks the IQ4_XS orders of each mode, bit
// for bit: the default mode takes llama.cpp's prompt order (IQ4_XSx16)
// for every call where this CPU has its kernel; the exact mode the vector
// dot product for every call; the exact mode with llama.cpp's batching the
// prompt order for calls of eight tokens or more and the vector one below.
func TestMatMulWeightIQ4_XSBatching(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 41))
	const in, out = 768, 32
	raw := quantized(t, quant.IQ4_XS, out, in, randRows(r, out, in))
	rb, _ := quant.IQ4_XS.RowBytes(in)
	panel := make([]byte, quant.IQ4XSx16Bytes(out, in))
	if err := quant.RepackIQ4XSx16(panel, raw, out, in); err != nil {
		t.Fatal(err)
	}
	ab, _ := quant.Q8_K.RowBytes(in)
	quantize, _ := quant.QuantizeRowFor(quant.Q8_K)
	a := make([]byte, ab)
	aux := make([]uint32, quant.IQ4XSx16AuxWords*in/quant.QKK)
	var prompt [quant.Q4x16Rows]float32
	for _, tc := range []struct {
		o     Options
		name  string
		panel func(n int) bool // whether a call of n tokens takes the prompt order
	}{
		{Options{Threads: 2}, "default", func(int) bool { return quant.FastPackedFor(quant.IQ4_XS, false) != nil }},
		{Options{Threads: 2, Exact: true}, "exact", func(int) bool { return false }},
		{Options{Threads: 3, Exact: true, LlamaBatching: true}, "exact-batched", func(n int) bool { return n >= 8 }},
	} {
		b := New(tc.o)
		wt, err := b.MatMulWeight(quant.IQ4_XS, out, in, raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 7, 8, 13} {
			x := randRows(r, n, in)
			xt, dst := b.New(n, in), b.New(n, out)
			b.Upload(xt, x)
			b.MatMul(dst, xt, wt)
			got := F32(dst)
			for i := range n {
				quantize(a, x[i*in:(i+1)*in])
				quant.IQ4XSx16Aux(aux, a)
				for g := 0; g < out; g += quant.Q4x16Rows {
					quant.IQ4XSx16Reference(in/quant.QKK, panel[g/quant.Q4x16Rows*quant.IQ4XSx16Bytes(quant.Q4x16Rows, in):], a, ab, aux, len(aux), 1, prompt[:], quant.Q4x16Rows)
					for o := g; o < g+quant.Q4x16Rows; o++ {
						want := quant.VecDot(quant.IQ4_XS, in, raw[o*rb:(o+1)*rb], a)
						if tc.panel(n) {
							want = prompt[o-g]
						}
						if g := got[i*out+o]; math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("%s, %d tokens: dst[%d][%d] = %g, want %g", tc.name, n, i, o, g, want)
						}
					}
				}
			}
		}
		b.Close()
	}
}
