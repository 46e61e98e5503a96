//go:build amd64 && !noasm

package quant

// ropePairsVector rotates the longest multiple of 8 values of v with
// AVX-512 and returns how many it rotated.
func ropePairsVector(v, cs []float32) int {
	n := len(v) &^ 7
	if !hasAVX512F || n == 0 {
		return 0
	}
	_ = cs[n-1]
	ropePairsAVX512(&v[0], &cs[0], n)
	return n
}

// ropeHalvesVector rotates the longest multiple of 8 pairs with AVX-512
// and returns how many it rotated.
func ropeHalvesVector(lo, hi, cos, sin []float32) int {
	n := len(lo) &^ 7
	if !hasAVX512F || n == 0 {
		return 0
	}
	_, _, _ = hi[n-1], cos[n-1], sin[n-1]
	ropeHalvesAVX512(&lo[0], &hi[0], &cos[0], &sin[0], n)
	return n
}

//go:noescape
func ropePairsAVX512(v, cs *float32, n int)

//go:noescape
func ropeHalvesAVX512(lo, hi, cos, sin *float32, n int)
