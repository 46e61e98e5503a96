//go:build amd64 && !noasm

package quant

// iq4xsx16Kernel and iq4xsx16AccKernel are the IQ4_XSx16 kernels chosen by
// useIQ4x16 (nil: none).
var iq4xsx16Kernel, iq4xsx16AccKernel PackedKernel

// useIQ4x16 selects the IQ4_XSx16 and IQ4_NLx16 kernels for isa: AVX-512 VNNI with BW
// (VPSHUFB on 512 bits), as the other repacked layouts.
func useIQ4x16(isa string) {
	iq4xsx16Kernel, iq4xsx16AccKernel, iq4nlx16Kernel, iq4nlx16AccKernel = nil, nil, nil, nil
	if isa == isaAVX512VNNI && hasTileISA {
		iq4xsx16Kernel, iq4xsx16AccKernel = iq4xsx16, iq4xsx16Acc
		iq4nlx16Kernel, iq4nlx16AccKernel = iq4nlx16, iq4nlx16Acc
	}
}

// iq4xsx16 checks the buffers and runs the assembly kernel.
func iq4xsx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkIQ4XSx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	iq4xsx16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, false)
}

// iq4xsx16Acc is iq4xsx16 starting from dst's values instead of zero.
func iq4xsx16Acc(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkIQ4XSx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	iq4xsx16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, true)
}

//go:noescape
func iq4xsx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool)

// iq4nlx16Kernel and iq4nlx16AccKernel are the IQ4_NLx16 kernels chosen by
// useIQ4x16 (nil: none).
var iq4nlx16Kernel, iq4nlx16AccKernel PackedKernel

// iq4nlx16 checks the buffers and runs the assembly kernel.
func iq4nlx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ4x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	iq4nlx16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, false)
}

// iq4nlx16Acc is iq4nlx16 starting from dst's values instead of zero.
func iq4nlx16Acc(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ4x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	iq4nlx16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, true)
}

//go:noescape
func iq4nlx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool)
