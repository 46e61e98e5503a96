//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// hasAVX2 reports whether the AVX2 activation quantizer can run.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasF16C

// quantQ8_0AVX2 quantizes up to nb blocks of src to Q8_0 at dst and
// returns how many it did: it stops before the first block whose largest
// magnitude is infinite, NaN or below 2⁻¹²¹ (where 127/amax overflows),
// which the scalar code handles.
//
//go:noescape
func quantQ8_0AVX2(dst *byte, src *float32, nb int) int

// quantizeActQ8_0Vector quantizes blocks from the start of src until it
// meets one it leaves to the scalar code, and returns how many it did.
func quantizeActQ8_0Vector(dst []byte, src []float32, nb int) int {
	if !hasAVX2 || nb == 0 {
		return 0
	}
	_ = dst[nb*q8_0Bytes-1]
	_ = src[nb*QK-1]
	return quantQ8_0AVX2(&dst[0], &src[0], nb)
}

// quantQ8_KAVX512 quantizes the 256 values at x to quants at qs and
// returns the inverse scale, or 0 (writing nothing) for a block it leaves
// to the scalar code: largest magnitude zero, non-finite or below 2⁻¹²¹.
//
//go:noescape
func quantQ8_KAVX512(qs *byte, x *float32) float32

// quantizeQ8_KVector is quantQ8_KAVX512 where the CPU has AVX-512, else 0.
func quantizeQ8_KVector(qs []byte, x []float32) float32 {
	if !hasAVX512F {
		return 0
	}
	_, _ = qs[QKK-1], x[QKK-1]
	return quantQ8_KAVX512(&qs[0], &x[0])
}
