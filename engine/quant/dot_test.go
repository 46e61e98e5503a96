package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randRow(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// TestVecDotMatchesDequantized checks every weight format's dot product
// against dequantize-then-dot in float64 on random data.
func TestVecDotMatchesDequantized(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, typ := range []Type{F32, F16, BF16, Q8_0, Q4_0} {
		for _, n := range []int{32, 256, 1024} {
			if typ.BlockSize() > n {
				continue
			}
			w := randRow(r, n, 0.5)
			a := randRow(r, n, 2)
			wb := make([]byte, must(typ.RowBytes(n)))
			if err := Quantize(typ, wb, w); err != nil {
				t.Fatal(err)
			}
			vt := VecDotType(typ)
			ab := make([]byte, must(vt.RowBytes(n)))
			q, _ := QuantizeRowFor(vt)
			q(ab, a)
			wd, ad := make([]float32, n), make([]float32, n)
			if err := Dequantize(typ, wb, wd); err != nil {
				t.Fatal(err)
			}
			if err := Dequantize(vt, ab, ad); err != nil {
				t.Fatal(err)
			}
			var want, mag float64
			for i := range wd {
				want += float64(wd[i]) * float64(ad[i])
				mag += math.Abs(float64(wd[i]) * float64(ad[i]))
			}
			got := float64(VecDot(typ, n, wb, ab))
			if math.Abs(got-want) > 1e-5*mag {
				t.Errorf("%s n=%d: VecDot %g, dequantized dot %g", typ, n, got, want)
			}
		}
	}
}

func must(n int, err error) int {
	if err != nil {
		panic(err)
	}
	return n
}
