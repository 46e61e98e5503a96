package quant

import "encoding/binary"

// Q2_Kx16 is the in-memory layout the CPU backend repacks Q2_K matrices
// into: 16 weight rows interleaved so that VPDPBUSD adds
// four products to each row's lane with no sum across lanes, in the same
// 84 bytes per row and super-block as the GGUF layout.
//
// A matrix of rows (a multiple of 16) × cols Q2_K values is rows/16
// groups; group g is cols/256 super-blocks of Q2Kx16BlockBytes:
//
//	bytes    0..31    the 16 rows' f16 d, row 0 first
//	bytes   32..63    their f16 dmin
//	bytes   64..319   scale bytes (minimum << 4 | scale) in pairs: byte
//	                  64+32p+2i+e is group 2p+e's of row i
//	bytes  320..1343  quants, lane by lane in the order the kernel reads
//	                  them: lane c holds chunk c of each 32-byte half h
//	                  of the block's qs, row i's bytes 32h+4c..32h+4c+3
//	                  at 4i..4i+3 (q2kx16Q)
//
// Bits 2j..2j+1 of chunk c of half h are the quants of elements
// 128h+32j+4c..+3, which belong to group 8h+2j+c/4 (groups of 16
// elements, each with its own 4-bit scale and minimum).
//
// Chunk c of either half holds, in every plane, the elements that lane
// c of llama.cpp's AVX2 vector dot product (ggml_vec_dot_q2_K_q8_K: what
// llama.cpp's builds that do not repack Q2_K compute, and the exact mode
// follows) sums, and scale pair p the minimums of its lane p. The
// summation order (Q2Kx16Reference) is that one: per row, eight float32
// lanes; per block, lane u first fused-multiply-adds the exact integer
// min·Σa of groups 2u and 2u+1 with −d_a·dmin, then the exact integer
// Σ scale·q·a of its elements with d_a·d; the lanes are added as hsum8
// at the end. The layout's products are the vector kernel's bit for bit,
// so both modes take it (but for the exact mode's native-fp16 build,
// whose Q2_K order is another: DotQ2_KRepacked).
const Q2Kx16BlockBytes = Q4x16Rows * q2_KBytes

// q2kx16Q is where quant chunk c of half h lies in a Q2_Kx16 block: in
// lane c, after the chunk of half 0.
func q2kx16Q(h, c int) int { return 320 + 128*c + 64*h }

// Q2Kx16Bytes is the size of a rows × cols matrix in the Q2_Kx16 layout.
func Q2Kx16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QKK) * Q2Kx16BlockBytes }

// RepackQ2Kx16 writes the Q2_K matrix src (rows × cols, GGUF layout) into
// dst in the Q2_Kx16 layout. rows must be a multiple of 16 and cols of 256.
func RepackQ2Kx16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q2_Kx16", dst, src, rows, cols, QKK, q2_KBytes, Q2Kx16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q2Kx16BlockBytes:][:Q2Kx16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q2_KBytes:][:q2_KBytes]
				scales, qs := in[:16], in[16:80]
				copy(out[2*i:][:2], in[80:82])
				copy(out[32+2*i:][:2], in[82:84])
				for p := range 8 {
					out[64+32*p+2*i] = scales[2*p]
					out[64+32*p+2*i+1] = scales[2*p+1]
				}
				for h := range 2 {
					for c := range 8 {
						binary.LittleEndian.PutUint32(out[q2kx16Q(h, c)+4*i:], binary.LittleEndian.Uint32(qs[32*h+4*c:]))
					}
				}
			}
		}
	}
	return nil
}

// Q2Kx16Reference is the pure-Go form of the Q2_Kx16 kernel: the
// definition of the layout's summation order and the oracle of its tests.
// The activation rows are Q8_K; their group sums (bsums) serve the
// minimums, so the layout takes no aux words.
func Q2Kx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ2Kx16(nb, w, a, astride, rows, dst, dstride)
	for r := range rows {
		var acc [Q4x16Rows][8]float32
		for b := range nb {
			blk := w[b*Q2Kx16BlockBytes:][:Q2Kx16BlockBytes]
			y := a[r*astride+b*q8_KBytes:][:q8_KBytes]
			da := f32At(y)
			for i := range Q4x16Rows {
				d, dmin := da*f16At(blk[2*i:]), -da*f16At(blk[32+2*i:])
				for u := range 8 {
					pair := blk[64+32*u+2*i:]
					p := int32(pair[0]>>4)*int32(int16(le.Uint16(y[260+4*u:]))) + int32(pair[1]>>4)*int32(int16(le.Uint16(y[262+4*u:])))
					acc[i][u] = fma32(dmin, float32(p), acc[i][u])
					var l int32
					for h := range 2 {
						for k := range 4 {
							g := 8*h + 2*k + u/4 // the group of this lane's four elements
							var s int32
							for e := range 4 {
								q := blk[q2kx16Q(h, u)+4*i+e] >> (2 * k) & 3
								s += int32(q) * int32(int8(y[4+128*h+32*k+4*u+e]))
							}
							l += int32(blk[64+32*(g/2)+2*i+g%2]&0xf) * s
						}
					}
					acc[i][u] = fma32(d, float32(l), acc[i][u])
				}
			}
		}
		for i := range Q4x16Rows {
			dst[r*dstride+i] = hsum8(&acc[i])
		}
	}
}

// checkQ2Kx16 is checkPackedCall for the Q2_Kx16 kernel, which takes no
// aux words.
func checkQ2Kx16(nb int, w []byte, a []byte, astride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q2_Kx16", Q2Kx16BlockBytes, q8_KBytes, 0, nb, w, a, astride, nil, 0, rows, dst, dstride)
}
