//go:build amd64 && !noasm

package quant

// iq4xsx16Kernel and iq4xsx16AccKernel are the IQ4_XSx16 kernels chosen by
// useIQ4x16 (nil: none).
var iq4xsx16Kernel, iq4xsx16AccKernel PackedKernel

// iq4xsx16Ahead and iq4xsx16DecodeAhead are how many bytes ahead of the
// block being read the IQ4_XSx16 kernel prefetches the weights into L1,
// for several activation rows and for one. On a 2-core Sapphire Rapids VM
// (whose plain read stream gets 37 GB/s) one-row products streamed 24
// GB/s without prefetch, 26.4-27.8 at one block (2240 bytes) and
// 24.7-24.9 at two (BenchmarkDecodeStream): a 1B-shape IQ4_XS file
// decoded 34.6-34.7 tokens/s against 30.7-31.6, its prompts as fast or
// 2-3 % faster. One AMD Zen 5 core (the same benchmark under taskset,
// read probe 41-42 GB/s, alternated builds) streams 28.8-30.8 GB/s at one
// block, 31.0-33.1 at one and a half, 32.9-35.8 at three, 31.8-33.8 at
// four, 31.1-33.3 at five, and decodes the 1B file at 40.1-41.2 ->
// 48.3-49.6 tokens/s with three; its 512-token prompts ran 1 % slower at
// three blocks, so they keep one. So decode takes 2240 on Intel CPUs and
// 6720 on others, prompts 2240.
const iq4xsx16Ahead = 2240

var iq4xsx16DecodeAhead = 2240

// iq4nlx16Ahead and iq4nlx16DecodeAhead are how many bytes ahead of its
// loads the IQ4_NLx16 kernel prefetches the weights into L2, for several
// activation rows and for one: the Q4_0x16 kernel's 2304, but for decode
// on CPUs other than Intel's. One Zen 5 core (BenchmarkDecodeStream under
// taskset, read probe 42-43 GB/s, three alternated rounds) streamed
// 34.6-36.2 GB/s at 2304, 37.1-39.4 at 4608, 33.9-41.0 at 6912 and
// 35.4-39.4 at 9216; 1B decode on that core 44.9-45.5 -> 46.5-48.1
// tokens/s at 4608.
const iq4nlx16Ahead = 2304

var iq4nlx16DecodeAhead = 2304

// useIQ4x16 selects the IQ4_XSx16 and IQ4_NLx16 kernels for isa: AVX-512 VNNI with BW
// (VPSHUFB on 512 bits), as the other repacked layouts.
func useIQ4x16(isa string) {
	iq4xsx16DecodeAhead, iq4nlx16DecodeAhead = 6720, 4608
	if isIntel() {
		iq4xsx16DecodeAhead, iq4nlx16DecodeAhead = iq4xsx16Ahead, iq4nlx16Ahead
	}
	iq4xsx16Kernel, iq4xsx16AccKernel, iq4nlx16Kernel, iq4nlx16AccKernel = nil, nil, nil, nil
	if isa == isaAVX512VNNI && hasTileISA {
		iq4xsx16Kernel, iq4xsx16AccKernel = iq4xsx16, iq4xsx16Acc
		iq4nlx16Kernel, iq4nlx16AccKernel = iq4nlx16, iq4nlx16Acc
	}
}

// iq4xsx16 checks the buffers and runs the assembly kernel.
func iq4xsx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkIQ4XSx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	iq4xsx16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, false, aheadFor(rows, iq4xsx16Ahead, iq4xsx16DecodeAhead))
}

// iq4xsx16Acc is iq4xsx16 starting from dst's values instead of zero.
func iq4xsx16Acc(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkIQ4XSx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	iq4xsx16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, true, aheadFor(rows, iq4xsx16Ahead, iq4xsx16DecodeAhead))
}

// aheadFor is the prefetch distance of a kernel call of rows activation
// rows: decode's for one row, else the one for several.
func aheadFor(rows, several, decode int) int {
	if rows == 1 {
		return decode
	}
	return several
}

//go:noescape
func iq4xsx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool, pfd int)

// iq4nlx16Kernel and iq4nlx16AccKernel are the IQ4_NLx16 kernels chosen by
// useIQ4x16 (nil: none).
var iq4nlx16Kernel, iq4nlx16AccKernel PackedKernel

// iq4nlx16 checks the buffers and runs the assembly kernel.
func iq4nlx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ4x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	iq4nlx16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, false, aheadFor(rows, iq4nlx16Ahead, iq4nlx16DecodeAhead))
}

// iq4nlx16Acc is iq4nlx16 starting from dst's values instead of zero.
func iq4nlx16Acc(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ4x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	iq4nlx16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, true, aheadFor(rows, iq4nlx16Ahead, iq4nlx16DecodeAhead))
}

//go:noescape
func iq4nlx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool, pfd int)
