package quant

import "math"

// dot32 adds the product of one 32-element block to 8 float lanes in the
// order of llama.cpp's AVX2 kernels for the 32-element formats: each group
// of 4 products is summed exactly as an integer and fused-multiply-added
// with the block's scale into lane j. q holds the weight's integer values
// (already offset), qy the activation's 32 int8 values.
func dot32(acc *[8]float32, d float32, q *[32]int32, qy []byte) {
	qy = qy[:32:32]
	for j := 0; j < 8; j++ {
		s := q[4*j]*int32(int8(qy[4*j])) + q[4*j+1]*int32(int8(qy[4*j+1])) +
			q[4*j+2]*int32(int8(qy[4*j+2])) + q[4*j+3]*int32(int8(qy[4*j+3]))
		acc[j] = fma32(d, float32(s), acc[j])
	}
}

// minMax returns the smallest and largest of x, both 0 when x is empty.
// Like llama.cpp's reference quantizers it starts from +/-FLT_MAX.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		lo = min(lo, v)
		hi = max(hi, v)
	}
	return lo, hi
}

// absMax returns the value of largest magnitude in x (the first one on
// ties), and that magnitude.
func absMax(x []float32) (v, amax float32) {
	for _, xi := range x {
		if a := float32(math.Abs(float64(xi))); a > amax {
			amax, v = a, xi
		}
	}
	return v, amax
}
