package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ3Kx16 repacks random Q3_K matrices of 16 rows and checks, for 1 to
// PackedRows activation rows with gaps between them, that the reference of
// the layout equals the vector dot product on the GGUF rows (llama.cpp's
// AVX2 order) bit for bit, and that the assembly kernel, where this CPU
// has it, equals the reference bit for bit. Every third
// matrix has random quants, scales and minimums, and the activations of
// every fourth are all −128 or 127, the largest sums the integer steps
// must hold.
func TestQ3Kx16(t *testing.T) {
	forEachISA(t, testQ3Kx16)
}

func testQ3Kx16(t *testing.T) {
	kernel := q3kx16Kernel
	rng := rand.New(rand.NewPCG(71, 73))
	for iter := range 120 {
		nb := 1 + rng.IntN(6)
		n := nb * QKK
		rb := nb * q3_KBytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			quantizeQ3_K(row, randRow(rng, n, 1+float64(i%3)))
			if iter%3 == 2 {
				for b := range nb {
					for j := range 108 {
						row[b*q3_KBytes+j] = byte(rng.Uint32())
					}
				}
			}
		}
		packed := make([]byte, Q3Kx16Bytes(Q4x16Rows, n))
		if err := RepackQ3Kx16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_KBytes + rng.IntN(5)
		auxstride := Q3Kx16AuxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_KBytes)
		aux := make([]uint32, (rows-1)*auxstride+Q3Kx16AuxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_KBytes]
			quantizeQ8_K(row, randRow(rng, n, 3))
			if iter%4 == 3 {
				extremeQ8_K(row, rng, -128)
			}
			Q3Kx16Aux(aux[r*auxstride:], row)
		}
		dstride := Q4x16Rows + iter%3
		want := make([]float32, (rows-1)*dstride+Q4x16Rows)
		Q3Kx16Reference(nb, packed, a, astride, aux, auxstride, rows, want, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				ref := want[r*dstride+i]
				vec := dotQ3_KQ8_K(n, w[i*rb:(i+1)*rb], a[r*astride:])
				if math.Float32bits(vec) != math.Float32bits(ref) {
					t.Fatalf("nb=%d row %d activation row %d: layout reference %v, vector dot %v", nb, i, r, ref, vec)
				}
			}
		}
		if kernel == nil {
			continue
		}
		got := make([]float32, len(want))
		for k := range got {
			got[k] = float32(k) // the kernel must not read what it writes
		}
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

// TestRepackQ3Kx16Errors checks that shapes the layout cannot hold are
// refused.
func TestRepackQ3Kx16Errors(t *testing.T) {
	for _, tc := range []struct{ rows, cols, src, dst int }{
		{8, 256, 8 * 110, 8 * 114},
		{16, 128, 16 * 55, 16 * 57},
		{16, 256, 16*110 - 1, 16 * 114},
		{16, 256, 16 * 110, 16 * 110},
	} {
		if err := RepackQ3Kx16(make([]byte, tc.dst), make([]byte, tc.src), tc.rows, tc.cols); err == nil {
			t.Errorf("%d×%d with %d/%d bytes: no error", tc.rows, tc.cols, tc.src, tc.dst)
		}
	}
}

// BenchmarkQ3Kx16 runs the Q3_Kx16 kernel on 16 rows of 4864 values
// against 4 activation rows and 1, and the GGUF-layout tile kernel on
// the same products for comparison.
func BenchmarkQ3Kx16(b *testing.B) {
	k := q3kx16Kernel
	if k == nil {
		b.Skip("no Q3_Kx16 kernel on this CPU")
	}
	const n = 4864 - 4864%QKK
	nb := n / QKK
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]byte, Q4x16Rows*nb*q3_KBytes)
	for i := range Q4x16Rows {
		quantizeQ3_K(w[i*nb*q3_KBytes:(i+1)*nb*q3_KBytes], randRow(rng, n, 1))
	}
	packed := make([]byte, Q3Kx16Bytes(Q4x16Rows, n))
	if err := RepackQ3Kx16(packed, w, Q4x16Rows, n); err != nil {
		b.Fatal(err)
	}
	a := make([]byte, TileRows*nb*q8_KBytes)
	aux := make([]uint32, TileRows*Q3Kx16AuxWords*nb)
	for r := range TileRows {
		row := a[r*nb*q8_KBytes : (r+1)*nb*q8_KBytes]
		quantizeQ8_K(row, randRow(rng, n, 3))
		Q3Kx16Aux(aux[r*Q3Kx16AuxWords*nb:], row)
	}
	dst := make([]float32, TileRows*Q4x16Rows)
	pairs := func(rows int) float64 { return float64(nb * Q4x16Rows * rows) }
	if tile := TileDotFor(Q3_K); tile != nil {
		b.Run("gguf-tile-rows4", func(b *testing.B) {
			rb := nb * q3_KBytes
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
				k(nb, packed, a, nb*q8_KBytes, aux, Q3Kx16AuxWords*nb, rows, dst, Q4x16Rows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs(rows), "ns/block-pair")
		})
	}
}
