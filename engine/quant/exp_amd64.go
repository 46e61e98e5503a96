//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// hasAVX512F reports whether the AVX-512 exponential can run.
var hasAVX512F = cpu.X86.HasAVX512F

// expAVX512 computes Exp for n elements, n a positive multiple of 8.
//
//go:noescape
func expAVX512(dst, src *float32, n int)

// expVector handles the longest multiple of 8 elements and returns how
// many it handled.
func expVector(dst, src []float32) int {
	n := len(src) &^ 7
	if !hasAVX512F || n == 0 {
		return 0
	}
	expAVX512(&dst[0], &src[0], n)
	return n
}
