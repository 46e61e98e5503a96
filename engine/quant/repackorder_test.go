package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRepackedKOrders checks DotQ4_KGEMV and DotQ2_KRepacked (both
// orders) against the float64 product of the dequantized rows: they are
// the same sums in other orders, so they must agree to float32 rounding
// (bit-identity with llama.cpp is TestGGMLOracleQ4_KGEMV's and
// TestGGMLOracleQ2_KRepacked's, with the oracle).
func TestRepackedKOrders(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for iter := 0; iter < 40; iter++ {
		n := QKK * (1 + r.IntN(4))
		x, y := randRow(r, n, 1), randRow(r, n, 1)
		ab := make([]byte, must(Q8_K.RowBytes(n)))
		quantizeQ8_K(ab, y)
		ad := make([]float32, n)
		dequantizeQ8_K(ab, ad)
		for _, c := range []struct {
			typ Type
			dot func(w []byte) float32
		}{
			{Q4_K, func(w []byte) float32 { return DotQ4_KGEMV(n, w, ab) }},
			{Q2_K, func(w []byte) float32 { return DotQ2_KRepacked(n, w, ab, false) }},
			{Q2_K, func(w []byte) float32 { return DotQ2_KRepacked(n, w, ab, true) }},
		} {
			w := make([]byte, must(c.typ.RowBytes(n)))
			if err := Quantize(c.typ, w, x); err != nil {
				t.Fatal(err)
			}
			wd := make([]float32, n)
			if err := Dequantize(c.typ, w, wd); err != nil {
				t.Fatal(err)
			}
			var want, mag float64
			for i := range n {
				want += float64(wd[i]) * float64(ad[i])
				mag += math.Abs(float64(wd[i]) * float64(ad[i]))
			}
			if got := float64(c.dot(w)); math.Abs(got-want) > 1e-5*mag+1e-6 {
				t.Fatalf("%s n=%d: %g, float64 reference %g", c.typ, n, got, want)
			}
		}
	}
}
