//go:build arm64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// The F16x16 and BF16x16 kernels with NEON (f16x16_arm64.s), nil on a
// CPU without it. They take 1, 2 or 4 activation rows per pass; there is
// no multi-group decode kernel (Packed.Decode) here.
var f16x16Kernel, f16x16AccKernel, bf16x16Kernel, bf16x16AccKernel PackedKernel

var f16x16Decode, bf16x16Decode func(nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool)

const half16DecodeGroups = 4

// f16x16DecodeMulti and bf16x16DecodeMulti are never called here
// (f16x16DecodeRows and bf16x16DecodeRows are 0).
var f16x16DecodeMulti, bf16x16DecodeMulti func(nb int, w []byte, groupBytes int, a []byte, astride, rows int, dst []float32, dstride int, accumulate bool)

const f16x16DecodeRows, bf16x16DecodeRows = 0, 0

func init() {
	if !cpu.ARM64.HasASIMD {
		return
	}
	f16x16Kernel = func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
		half16NEON(false, false, nb, w, a, astride, rows, dst, dstride)
	}
	f16x16AccKernel = func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
		half16NEON(false, true, nb, w, a, astride, rows, dst, dstride)
	}
	bf16x16Kernel = func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
		half16NEON(true, false, nb, w, a, astride, rows, dst, dstride)
	}
	bf16x16AccKernel = func(nb int, w, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
		half16NEON(true, true, nb, w, a, astride, rows, dst, dstride)
	}
}

// half16NEON checks the buffers and runs the kernels of 4, 2 and 1
// activation rows over rows.
func half16NEON(bf, accumulate bool, nb int, w, a []byte, astride, rows int, dst []float32, dstride int) {
	checkHalf16(nb, w, a, astride, rows, dst, dstride, bf)
	n := nb * QK
	for r := 0; r < rows; {
		ap, dp := &a[r*astride], &dst[r*dstride]
		switch k := rows - r; {
		case k >= 4:
			if bf {
				bf16x16R4NEON(n, &w[0], ap, astride, dp, dstride, accumulate)
			} else {
				f16x16R4NEON(n, &w[0], ap, astride, dp, dstride, accumulate)
			}
			r += 4
		case k >= 2:
			if bf {
				bf16x16R2NEON(n, &w[0], ap, astride, dp, dstride, accumulate)
			} else {
				f16x16R2NEON(n, &w[0], ap, astride, dp, dstride, accumulate)
			}
			r += 2
		default:
			if bf {
				bf16x16R1NEON(n, &w[0], ap, astride, dp, dstride, accumulate)
			} else {
				f16x16R1NEON(n, &w[0], ap, astride, dp, dstride, accumulate)
			}
			r++
		}
	}
}

//go:noescape
func f16x16R4NEON(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16R2NEON(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func f16x16R1NEON(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16R4NEON(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16R2NEON(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

//go:noescape
func bf16x16R1NEON(n int, w *byte, a *byte, astride int, dst *float32, dstride int, accumulate bool)

// f16x16Pair and bf16x16Pair are never called here: the F16x16 and
// BF16x16 layouts have no pair kernel.
var f16x16Pair, bf16x16Pair PairKernel
