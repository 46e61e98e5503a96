package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ6Kx16MatchesVecDot repacks random Q6_K matrices of 16 rows and
// checks the Q6_Kx16 reference and, where this CPU has it, the assembly
// kernel against dotQ6_KQ8_K on the GGUF rows, bit for bit, for 1 to 8
// activation rows with gaps between them (one row takes the decode
// kernel): the layout keeps llama.cpp's order.
func TestQ6Kx16MatchesVecDot(t *testing.T) {
	forEachISA(t, testQ6Kx16MatchesVecDot)
}

func testQ6Kx16MatchesVecDot(t *testing.T) {
	kernels := map[string]PackedKernel{"reference": Q6Kx16Reference}
	if k := q6kx16Kernel; k != nil {
		kernels["kernel"] = k
	}
	rng := rand.New(rand.NewPCG(107, 109))
	for iter := range 60 {
		nb := 1 + rng.IntN(6)
		n := nb * QKK
		rb := nb * q6_KBytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if iter%2 == 0 {
				quantizeQ6_K(row, randRow(rng, n, 1))
			} else {
				for j := range row {
					row[j] = byte(rng.Uint32())
				}
				for b := range nb { // finite scales
					row[b*q6_KBytes+209] &= 0x7b
				}
			}
		}
		packed := make([]byte, Q6Kx16Bytes(Q4x16Rows, n))
		if err := RepackQ6Kx16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter/2%PackedRows // each count with quantized and with random bytes
		astride := nb*q8_KBytes + rng.IntN(5)
		a := make([]byte, (rows-1)*astride+nb*q8_KBytes)
		for r := range rows {
			quantizeQ8_K(a[r*astride:r*astride+nb*q8_KBytes], randRow(rng, n, 3))
		}
		dstride := Q4x16Rows + iter%3
		for name, k := range kernels {
			got := make([]float32, (rows-1)*dstride+Q4x16Rows)
			k(nb, packed, a, astride, nil, 0, rows, got, dstride)
			for r := range rows {
				for i := range Q4x16Rows {
					want := dotQ6_KQ8_K(n, w[i*rb:], a[r*astride:])
					if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s nb=%d rows=%d weight row %d activation row %d: %v, want %v", name, nb, rows, i, r, g, want)
					}
				}
			}
		}
	}
}
