//go:build amd64 && !noasm

package quant

// q2kx16Kernel is the Q2_Kx16 kernel chosen by useQ2Kx16 (nil: none).
var q2kx16Kernel PackedKernel

// q2kx16Ahead is how many bytes ahead of its loads the Q2_Kx16 kernel
// prefetches the weights into L1: five blocks. One-row products over
// 512 MiB on one Zen 5 core (BenchmarkDecodeStream, probe 42.9 GB/s):
// 31-33 GB/s at one block, 31-33 at two, 35 at three, 36-37.7 at four to
// eight. Not measured on Intel.
const q2kx16Ahead = 5 * Q2Kx16BlockBytes

// useQ2Kx16 selects the Q2_Kx16 kernel for isa: AVX-512 VNNI with BW, as
// the other repacked layouts.
func useQ2Kx16(isa string) {
	q2kx16Kernel = nil
	if isa == isaAVX512VNNI && hasTileISA {
		q2kx16Kernel = q2kx16
	}
}

// q2kx16 checks the buffers and runs the assembly kernel, which takes up
// to four activation rows at a time, or for one row (decode) the kernel
// that keeps its accumulators in registers.
func q2kx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ2Kx16(nb, w, a, astride, rows, dst, dstride)
	if rows == 1 {
		q2kx16DecodeAVX512VNNI(nb, &w[0], &a[0], &dst[0], q2kx16Ahead)
		return
	}
	var acc [TileRows * 8 * Q4x16Rows]float32 // eight lanes of each output
	for r := 0; r < rows; r += TileRows {
		q2kx16AVX512VNNI(nb, &w[0], &a[r*astride], astride, min(TileRows, rows-r), &dst[r*dstride], dstride, &acc[0], q2kx16Ahead)
	}
}

//go:noescape
func q2kx16AVX512VNNI(nb int, w *byte, a *byte, astride int, rows int, dst *float32, dstride int, acc *float32, pfd int)

//go:noescape
func q2kx16DecodeAVX512VNNI(nb int, w *byte, a *byte, dst *float32, pfd int)
