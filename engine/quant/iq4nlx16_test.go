package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIQ4NLx16 repacks random IQ4_NL matrices of 16 rows and checks, for
// 1 to 8 activation rows with gaps between them, that the reference of
// the layout equals DotIQ4_NLInterleaved (llama.cpp's repacked order) on
// the GGUF rows bit for bit, that a product split in two ranges of blocks
// gives the same bits, and that the assembly kernel, where this CPU has
// it, equals the reference bit for bit, from zero and added to dst.
func TestIQ4NLx16(t *testing.T) {
	forEachISA(t, testIQ4NLx16)
}

func testIQ4NLx16(t *testing.T) {
	kernel, acc := iq4nlx16Kernel, iq4nlx16AccKernel
	rng := rand.New(rand.NewPCG(79, 83))
	for iter := range 120 {
		nb := 1 + rng.IntN(40)
		n := nb * QK
		rb := nb * iq4_NLBytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if err := Quantize(IQ4_NL, row, randRow(rng, n, 1+float64(i%3))); err != nil {
				t.Fatal(err)
			}
			if iter%3 == 2 { // random quants
				for b := range nb {
					for j := 2; j < iq4_NLBytes; j++ {
						row[b*iq4_NLBytes+j] = byte(rng.Uint32())
					}
				}
			}
		}
		packed := make([]byte, Q4x16Bytes(Q4x16Rows, n))
		if err := RepackIQ4NLx16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_0Bytes + rng.IntN(5)
		auxstride := Q8_0AuxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_0Bytes)
		aux := make([]uint32, (rows-1)*auxstride+Q8_0AuxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_0Bytes]
			x := randRow(rng, n, 3)
			if iter%7 == 3 { // saturated activations
				for k := range x {
					x[k] = float32(math.Copysign(1, float64(x[k])))
				}
			}
			quantizeQ8_0(row, x)
			IQ4NLx16Aux(aux[r*auxstride:], row)
		}
		dstride := Q4x16Rows + iter%3
		want := make([]float32, (rows-1)*dstride+Q4x16Rows)
		IQ4NLx16Reference(nb, packed, a, astride, aux, auxstride, rows, want, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				if g, d := want[r*dstride+i], DotIQ4_NLInterleaved(n, w[i*rb:], a[r*astride:]); math.Float32bits(g) != math.Float32bits(d) {
					t.Fatalf("nb=%d row %d activation row %d: layout %v, DotIQ4_NLInterleaved %v", nb, i, r, g, d)
				}
			}
		}
		if nb > 1 {
			split := make([]float32, len(want))
			h := nb / 2
			IQ4NLx16Reference(h, packed, a, astride, aux, auxstride, rows, split, dstride)
			IQ4NLx16AccReference(nb-h, packed[h*Q4x16BlockBytes:], a[h*q8_0Bytes:], astride, aux[h*Q8_0AuxWords:], auxstride, rows, split, dstride)
			for k := range split {
				if math.Float32bits(split[k]) != math.Float32bits(want[k]) {
					t.Fatalf("nb=%d split at %d: output %d = %v, whole %v", nb, h, k, split[k], want[k])
				}
			}
		}
		if kernel == nil {
			continue
		}
		got := make([]float32, len(want))
		for k := range got {
			got[k] = float32(k)
		}
		kernel(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
		start := make([]float32, len(want))
		for k := range start {
			start[k] = float32(rng.NormFloat64())
		}
		wantAcc, gotAcc := append([]float32(nil), start...), append([]float32(nil), start...)
		IQ4NLx16AccReference(nb, packed, a, astride, aux, auxstride, rows, wantAcc, dstride)
		acc(nb, packed, a, astride, aux, auxstride, rows, gotAcc, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				k := r*dstride + i
				if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
					t.Fatalf("kernel nb=%d rows=%d weight row %d activation row %d: %v, reference %v", nb, rows, i, r, got[k], want[k])
				}
				if math.Float32bits(gotAcc[k]) != math.Float32bits(wantAcc[k]) {
					t.Fatalf("accumulating kernel nb=%d rows=%d weight row %d activation row %d: %v, reference %v", nb, rows, i, r, gotAcc[k], wantAcc[k])
				}
			}
		}
	}
}

// TestRepackIQ4NLx16Errors checks that shapes the layout cannot hold are
// refused.
func TestRepackIQ4NLx16Errors(t *testing.T) {
	for _, tc := range []struct{ rows, cols, src, dst int }{
		{8, 32, 8 * 18, 8 * 18},
		{16, 48, 16 * 27, 16 * 27},
		{0, 32, 0, 0},
		{16, 32, 16*18 - 1, 16 * 18},
		{16, 32, 16 * 18, 16*18 + 1},
	} {
		if err := RepackIQ4NLx16(make([]byte, tc.dst), make([]byte, tc.src), tc.rows, tc.cols); err == nil {
			t.Errorf("%d×%d with %d/%d bytes: no error", tc.rows, tc.cols, tc.src, tc.dst)
		}
	}
}

// BenchmarkIQ4NLx16 runs the IQ4_NLx16 kernel on 16 rows of 896 values
// against 8, 4 and 1 activation rows, and the GGUF layout's interleaved
// tile on the same products for comparison.
func BenchmarkIQ4NLx16(b *testing.B) {
	k := iq4nlx16Kernel
	if k == nil {
		b.Skip("no IQ4_NLx16 kernel on this CPU")
	}
	const n = 896
	nb := n / QK
	rng := rand.New(rand.NewPCG(1, 2))
	rb := nb * iq4_NLBytes
	w := make([]byte, Q4x16Rows*rb)
	for i := range Q4x16Rows {
		if err := Quantize(IQ4_NL, w[i*rb:(i+1)*rb], randRow(rng, n, 1)); err != nil {
			b.Fatal(err)
		}
	}
	packed := make([]byte, Q4x16Bytes(Q4x16Rows, n))
	if err := RepackIQ4NLx16(packed, w, Q4x16Rows, n); err != nil {
		b.Fatal(err)
	}
	a := make([]byte, PackedRows*nb*q8_0Bytes)
	aux := make([]uint32, PackedRows*Q8_0AuxWords*nb)
	for r := range PackedRows {
		row := a[r*nb*q8_0Bytes : (r+1)*nb*q8_0Bytes]
		quantizeQ8_0(row, randRow(rng, n, 3))
		IQ4NLx16Aux(aux[r*Q8_0AuxWords*nb:], row)
	}
	dst := make([]float32, PackedRows*Q4x16Rows)
	pairs := func(rows int) float64 { return float64(nb * Q4x16Rows * rows) }
	if tile := InterleavedTileFor(IQ4_NL); tile != nil {
		b.Run("gguf-tile-rows4", func(b *testing.B) {
			for b.Loop() {
				for g := 0; g < Q4x16Rows; g += TileRows {
					tile(n, w[g*rb:], rb, a, nb*q8_0Bytes, TileRows, dst[g:], Q4x16Rows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs(TileRows), "ns/block-pair")
		})
	}
	for _, rows := range []int{8, 4, 1} {
		b.Run(map[int]string{8: "rows8", 4: "rows4", 1: "rows1"}[rows], func(b *testing.B) {
			for b.Loop() {
				k(nb, packed, a, nb*q8_0Bytes, aux, Q8_0AuxWords*nb, rows, dst, Q4x16Rows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs(rows), "ns/block-pair")
		})
	}
}
