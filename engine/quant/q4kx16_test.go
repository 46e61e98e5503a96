package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ4Kx16 repacks random Q4_K matrices of 16 rows and checks, for 1 to
// 4 activation rows with gaps between them, that the reference of the
// layout's order agrees with the vector dot product on the GGUF rows to
// float32 rounding (both compute the same exact sums, in other orders),
// and that the assembly kernel, where this CPU has it, equals the
// reference bit for bit.
func TestQ4Kx16(t *testing.T) {
	forEachISA(t, testQ4Kx16)
}

func testQ4Kx16(t *testing.T) {
	kernel := q4kx16Kernel
	rng := rand.New(rand.NewPCG(47, 53))
	for iter := range 120 {
		nb := 1 + rng.IntN(6)
		n := nb * QKK
		rb := nb * q4_KBytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			quantizeQ4_K(row, randRow(rng, n, 1+float64(i%3)))
			if iter%3 == 2 { // random quants, scales and minimums
				for b := range nb {
					for j := 4; j < q4_KBytes; j++ {
						row[b*q4_KBytes+j] = byte(rng.Uint32())
					}
				}
			}
		}
		packed := make([]byte, Q4Kx16Bytes(Q4x16Rows, n))
		if err := RepackQ4Kx16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_KBytes + rng.IntN(5)
		auxstride := Q8_KAuxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_KBytes)
		aux := make([]uint32, (rows-1)*auxstride+Q8_KAuxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_KBytes]
			quantizeQ8_K(row, randRow(rng, n, 3))
			Q8_KAux(aux[r*auxstride:], row)
		}
		dstride := Q4x16Rows + iter%3
		want := make([]float32, (rows-1)*dstride+Q4x16Rows)
		Q4Kx16Reference(nb, packed, a, astride, aux, auxstride, rows, want, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				vec := dotQ4_KQ8_K(n, w[i*rb:], a[r*astride:])
				ref := want[r*dstride+i]
				// The two orders round differently; bound the difference
				// by the size of the terms (sum of |products|).
				var scale float64
				x := make([]float32, n)
				dequantizeQ4_K(w[i*rb:(i+1)*rb], x)
				for b := range nb {
					d := float64(f32At(a[r*astride+b*q8_KBytes:]))
					for e := range QKK {
						scale += math.Abs(float64(x[b*QKK+e]) * d * float64(int8(a[r*astride+b*q8_KBytes+4+e])))
					}
				}
				if diff := math.Abs(float64(vec - ref)); diff > 1e-5*scale+1e-30 {
					t.Fatalf("nb=%d row %d activation row %d: layout order %v, vector order %v (terms %g)", nb, i, r, ref, vec, scale)
				}
			}
		}
		if kernel == nil {
			continue
		}
		got := make([]float32, len(want))
		kernel(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				if g, w := got[r*dstride+i], want[r*dstride+i]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("kernel nb=%d rows=%d weight row %d activation row %d: %v, reference %v", nb, rows, i, r, g, w)
				}
			}
		}
	}
}

// TestRepackQ4Kx16Errors checks that shapes the layout cannot hold are
// refused.
func TestRepackQ4Kx16Errors(t *testing.T) {
	for _, tc := range []struct{ rows, cols, src, dst int }{
		{8, 256, 8 * 144, 8 * 148},
		{16, 128, 16 * 72, 16 * 74},
		{16, 256, 16*144 - 1, 16 * 148},
		{16, 256, 16 * 144, 16 * 144},
	} {
		if err := RepackQ4Kx16(make([]byte, tc.dst), make([]byte, tc.src), tc.rows, tc.cols); err == nil {
			t.Errorf("%d×%d with %d/%d bytes: no error", tc.rows, tc.cols, tc.src, tc.dst)
		}
	}
}

// BenchmarkQ4Kx16 runs the Q4_Kx16 kernel on 16 rows of 4864 values
// against 4 activation rows and 1, and the GGUF-layout tile kernel on
// the same products for comparison.
func BenchmarkQ4Kx16(b *testing.B) {
	k := q4kx16Kernel
	if k == nil {
		b.Skip("no Q4_Kx16 kernel on this CPU")
	}
	const n = 4864 - 4864%QKK
	nb := n / QKK
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]byte, Q4x16Rows*nb*q4_KBytes)
	for i := range Q4x16Rows {
		quantizeQ4_K(w[i*nb*q4_KBytes:(i+1)*nb*q4_KBytes], randRow(rng, n, 1))
	}
	packed := make([]byte, Q4Kx16Bytes(Q4x16Rows, n))
	if err := RepackQ4Kx16(packed, w, Q4x16Rows, n); err != nil {
		b.Fatal(err)
	}
	a := make([]byte, TileRows*nb*q8_KBytes)
	aux := make([]uint32, TileRows*Q8_KAuxWords*nb)
	for r := range TileRows {
		row := a[r*nb*q8_KBytes : (r+1)*nb*q8_KBytes]
		quantizeQ8_K(row, randRow(rng, n, 3))
		Q8_KAux(aux[r*Q8_KAuxWords*nb:], row)
	}
	dst := make([]float32, TileRows*Q4x16Rows)
	pairs := func(rows int) float64 { return float64(nb * Q4x16Rows * rows) }
	if tile := TileDotFor(Q4_K); tile != nil {
		b.Run("gguf-tile-rows4", func(b *testing.B) {
			rb := nb * q4_KBytes
			for b.Loop() {
				for g := 0; g < Q4x16Rows; g += TileRows {
					tile(n, w[g*rb:], rb, a, nb*q8_KBytes, TileRows, dst[g:], Q4x16Rows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs(TileRows), "ns/block-pair")
		})
	}
	for _, rows := range []int{4, 1} {
		b.Run(map[int]string{4: "rows4", 1: "rows1"}[rows], func(b *testing.B) {
			for b.Loop() {
				k(nb, packed, a, nb*q8_KBytes, aux, Q8_KAuxWords*nb, rows, dst, Q4x16Rows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs(rows), "ns/block-pair")
		})
	}
}
