package quant

// Q5_Kx16 is the in-memory layout of Q5_K weights that the CPU backend
// builds at load time where it has the kernel: 16 weight rows interleaved
// as in Q6_Kx16, the 6-bit group scales and minimums unpacked to bytes (180
// bytes per row and super-block instead of 176, as Q4_Kx16 does). The
// kernel keeps the summation order of llama.cpp's ggml_vec_dot_q5_K_q8_K
// (AVX2, dotQ5_KQ8_K): per super-block, lane u of a row sums, exactly as
// an integer, the products of the quants of elements 32c+4u..32c+4u+3 of
// every 32-element group c times the group's scale, converted and
// fused-multiply-added with d_a·d into the lane's float; the minimums'
// term Σ_c m_c·Σ a is summed exactly and fused-multiply-added with
// −d_a·dmin into one more float; the output is hsum_float_8 of the lanes
// plus that float. Both the exact and the default mode use it.
//
// A matrix of rows (a multiple of 16) × cols Q5_K values is rows/16
// groups; group g is cols/256 super-blocks of Q5Kx16BlockBytes:
//
//	bytes     0..31    the 16 rows' f16 d, row 0 first
//	bytes    32..63    their f16 dmin
//	bytes    64..191   group scales: byte 64+16c+i is group c's of row i
//	bytes   192..319   group minimums in pairs: byte 192+32k+2i+e is
//	                   group 2k+e's of row i
//	bytes   320..2879  8 lanes of 320 bytes, in the order the one-row
//	                   kernel reads them: lane u holds qs chunks u, 8+u,
//	                   16+u and 24+u, then qh chunk u, where qs chunk q
//	                   holds row i's qs bytes 4q..4q+3 at 4i and qh chunk
//	                   s its qh bytes 4s..4s+3 (q5kx16QS, q5kx16QH)
//
// A lane is what one step of the one-row kernel reads (the quants
// 4u..4u+3 of every group and their fifth bits), so a super-block is read
// front to back.
const Q5Kx16BlockBytes = Q4x16Rows * (q5_KBytes + 4)

// q5kx16QS is where qs chunk q (row i's qs bytes 4q..4q+3 at 4i) lies in
// a Q5_Kx16 super-block: in lane q%8, quarter q/8.
func q5kx16QS(q int) int { return 320 + 64*(5*(q%8)+q/8) }

// q5kx16QH is where qh chunk s lies in a Q5_Kx16 super-block: at the end
// of lane s.
func q5kx16QH(s int) int { return 320 + 64*(5*s+4) }

// Q5Kx16Bytes is the size of a rows × cols matrix in the Q5_Kx16 layout.
func Q5Kx16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QKK) * Q5Kx16BlockBytes }

// RepackQ5Kx16 writes the Q5_K matrix src (rows × cols, GGUF layout) into
// dst in the Q5_Kx16 layout. rows must be a multiple of 16 and cols of 256.
func RepackQ5Kx16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q5_Kx16", dst, src, rows, cols, QKK, q5_KBytes, Q5Kx16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q5Kx16BlockBytes:][:Q5Kx16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q5_KBytes:][:q5_KBytes]
				copy(out[2*i:][:2], in[0:2])
				copy(out[32+2*i:][:2], in[2:4])
				for c := range 8 {
					sc, m := scaleMinK4(c, in[4:16])
					out[64+16*c+i] = sc
					out[192+32*(c/2)+2*i+c%2] = m
				}
				for q := range 32 {
					copy(out[q5kx16QS(q)+4*i:][:4], in[48+4*q:][:4])
				}
				for s := range 8 {
					copy(out[q5kx16QH(s)+4*i:][:4], in[16+4*s:][:4])
				}
			}
		}
	}
	return nil
}

// Q5Kx16Reference is the pure-Go form of the Q5_Kx16 kernel, the oracle
// of its tests: each output is dotQ5_KQ8_K's, computed from the layout.
func Q5Kx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ5Kx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		for i := range Q4x16Rows {
			var acc [8]float32
			var summs float32
			for b := range nb {
				blk := w[b*Q5Kx16BlockBytes:][:Q5Kx16BlockBytes]
				y := a[r*astride+b*q8_KBytes:][:q8_KBytes]
				d8 := f32At(y)
				d := d8 * FP16ToFP32(le.Uint16(blk[2*i:]))
				dmin := -d8 * FP16ToFP32(le.Uint16(blk[32+2*i:]))
				var mins int32
				for c := range 8 {
					mins += int32(blk[192+32*(c/2)+2*i+c%2]) * (q8KBsum(y, 2*c) + q8KBsum(y, 2*c+1))
				}
				summs = fma32(dmin, float32(mins), summs)
				var lanes [8]int32
				for c := range 8 {
					sc := int32(blk[64+16*c+i])
					for u := range 8 {
						var s int32
						for k := range 4 {
							e := 4*u + k // element 32c+e
							nib := blk[q5kx16QS(8*(c/2)+u)+4*i+k] >> (4 * (c % 2)) & 0xf
							q := nib | (blk[q5kx16QH(u)+4*i+k]>>c&1)<<4
							s += int32(q) * int32(int8(y[4+32*c+e]))
						}
						lanes[u] += sc * s
					}
				}
				for u := range 8 {
					acc[u] = fma32(d, float32(lanes[u]), acc[u])
				}
			}
			dst[r*dstride+i] = hsum8(&acc) + summs
		}
	}
}

// checkQ5Kx16 panics unless the buffers of a Q5_Kx16 kernel call are
// large enough, so that the assembly kernel never reads or writes past
// them.
func checkQ5Kx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q5_Kx16", Q5Kx16BlockBytes, q8_KBytes, Q8_KAuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}
