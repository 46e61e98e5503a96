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
