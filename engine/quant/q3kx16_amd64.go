//go:build amd64 && !noasm

package quant

// q3kx16Kernel is the Q3_Kx16 kernel chosen by useQ3Kx16 (nil: none).
var q3kx16Kernel PackedKernel

// q3kx16Ahead is how many bytes ahead of its loads the Q3_Kx16 kernel
// prefetches the weights into L1: five blocks. One-row products over
// 512 MiB on one Zen 5 core (BenchmarkDecodeStream, probe 41.9 GB/s):
// 31.6-32.2 GB/s at one block, 27.6-33.8 at three, 36.5-36.6 at five,
// 34.3-35.2 at seven. Not measured on Intel.
const q3kx16Ahead = 5 * Q3Kx16BlockBytes

// useQ3Kx16 selects the Q3_Kx16 kernel for isa: AVX-512 VNNI with BW, as
// the other repacked layouts.
func useQ3Kx16(isa string) {
	q3kx16Kernel = nil
	if isa == isaAVX512VNNI && hasTileISA {
		q3kx16Kernel = q3kx16
	}
}

// q3kx16 checks the buffers and runs the assembly kernel, which takes up
// to four activation rows at a time.
func q3kx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ3Kx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	var acc [TileRows * 8 * Q4x16Rows]float32 // eight lanes of each output
	for r := 0; r < rows; r += TileRows {
		q3kx16AVX512VNNI(nb, &w[0], &a[r*astride], astride, &aux[r*auxstride], auxstride, min(TileRows, rows-r), &dst[r*dstride], dstride, &acc[0], q3kx16Ahead)
	}
}

//go:noescape
func q3kx16AVX512VNNI(nb int, w *byte, a *byte, astride int, aux *uint32, auxstride int, rows int, dst *float32, dstride int, acc *float32, pfd int)
