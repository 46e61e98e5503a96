package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ5Kx16MatchesVecDot repacks random Q5_K matrices of 16 rows and
// checks the Q5_Kx16 reference and, where this CPU has it, the assembly
// kernel against dotQ5_KQ8_K on the GGUF rows, bit for bit, for 1 to 8
// activation rows with gaps between them (one row takes the decode
// kernel): the layout keeps llama.cpp's order.
func TestQ5Kx16MatchesVecDot(t *testing.T) {
	forEachISA(t, testQ5Kx16MatchesVecDot)
}

func testQ5Kx16MatchesVecDot(t *testing.T) {
	kernels := map[string]PackedKernel{"reference": Q5Kx16Reference}
	if k := q5kx16Kernel; k != nil {
		kernels["kernel"] = k
	}
	rng := rand.New(rand.NewPCG(113, 127))
	for iter := range 60 {
		nb := 1 + rng.IntN(6)
		n := nb * QKK
		rb := nb * q5_KBytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if iter%2 == 0 {
				quantizeQ5_K(row, randRow(rng, n, 1))
			} else {
				for j := range row {
					row[j] = byte(rng.Uint32())
				}
				for b := range nb { // finite scales
					row[b*q5_KBytes+1] &= 0x7b
					row[b*q5_KBytes+3] &= 0x7b
				}
			}
		}
		packed := make([]byte, Q5Kx16Bytes(Q4x16Rows, n))
		if err := RepackQ5Kx16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter/2%PackedRows // each count with quantized and with random bytes
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
		for name, k := range kernels {
			got := make([]float32, (rows-1)*dstride+Q4x16Rows)
			k(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
			for r := range rows {
				for i := range Q4x16Rows {
					want := dotQ5_KQ8_K(n, w[i*rb:], a[r*astride:])
					if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s nb=%d rows=%d weight row %d activation row %d: %v, want %v", name, nb, rows, i, r, g, want)
					}
				}
			}
		}
	}
}
