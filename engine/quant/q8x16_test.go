package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ8x16MatchesVectorDot repacks random Q8_0 matrices of 16 rows and
// checks the Q8_0x16 reference and, where this CPU has it, the assembly
// kernel against dotQ8_0Q8_0 on the GGUF rows, bit for bit, for 1 to 8
// activation rows with gaps between them. Random bytes include the quant
// -128, which quantizing never writes.
func TestQ8x16MatchesVectorDot(t *testing.T) {
	forEachISA(t, testQ8x16MatchesVectorDot)
}

func testQ8x16MatchesVectorDot(t *testing.T) {
	kernels := map[string]PackedKernel{"reference": Q8x16Reference}
	if k := q8x16Kernel; k != nil {
		kernels["kernel"] = k
	}
	rng := rand.New(rand.NewPCG(47, 53))
	for iter := range 300 {
		nb := 1 + rng.IntN(40)
		n := nb * QK
		rb := nb * q8_0Bytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if iter%2 == 0 {
				quantizeQ8_0(row, randRow(rng, n, 1))
			} else {
				for j := range row {
					row[j] = byte(rng.Uint32())
				}
				for b := range nb { // finite scales: random bytes make NaN and Inf
					row[b*q8_0Bytes+1] &= 0x7b
				}
			}
		}
		packed := make([]byte, Q8x16Bytes(Q4x16Rows, n))
		if err := RepackQ8x16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_0Bytes + rng.IntN(5)
		auxstride := Q8_0x16AuxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_0Bytes)
		aux := make([]uint32, (rows-1)*auxstride+Q8_0x16AuxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_0Bytes]
			quantizeQ8_0(row, randRow(rng, n, 3))
			Q8_0x16Aux(aux[r*auxstride:], row)
		}
		dstride := Q4x16Rows + iter%3
		if iter == 0 {
			t.Logf("kernels: %d", len(kernels))
		}
		for name, k := range kernels {
			got := make([]float32, (rows-1)*dstride+Q4x16Rows)
			k(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
			for r := range rows {
				for i := range Q4x16Rows {
					want := dotQ8_0Q8_0(n, w[i*rb:], a[r*astride:])
					if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s nb=%d rows=%d weight row %d activation row %d: %v, want %v", name, nb, rows, i, r, g, want)
					}
				}
			}
		}
	}
}

// TestRepackQ8x16Errors checks that shapes the layout cannot hold are
// refused, not truncated.
func TestRepackQ8x16Errors(t *testing.T) {
	for _, tc := range []struct{ rows, cols, src, dst int }{
		{8, 32, 8 * 34, 8 * 34},                    // rows not a multiple of 16
		{16, 40, 16 * 34, 16 * 34},                 // columns not a multiple of 32
		{16, 32, 16*34 - 1, 16 * 34},               // short source
		{32, 64, 32 * 68, 32*68 - Q8x16BlockBytes}, // short destination
	} {
		if err := RepackQ8x16(make([]byte, tc.dst), make([]byte, tc.src), tc.rows, tc.cols); err == nil {
			t.Errorf("%d×%d with %d/%d bytes: no error", tc.rows, tc.cols, tc.src, tc.dst)
		}
	}
}

// BenchmarkQ8x16 runs the Q8_0x16 kernel on a 896×4864 group row (FF
// down projection of a 0.5B model) for 4 activation rows and for 1, and
// the GGUF-layout tile kernel on the same products.
func BenchmarkQ8x16(b *testing.B) {
	k := q8x16Kernel
	if k == nil {
		b.Skip("no Q8_0x16 kernel on this CPU")
	}
	const n = 4864
	nb := n / QK
	rng := rand.New(rand.NewPCG(1, 2))
	rb := nb * q8_0Bytes
	w := make([]byte, Q4x16Rows*rb)
	for i := range Q4x16Rows {
		quantizeQ8_0(w[i*rb:(i+1)*rb], randRow(rng, n, 1))
	}
	packed := make([]byte, len(w))
	if err := RepackQ8x16(packed, w, Q4x16Rows, n); err != nil {
		b.Fatal(err)
	}
	a := make([]byte, TileRows*rb)
	aux := make([]uint32, TileRows*Q8_0x16AuxWords*nb)
	for r := range TileRows {
		row := a[r*rb : (r+1)*rb]
		quantizeQ8_0(row, randRow(rng, n, 3))
		Q8_0x16Aux(aux[r*Q8_0x16AuxWords*nb:], row)
	}
	dst := make([]float32, TileRows*Q4x16Rows)
	perPair := func(b *testing.B, rows int) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb*Q4x16Rows*rows), "ns/block-pair")
	}
	if tile := TileDotFor(Q8_0); tile != nil {
		for _, rows := range []int{4, 1} {
			b.Run(map[int]string{4: "gguf-tile-rows4", 1: "gguf-tile-rows1"}[rows], func(b *testing.B) {
				b.SetBytes(int64(len(packed)))
				for b.Loop() {
					for g := 0; g < Q4x16Rows; g += TileRows {
						tile(n, w[g*rb:], rb, a, rb, rows, dst[g:], Q4x16Rows)
					}
				}
				perPair(b, rows)
			})
		}
	}
	for _, rows := range []int{4, 2, 1} {
		b.Run(map[int]string{4: "rows4", 2: "rows2", 1: "rows1"}[rows], func(b *testing.B) {
			b.SetBytes(int64(len(packed)))
			for b.Loop() {
				k(nb, packed, a, rb, aux, Q8_0x16AuxWords*nb, rows, dst, Q4x16Rows)
			}
			perPair(b, rows)
		})
	}
}
