//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// hasF16C reports whether VCVTPH2PS is available (read once at start-up).
var hasF16C = cpu.X86.HasAVX && cpu.X86.HasF16C

// cvtHalf8 converts n halves (n a positive multiple of 8) at src to
// float32 at dst.
//
//go:noescape
func cvtHalf8(dst *float32, src *uint16, n int)

// halfToFloatVector converts the longest multiple of 8 elements it can and
// returns how many it converted.
func halfToFloatVector(dst []float32, src []uint16) int {
	n := len(src) &^ 7
	if !hasF16C || n == 0 {
		return 0
	}
	cvtHalf8(&dst[0], &src[0], n)
	return n
}

// cvtFloat8 converts n float32 values (n a positive multiple of 8) at src
// to halves at dst, rounding to nearest even.
//
//go:noescape
func cvtFloat8(dst *uint16, src *float32, n int)

// roundHalf8 rounds n float32 values (n a positive multiple of 8) at x to
// half precision and back, in place.
//
//go:noescape
func roundHalf8(x *float32, n int)

// floatToHalfVector converts the longest multiple of 8 elements it can and
// returns how many it converted.
func floatToHalfVector(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if !hasF16C || n == 0 {
		return 0
	}
	cvtFloat8(&dst[0], &src[0], n)
	return n
}

// roundToHalfVector rounds the longest multiple of 8 elements it can and
// returns how many it rounded.
func roundToHalfVector(x []float32) int {
	n := len(x) &^ 7
	if !hasF16C || n == 0 {
		return 0
	}
	roundHalf8(&x[0], n)
	return n
}
