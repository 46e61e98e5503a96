//go:build amd64 && !noasm

package quant

import "unsafe"

// The kernels of the repacked layouts chosen by useQ4x16 (nil: none), and
// the Q4_0x16 kernel that adds to dst.
var q4x16Kernel, q4kx16Kernel, q8x16Kernel, q4x16AccKernel, q5x16Kernel, q6kx16Kernel, q5kx16Kernel, q51x16Kernel PackedKernel

// The four-stream decode kernels of the Q4_0x16, Q4_Kx16 and Q6_Kx16
// layouts (nil: none).
var q4x16Streams, q4kx16Streams, q6kx16Streams StreamKernel

// q4kx16Ahead is how many bytes ahead of its loads the Q4_Kx16 kernel
// prefetches the weights (see q4kx16_amd64.s): 1152 on Intel CPUs, 4608
// (two blocks) on others, as measured on Sapphire Rapids and Zen 5.
var q4kx16Ahead = 1152

// q4x16DecodeAhead is how many bytes ahead of its loads the one-row
// Q4_0x16 kernel (q4x16DecodeAVX512VNNI) prefetches the weights into L2:
// 2304 on Intel CPUs, 6912 on others. On a 2-core Sapphire Rapids VM
// 2304 read the most and 3456 or more less than no prefetch at all; on
// one AMD Zen 5 core (BenchmarkDecodeStream/Q4_0 under taskset, read
// probe 41-42 GB/s) 2304 read 35.1-36.4 GB/s, 4608 35.1-38.3, 6912
// 38.0-38.7, 9216 37.2-38.2, 13824 35.2-37.0 (four alternated rounds),
// and a 1B Q4_0 decode on that core ran 44.5-46.7 -> 46.5-48.0 tokens/s.
var q4x16DecodeAhead = 2304

// q6kx16DecodeNear and q6kx16DecodeFar are how many bytes ahead of its
// loads the one-row Q6_Kx16 kernel (q6kx16DecodeAVX512) prefetches every
// line into L1 and, further, into L2 only: with the L1 prefetch alone one
// core kept too few lines in flight. On Intel CPUs 3360 and 10080 (PFD
// and PFD+FAR in q6kx16_amd64.s; L1 at 3360 was measured on Sapphire
// Rapids, the L2 distance was not). On one AMD Zen 5 core
// (BenchmarkDecodeStream/Q6_K under taskset, read probe 42-43 GB/s),
// five alternated rounds: 3360 and 10080 read 32.9-34.9 GB/s, 5040 and
// 8400 35.3-37.1, 5880 and 8400 36.4-37.2 (L1 at 1680 30.5-32.5, L2 at
// 11760 or more 34.2-34.8; without the L2 prefetch 30.3-31.1).
var q6kx16DecodeNear, q6kx16DecodeFar = 3360, 10080

// The Q5_0x16 and Q5_1x16 kernels (Q4_1 included) prefetch the weights
// q5x16Ahead bytes ahead into L1 for several activation rows (and for
// one on Intel CPUs), and a one-row product on other CPUs q5x16DecodeAhead
// bytes ahead into L2 only, in a loop of its own (q5x16Args). On one AMD
// Zen 5 core (BenchmarkDecodeStream/Q5_0 under taskset, read probe 42-43
// GB/s, three alternated rounds) the one-row stream read 32.8-35.3 GB/s
// with L1 prefetches at 2304 bytes, 34.1-39.3 at 6912, 38.5-39.8 with L2
// prefetches at 6912 (35.6-37.6 at 4608; L1 and L2 prefetches of every
// line together 35.2-37.1); a 1B decode on that core 38.3-38.7 -> 42.7-43.1
// tokens/s (Q5_0). Prompts lost 4 % with the L2 prefetches and keep the L1
// ones.
const q5x16Ahead = 2304

var q5x16DecodeAhead, q5x16DecodeL2 = 6912, true

