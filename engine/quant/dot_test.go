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
	for _, typ := range dotTypes {
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
			// Q8_1's s = d·Σq is rounded to f16 from the unrounded d, so
			// the weights' minimum term may differ from the dequantized
			// one by up to about 2 half-precision ulps of m·s.
			var tol float64
			if vt == Q8_1 {
				wbb := typ.BlockBytes()
				for b := 0; b < n/QK; b++ {
					tol += math.Abs(float64(f16At(wb[b*wbb+2:]) * f16At(ab[b*q8_1Bytes+2:])))
				}
				tol *= 0x1p-10
			}
			got := float64(VecDot(typ, n, wb, ab))
			if math.Abs(got-want) > 1e-5*mag+tol {
				t.Errorf("%s n=%d: VecDot %g, dequantized dot %g", typ, n, got, want)
			}
		}
	}
}

// dotTypes are the weight types with a dot product.
var dotTypes = []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}

// TestDotTable checks that every quantized type has a dot product unless
// it is an activation-only format.
func TestDotTable(t *testing.T) {
	for _, typ := range quantTypes {
		_, err := DotFor(typ)
		switch typ {
		case Q8_1, Q8_K:
			if err == nil {
				t.Errorf("%s: activation-only format has a dot product", typ)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", typ, err)
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
