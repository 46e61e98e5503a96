package quant

import "math"

// RoPEPairs rotates the adjacent pairs of v (v[2i], v[2i+1]) by the angles
// whose cos and sin are interleaved in cs (cos θ0, sin θ0, cos θ1, …; the
// same length as v): v[2i] = x0·cos − x1·sin, v[2i+1] = x0·sin + x1·cos,
// each as llama.cpp's compiler contracts it into a fused multiply-add: the
// product of x1 rounded to float32, then x0·cos (x0·sin) plus that product
// with one rounding. The rounding is emulated in float64, whose sum of
// the exact product and a float32 differs from a float32 FMA about once
// in 2^29 (double rounding); the vector kernel computes exactly that, so
// both paths give the same bits.
func RoPEPairs(v, cs []float32) {
	if len(cs) != len(v) || len(v)%2 != 0 {
		panic("quant: RoPEPairs of mismatched lengths")
	}
	done := ropePairsVector(v, cs)
	v, cs = v[done:], cs[done:len(v)]
	for i := 0; i+1 < len(v); i += 2 {
		c, s := cs[i], cs[i+1]
		x0, x1 := v[i], v[i+1]
		v[i] = fma64(x0, c, -(x1 * s))
		v[i+1] = fma64(x0, s, x1*c)
	}
}

// RoPEHalves rotates the pairs (lo[i], hi[i]) by the angles with cos[i]
// and sin[i] (the neox layout's two halves of a head), with the arithmetic
// of RoPEPairs.
func RoPEHalves(lo, hi, cos, sin []float32) {
	n := len(lo)
	if len(hi) != n || len(cos) != n || len(sin) != n {
		panic("quant: RoPEHalves of mismatched lengths")
	}
	done := ropeHalvesVector(lo, hi, cos, sin)
	lo, hi, cos, sin = lo[done:], hi[done:n], cos[done:n], sin[done:n]
	for i, c := range cos {
		x0, x1 := lo[i], hi[i]
		lo[i] = fma64(x0, c, -(x1 * sin[i]))
		hi[i] = fma64(x0, sin[i], x1*c)
	}
}

// fma64 returns a·b+c rounded once to float64 and then to float32.
func fma64(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}
