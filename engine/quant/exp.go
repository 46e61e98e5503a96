package quant

import "math"

// Exp sets dst[i] = float32(math.Exp(float64(src[i]))) for every element
// of src (len(dst) ≥ len(src); dst may be src). On amd64 with AVX-512 it
// evaluates eight at a time in float64 (range reduction by ln 2 and a
// degree-13 polynomial, error a few float64 ulps), so the rounded float32
// equals math.Exp's except where the exact value lies within those few
// float64 ulps of a float32 rounding boundary (the test found none in
// millions of values). It is the exponential of softmax and SiLU.
func Exp(dst, src []float32) {
	dst = dst[:len(src)]
	i := expVector(dst, src)
	for ; i < len(src); i++ {
		dst[i] = float32(math.Exp(float64(src[i])))
	}
}
