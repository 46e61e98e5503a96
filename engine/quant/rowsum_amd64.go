//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// hasAVX reports whether 256-bit float vectors are available.
var hasAVX = cpu.X86.HasAVX

// addScaledRows8 is AddScaledRows for n elements, n a positive multiple of
// 8.
//
//go:noescape
func addScaledRows8(dst *float32, n int, coef *float32, rows int, m *float32, stride int)

// addScaledRowsVector handles the longest multiple of 8 elements of dst
// and returns how many it handled.
func addScaledRowsVector(dst, coef, m []float32, stride int) int {
	n := len(dst) &^ 7
	if !hasAVX || n == 0 {
		return 0
	}
	addScaledRows8(&dst[0], n, &coef[0], len(coef), &m[0], stride)
	return n
}

// scaleMul8 is ScaleMul for n elements, n a positive multiple of 8.
//
//go:noescape
func scaleMul8(dst, x, w *float32, n int, s float32)

// scaleMulVector handles the longest multiple of 8 elements of dst and
// returns how many it handled.
func scaleMulVector(dst, x, w []float32, s float32) int {
	n := len(dst) &^ 7
	if !hasAVX || n == 0 {
		return 0
	}
	scaleMul8(&dst[0], &x[0], &w[0], n, s)
	return n
}

// add8 is Add for n elements, n a positive multiple of 8.
//
//go:noescape
func add8(dst, x, y *float32, n int)

// addVector handles the longest multiple of 8 elements of dst and returns
// how many it handled.
func addVector(dst, x, y []float32) int {
	n := len(dst) &^ 7
	if !hasAVX || n == 0 {
		return 0
	}
	add8(&dst[0], &x[0], &y[0], n)
	return n
}

// squareSums8 is SquareSums8's loop for n elements, n a positive multiple
// of 8.
//
//go:noescape
func squareSums8(s *[8]float64, in *float32, n int)

// squareSums8Vector runs squareSums8 over in (a multiple of 8 elements)
// where the CPU has AVX, and reports whether it did.
func squareSums8Vector(s *[8]float64, in []float32) bool {
	if !hasAVX {
		return false
	}
	squareSums8(s, &in[0], len(in))
	return true
}
