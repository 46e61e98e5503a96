package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp compares Exp with float32(math.Exp(float64(x))) on special
// values (zeros, infinities, NaN, the overflow and underflow edges) and
// on millions of random values over the range softmax and SiLU use, at
// lengths around the vector width. Results must be equal bit for bit.
func TestExp(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 88.72283, 88.72284, 89, -87.33655, -103.27893, -103.972, -104, -150,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 1e-30, -1e-30}
	r := rand.New(rand.NewPCG(41, 43))
	for len(vals) < 1<<22 {
		switch r.IntN(3) {
		case 0:
			vals = append(vals, float32(r.NormFloat64()*3))
		case 1:
			vals = append(vals, float32(r.Float64()*220-110))
		default:
			vals = append(vals, -float32(r.ExpFloat64()*10))
		}
	}
	got := make([]float32, len(vals))
	Exp(got, vals)
	for i, x := range vals {
		if want := float32(math.Exp(float64(x))); !sameFloat(got[i], want) {
			t.Fatalf("Exp(%v = %#08x) = %v (%#08x), want %v (%#08x)", x, math.Float32bits(x), got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
	for n := range 20 {
		x := append([]float32(nil), vals[:n]...)
		dst := make([]float32, n+1)
		dst[n] = 7
		Exp(dst, x)
		Exp(x, x) // in place
		for i := range n {
			if !sameFloat(dst[i], x[i]) || !sameFloat(dst[i], float32(math.Exp(float64(vals[i])))) {
				t.Fatalf("length %d: element %d differs", n, i)
			}
		}
		if dst[n] != 7 {
			t.Fatalf("length %d: wrote past the end", n)
		}
	}
}

// BenchmarkExp measures Exp on 4096 values, per element.
func BenchmarkExp(b *testing.B) {
	x := randRow(rand.New(rand.NewPCG(1, 1)), 4096, 4)
	dst := make([]float32, len(x))
	for b.Loop() {
		Exp(dst, x)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
}