// q5x16Args is the Q5_0x16 and Q5_1x16 kernels' prefetch distance for a
// product of rows activation rows, and whether to run their one-row loop,
// which prefetches into L2 only.
func q5x16Args(rows int) (pfd int, l2 bool) {
	if rows == 1 && q5x16DecodeL2 {
		return q5x16DecodeAhead, true
	}
	return q5x16Ahead, false
}

// useQ4x16 selects the kernels of the repacked layouts for isa.
func useQ4x16(isa string) {
	q4kx16Ahead, q4x16DecodeAhead = 4608, 6912
	q6kx16DecodeNear, q6kx16DecodeFar = 5880, 8400
	q5x16DecodeL2, q6kx16PairRows, q5kx16PairRows = true, 8, 8
	if isIntel() {
		q5x16DecodeL2, q6kx16PairRows, q5kx16PairRows = false, 1, 1
		q4kx16Ahead, q4x16DecodeAhead = 1152, 2304
		q6kx16DecodeNear, q6kx16DecodeFar = 3360, 10080
	}
	q4x16Kernel, q4kx16Kernel, q8x16Kernel, q4x16AccKernel, q5x16Kernel, q6kx16Kernel, q5kx16Kernel, q51x16Kernel = nil, nil, nil, nil, nil, nil, nil, nil
	q4x16Streams, q4kx16Streams, q6kx16Streams = nil, nil, nil
	if isa == isaAVX512VNNI && hasTileISA {
		q4x16Streams, q4kx16Streams, q6kx16Streams = q4x16Decode4, q4kx16Decode4, q6kx16Decode4
		q4x16Kernel, q4kx16Kernel, q8x16Kernel, q4x16AccKernel, q5x16Kernel = q4x16, q4kx16, q8x16, q4x16Acc, q5x16
		q6kx16Kernel, q5kx16Kernel, q51x16Kernel = q6kx16, q5kx16, q51x16
	}
}

// q4x16 checks the buffers and runs the assembly kernel: for one
// activation row (decode) from a cache-line-aligned group, the one that
// reads each line once (q4x16DecodeAVX512VNNI), with the same sums.
func q4x16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ4x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	if rows == 1 && lineAligned(w) {
		q4x16DecodeAVX512VNNI(nb, &w[0], &a[0], &aux[0], &dst[0], false, q4x16DecodeAhead)
		return
	}
	q4x16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, false)
}

// q4x16Acc is q4x16 starting from dst's values instead of zero.
func q4x16Acc(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ4x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	if rows == 1 && lineAligned(w) {
		q4x16DecodeAVX512VNNI(nb, &w[0], &a[0], &aux[0], &dst[0], true, q4x16DecodeAhead)
		return
	}
	q4x16AVX512VNNI(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, true)
}

// lineAligned reports whether w starts on a 64-byte cache line.
func lineAligned(w []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(w)))%64 == 0
}

//go:noescape
func q4x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool)

//go:noescape
func q4x16DecodeAVX512VNNI(nb int, w *byte, a *byte, aux *uint32, dst *float32, accumulate bool, pfd int)

// q4kx16 checks the buffers and runs the assembly kernels: for one
// activation row (decode) the one-row kernel (q4kx16DecodeAVX512VNNI),
// else the general one, up to four activation rows at a time; both give
// the same sums.
func q4kx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ4Kx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	if rows == 1 {
		q4kx16DecodeAVX512VNNI(nb, &w[0], &a[0], &aux[0], &dst[0], q4kx16Ahead)
		return
	}
	for r := 0; r < rows; r += TileRows {
		q4kx16AVX512VNNI(nb, &w[0], &a[r*astride], astride, &aux[r*auxstride], auxstride, min(TileRows, rows-r), &dst[r*dstride], dstride, q4kx16Ahead)
	}
}

//go:noescape
func q4kx16DecodeAVX512VNNI(nb int, w *byte, a *byte, aux *uint32, dst *float32, pfd int)

//go:noescape
func q4kx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, pfd int)

