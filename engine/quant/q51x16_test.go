package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ51x16MatchesVecDot repacks random Q5_1 matrices of 16 rows and checks
// the Q5_1x16 reference and, where this CPU has it, the assembly kernel
// against dotQ5_1Q8_1 on the GGUF rows, bit for bit, for 1 to 8 activation
// rows with gaps between them: the layout keeps llama.cpp's order.
func TestQ51x16MatchesVecDot(t *testing.T) {
	forEachISA(t, testQ51x16MatchesVecDot)
}

func testQ51x16MatchesVecDot(t *testing.T) {
	kernels := map[string]PackedKernel{"reference": Q51x16Reference}
	if k := q51x16Kernel; k != nil {
		kernels["kernel"] = k
	}
	rng := rand.New(rand.NewPCG(131, 137))
	for iter := range 200 {
		nb := 1 + rng.IntN(30)
		n := nb * QK
		rb := nb * q5_1Bytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if iter%2 == 0 {
				quantizeQ5_1(row, randRow(rng, n, 1))
			} else {
				for j := range row {
					row[j] = byte(rng.Uint32())
				}
				for b := range nb { // finite scales and minimums
					row[b*q5_1Bytes+1] &= 0x7b
					row[b*q5_1Bytes+3] &= 0x7b
				}
			}
		}
		packed := make([]byte, Q51x16Bytes(Q4x16Rows, n))
		if err := RepackQ51x16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_1Bytes + rng.IntN(5)
		auxstride := Q8_1x16AuxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_1Bytes)
		aux := make([]uint32, (rows-1)*auxstride+Q8_1x16AuxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_1Bytes]
			quantizeQ8_1(row, randRow(rng, n, 3))
			Q8_1x16Aux(aux[r*auxstride:], row)
		}
		dstride := Q4x16Rows + iter%3
		for name, k := range kernels {
			got := make([]float32, (rows-1)*dstride+Q4x16Rows)
			k(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
			for r := range rows {
				for i := range Q4x16Rows {
					want := dotQ5_1Q8_1(n, w[i*rb:], a[r*astride:])
					if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s nb=%d rows=%d weight row %d activation row %d: %v, want %v", name, nb, rows, i, r, g, want)
					}
				}
			}
		}
	}
}
