package quant

import "encoding/binary"

// Q6_Kx16 is the in-memory layout of Q6_K weights that the CPU backend
// builds at load time where it has the kernel: 16 weight rows interleaved
// so that one 512-bit register holds four quants of each row, as in
// Q4_0x16, the 6-bit quants kept in 210 bytes per row and super-block as
// in GGUF. The kernel keeps the summation order of llama.cpp's
// ggml_vec_dot_q6_K_q8_K (AVX2, dotQ6_KQ8_K): per super-block, lane u of a
// row sums, exactly as an integer, the products of the unsigned quants of
// elements 32c+4u..32c+4u+3 of every 32-element chunk c times their group
// scale, less 32·(sc[2u]·bsum[2u] + sc[2u+1]·bsum[2u+1]); it is converted
// and fused-multiply-added with d_a·d_w into the lane's float, super-block
// after super-block, and the eight lanes are added as hsum_float_8 does.
// Both the exact and the default mode use it.
//
// A matrix of rows (a multiple of 16) × cols Q6_K values is rows/16
// groups; group g is cols/256 super-blocks of Q6Kx16BlockBytes:
//
//	bytes     0..31    the 16 rows' f16 d, row 0 first
//	bytes    32..287   group scales in pairs: byte 32+32c+2i+e is row i's
//	                   scale of group 2c+e (c = 0..7, e = 0, 1)
//	bytes  288..3359   16 steps of 192 bytes, in the order the kernels
//	                   read them: step s holds ql chunks q and q+8
//	                   (q = 16·(s/8) + s%8), then qh chunk s, where ql
//	                   chunk q holds row i's ql bytes 4q..4q+3 at 4i and
//	                   qh chunk s row i's qh bytes 4s..4s+3 at 4i
//
// A step is what one unpack of the kernels reads (four 64-quant chunks of
// every row), so a super-block is read front to back. With the 32 ql
// chunks first and the qh chunks after them, each step read three places
// of the super-block at once: one-row decode on two cores of an AMD Zen 5
// VM read Q6_Kx16 weights at 40.5 GB/s in that layout, 42.5 in this one
// (BenchmarkDecodeStream, medians of five alternated runs), and the
// four-stream kernel 37-39.5 against 40.3-41.8.
const Q6Kx16BlockBytes = Q4x16Rows * q6_KBytes

// Q6Kx16Bytes is the size of a rows × cols matrix in the Q6_Kx16 layout
// (the same as in GGUF).
func Q6Kx16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QKK) * Q6Kx16BlockBytes }

// RepackQ6Kx16 writes the Q6_K matrix src (rows × cols, GGUF layout) into
// dst in the Q6_Kx16 layout. rows must be a multiple of 16 and cols of 256.
func RepackQ6Kx16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q6_Kx16", dst, src, rows, cols, QKK, q6_KBytes, Q6Kx16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q6Kx16BlockBytes:][:Q6Kx16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q6_KBytes:][:q6_KBytes]
				copy(out[2*i:][:2], in[208:210])
				for j := range 16 {
					out[32+32*(j/2)+2*i+j%2] = in[192+j]
				}
				for q := range 32 {
					binary.LittleEndian.PutUint32(out[q6kx16QL(q)+4*i:], binary.LittleEndian.Uint32(in[4*q:]))
				}
				for s := range 16 {
					binary.LittleEndian.PutUint32(out[q6kx16QH(s)+4*i:], binary.LittleEndian.Uint32(in[128+4*s:]))
				}
			}
		}
	}
	return nil
}

// q6kx16QL is the offset in a Q6_Kx16 super-block of ql chunk q (0..31):
// the step that unpacks qh chunk s reads ql chunks q and q+8 with
// q = 16·(s/8) + s%8, and its three chunks lie together, ql chunk q
// first, then q+8, then qh chunk s.
func q6kx16QL(q int) int {
	s, slot := q%8+8*(q/16), (q/8)%2
	return 288 + 192*s + 64*slot
}

// q6kx16QH is the offset in a Q6_Kx16 super-block of qh chunk s (0..15).
func q6kx16QH(s int) int { return 288 + 192*s + 128 }

// unrepackQ6Kx16 writes row i of super-block blk of a Q6_Kx16 group back
// in the GGUF layout.
func unrepackQ6Kx16(out, blk []byte, i int) {
	copy(out[208:210], blk[2*i:])
	for j := range 16 {
		out[192+j] = blk[32+32*(j/2)+2*i+j%2]
	}
	for q := range 32 {
		copy(out[4*q:4*q+4], blk[q6kx16QL(q)+4*i:])
	}
	for s := range 16 {
		copy(out[128+4*s:128+4*s+4], blk[q6kx16QH(s)+4*i:])
	}
}

// Q6Kx16Reference is the pure-Go form of the Q6_Kx16 kernel, the oracle
// of its tests: each output is dotQ6_KQ8_K of the row (read back from the
// layout) and the activation row, bit for bit. aux is unused.
func Q6Kx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ6Kx16(nb, w, a, astride, rows, dst, dstride)
	row := make([]byte, nb*q6_KBytes)
	for i := range Q4x16Rows {
		for b := range nb {
			unrepackQ6Kx16(row[b*q6_KBytes:], w[b*Q6Kx16BlockBytes:], i)
		}
		for r := range rows {
			dst[r*dstride+i] = dotQ6_KQ8_K(nb*QKK, row, a[r*astride:])
		}
	}
}

// checkQ6Kx16 panics unless the buffers of a Q6_Kx16 kernel call are
// large enough, so that the assembly kernel never reads or writes past
// them.
func checkQ6Kx16(nb int, w []byte, a []byte, astride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q6_Kx16", Q6Kx16BlockBytes, q8_KBytes, 0, nb, w, a, astride, nil, 0, rows, dst, dstride)
}
