package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ51x16MatchesVecDot repacks random Q5_1 matrices of 16 rows, and
// Q4_1 ones (RepackQ41x16), and checks the Q5_1x16 reference and, where
// this CPU has it, the assembly kernel against dotQ5_1Q8_1 and dotQ4_1Q8_1
// on the GGUF rows, bit for bit, for 1 to 8 activation rows with gaps
// between them: the layout keeps llama.cpp's order for both types.
func TestQ51x16MatchesVecDot(t *testing.T) {
	for _, tc := range q51x16Cases {
		t.Run(tc.typ.String(), func(t *testing.T) {
			forEachISA(t, func(t *testing.T) { testQ51x16MatchesVecDot(t, tc) })
		})
	}
}

// q51x16Cases are the weight types that the Q5_1x16 layout holds.
var q51x16Cases = []q51x16Case{
	{Q5_1, q5_1Bytes, quantizeQ5_1, dotQ5_1Q8_1, RepackQ51x16},
	{Q4_1, q4_1Bytes, quantizeQ4_1, dotQ4_1Q8_1, RepackQ41x16},
}

// q51x16Case is a weight type that the Q5_1x16 layout holds.
type q51x16Case struct {
	typ      Type
	bytes    int // GGUF block bytes
	quantize func(dst []byte, src []float32)
	dot      func(n int, w, a []byte) float32
	repack   func(dst, src []byte, rows, cols int) error
}

func testQ51x16MatchesVecDot(t *testing.T, tc q51x16Case) {
	kernels := map[string]PackedKernel{"reference": Q51x16Reference}
	if k := q51x16Kernel; k != nil {
		kernels["kernel"] = k
	}
	rng := rand.New(rand.NewPCG(131, 137))
	for iter := range 200 {
		nb := 1 + rng.IntN(30)
		n := nb * QK
		rb := nb * tc.bytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if iter%2 == 0 {
				tc.quantize(row, randRow(rng, n, 1))
			} else {
				for j := range row {
					row[j] = byte(rng.Uint32())
				}
				for b := range nb { // finite scales and minimums
					row[b*tc.bytes+1] &= 0x7b
					row[b*tc.bytes+3] &= 0x7b
				}
			}
		}
		packed := make([]byte, Q51x16Bytes(Q4x16Rows, n))
		if err := tc.repack(packed, w, Q4x16Rows, n); err != nil {
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
					want := tc.dot(n, w[i*rb:], a[r*astride:])
					if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s nb=%d rows=%d weight row %d activation row %d: %v, want %v", name, nb, rows, i, r, g, want)
					}
				}
			}
		}
	}
}