// q8x16 checks the buffers and runs the assembly kernel, which takes two
// activation rows at a time (eight accumulators each).
func q8x16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ8x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := 0; r < rows; r += 2 {
		q8x16AVX512VNNI(nb, &w[0], &a[r*astride], astride, &aux[r*auxstride], auxstride, min(2, rows-r), &dst[r*dstride], dstride)
	}
}

//go:noescape
func q8x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int)

// q5x16 checks the buffers and runs the assembly kernel, which takes two
// activation rows at a time.
func q5x16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ5x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	pfd, l2 := q5x16Args(rows)
	for r := 0; r < rows; r += 2 {
		q5x16AVX512VNNI(nb, &w[0], &a[r*astride], astride, &aux[r*auxstride], auxstride, min(2, rows-r), &dst[r*dstride], dstride, pfd, l2)
	}
}

//go:noescape
func q5x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, pfd int, l2 bool)

// q6kx16Scratch is the scratch the Q6_Kx16 kernel unpacks a super-block
// into and keeps its float lanes in (see q6kx16_amd64.s).
const q6kx16Scratch = 5696 + 512*PackedRows

// q6kx16 checks the buffers and runs the assembly kernel: for one
// activation row (decode) the one that unpacks each weight chunk into a
// register and uses it at once, with the same sums.
func q6kx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ6Kx16(nb, w, a, astride, rows, dst, dstride)
	if rows == 1 {
		q6kx16DecodeAVX512(nb, &w[0], &a[0], &dst[0], q6kx16DecodeNear, q6kx16DecodeFar)
		return
	}
	if rows <= q6kx16PairRows {
		var lanes [2 * 8 * Q4x16Rows]float32
		for r := 0; r+1 < rows; r += 2 {
			q6kx16Decode2AVX512(nb, &w[0], &a[r*astride], astride, &dst[r*dstride], dstride, q6kx16DecodeNear, q6kx16DecodeFar, &lanes[0])
		}
		if rows%2 == 1 {
			q6kx16DecodeAVX512(nb, &w[0], &a[(rows-1)*astride], &dst[(rows-1)*dstride], q6kx16DecodeNear, q6kx16DecodeFar)
		}
		return
	}
	var scratch [q6kx16Scratch]byte
	q6kx16AVX512(nb, &w[0], &a[0], astride, rows, &dst[0], dstride, &scratch[0])
}

// q6kx16PairRows is the most activation rows the Q6_Kx16 kernel takes in
// pairs (q6kx16Decode2AVX512, with the one-row kernel for an odd last
// row) rather than in its general kernel, which unpacks every
// super-block into scratch once and reads it back for each pair of rows:
// 8 (always pairs) on AMD Zen 5, where in L2 (a 16-row group of 4864
// columns) the pairs took 819 against 1630 ns for two rows, 1672 against
// 2587 for four and 3393 against 4316 for eight; 1 (the general kernel,
// as measured there before) on Intel CPUs, where 512-bit integer work has
// two ports instead of four and the general kernel unpacks once for all
// eight rows (not measured with the pairs).
var q6kx16PairRows = 8

//go:noescape
func q6kx16Decode2AVX512(nb int, w *byte, a *byte, astride int, dst *float32, dstride int, near, far int, lanes *float32)

//go:noescape
func q6kx16DecodeAVX512(nb int, w *byte, a *byte, dst *float32, near, far int)

//go:noescape
func q6kx16AVX512(nb int, w *byte, a *byte, astride, rows int, dst *float32, dstride int, scratch *byte)

// q5kx16Scratch is the scratch of the Q5_Kx16 kernel (q5kx16_amd64.s).
const q5kx16Scratch = 4992 + 576*PackedRows

// q5kx16 checks the buffers and runs the assembly kernel: for one
// activation row (decode) the one that unpacks each weight chunk into a
// register and uses it at once, with the same sums.
func q5kx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ5Kx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	if rows == 1 {
		q5kx16DecodeAVX512(nb, &w[0], &a[0], &aux[0], &dst[0])
		return
	}
	if rows <= q5kx16PairRows {
		var lanes [2 * 9 * Q4x16Rows]float32
		for r := 0; r+1 < rows; r += 2 {
			q5kx16Decode2AVX512(nb, &w[0], &a[r*astride], astride, &aux[r*auxstride], auxstride, &dst[r*dstride], dstride, &lanes[0])
		}
		if rows%2 == 1 {
			q5kx16DecodeAVX512(nb, &w[0], &a[(rows-1)*astride], &aux[(rows-1)*auxstride], &dst[(rows-1)*dstride])
		}
		return
	}
	var scratch [q5kx16Scratch]byte
	q5kx16AVX512(nb, &w[0], &a[0], astride, &aux[0], auxstride, rows, &dst[0], dstride, &scratch[0])
}

// q5kx16PairRows is q6kx16PairRows for the Q5_Kx16 kernel
// (q5kx16Decode2AVX512): 8 on AMD Zen 5, 1 on Intel CPUs (not measured
// with the pairs).
var q5kx16PairRows = 8

//go:noescape
func q5kx16Decode2AVX512(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride int, dst *float32, dstride int, lanes *float32)

//go:noescape
func q5kx16DecodeAVX512(nb int, w *byte, a *byte, aux *uint32, dst *float32)

//go:noescape
func q5kx16AVX512(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, scratch *byte)

// q51x16 checks the buffers and runs the assembly kernel, which takes two
// activation rows at a time.
func q51x16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ51x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	pfd, l2 := q5x16Args(rows)
	for r := 0; r < rows; r += 2 {
		q51x16AVX512VNNI(nb, &w[0], &a[r*astride], astride, &aux[r*auxstride], auxstride, min(2, rows-r), &dst[r*dstride], dstride, pfd, l2)
	}
}

//go:noescape
func q51x16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, pfd int, l2 bool)

// q4x16Decode4 checks the buffers and runs the four-stream kernel.
func q4x16Decode4(nb int, w []byte, stride int, a []byte, aux []uint32, dst []float32, dstride int) {
	checkStreams(nb, Q4x16BlockBytes, q8_0Bytes, Q8_0AuxWords, w, stride, a, aux, dst, dstride)
	q4x16Decode4AVX512VNNI(nb, &w[0], stride, &a[0], &aux[0], &dst[0], dstride)
}

//go:noescape
func q4x16Decode4AVX512VNNI(nb int, w *byte, stride int, a *byte, aux *uint32, dst *float32, dstride int)

// q4kx16Decode4 checks the buffers and runs the four-stream kernel.
func q4kx16Decode4(nb int, w []byte, stride int, a []byte, aux []uint32, dst []float32, dstride int) {
	checkStreams(nb, Q4Kx16BlockBytes, q8_KBytes, Q8_KAuxWords, w, stride, a, aux, dst, dstride)
	q4kx16Decode4AVX512VNNI(nb, &w[0], stride, &a[0], &aux[0], &dst[0], dstride)
}

//go:noescape
func q4kx16Decode4AVX512VNNI(nb int, w *byte, stride int, a *byte, aux *uint32, dst *float32, dstride int)

// q6kx16Decode4 checks the buffers and runs the four-stream kernel.
func q6kx16Decode4(nb int, w []byte, stride int, a []byte, aux []uint32, dst []float32, dstride int) {
	checkStreams(nb, Q6Kx16BlockBytes, q8_KBytes, 0, w, stride, a, aux, dst, dstride)
	var scratch [2 * DecodeStreams * 8 * 64]byte // zeros: the float lanes start from them
	q6kx16Decode4AVX512(nb, &w[0], stride, &a[0], &dst[0], dstride, &scratch[0])
}

//go:noescape
func q6kx16Decode4AVX512(nb int, w *byte, stride int, a *byte, dst *float32, dstride int, scratch *byte)
