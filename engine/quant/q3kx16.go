package quant

import "encoding/binary"

// Q3_Kx16 is the in-memory layout the CPU backend repacks Q3_K matrices
// into: 16 weight rows interleaved so that VPDPBUSD adds four products to
// each row's lane with no sum across lanes. The packed 6-bit group scales
// are unpacked to bytes, so a block takes 114 bytes per row instead of
// 110.
//
// A matrix of rows (a multiple of 16) × cols Q3_K values is rows/16
// groups; group g is cols/256 super-blocks of Q3Kx16BlockBytes:
//
//	bytes    0..31    the 16 rows' f16 d, row 0 first
//	bytes   32..287   group scales (−32..31) in pairs: pair 4e+2h+k,
//	                  32 bytes, holds at 2i+t the scale of group
//	                  8h+2(2k+t)+e of row i
//	bytes  288..1823  eight lanes of 192 bytes, in the order the kernel
//	                  reads them: lane c holds high chunk c (row i's
//	                  hmask bytes 4c..4c+3 at 4i..4i+3), then low chunk c
//	                  of each 32-byte half h of the block's qs (row i's
//	                  qs bytes 32h+4c..32h+4c+3 at 4i..4i+3): q3kx16Hi,
//	                  q3kx16Lo
//
// Element 128h+32j+4c+l (j, l < 4) of a row is q = (bits 2j..2j+1 of
// byte l of low chunk c of half h) + 4·(bit 4h+j of byte l of high chunk
// c) − 4, in group 8h+2j+c/4.
//
// Chunk c holds the elements that lane c of llama.cpp's AVX2 vector dot
// product (ggml_vec_dot_q3_K_q8_K: what llama.cpp's x86 builds compute,
// and the exact mode follows) sums, and the summation order
// (Q3Kx16Reference) is that one: per row, eight float32 lanes; per
// block, lane u fused-multiply-adds the exact integer Σ scale·q·a of its
// elements with d_a·d; the lanes are added as hsum8 at the end. The
// layout's products are the vector kernel's bit for bit, so both modes
// take it. The kernel multiplies q + 4 (0..7) with VPDPBUSD and takes
// away 4·scale·Σa, whose sums of four activations come with the
// activation row (Q3Kx16Aux).
const Q3Kx16BlockBytes = Q4x16Rows * (q3_KBytes + 4)

// q3kx16Hi is where high chunk c lies in a Q3_Kx16 block: at the start
// of lane c.
func q3kx16Hi(c int) int { return 288 + 192*c }

// q3kx16Lo is where low chunk c of half h lies in a Q3_Kx16 block: after
// lane c's high chunk.
func q3kx16Lo(h, c int) int { return 288 + 192*c + 64*(1+h) }

// Q3Kx16AuxWords is the number of uint32 words Q3Kx16Aux writes per block.
const Q3Kx16AuxWords = 32

// Q3Kx16Bytes is the size of a rows × cols matrix in the Q3_Kx16 layout.
func Q3Kx16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QKK) * Q3Kx16BlockBytes }

// RepackQ3Kx16 writes the Q3_K matrix src (rows × cols, GGUF layout) into
// dst in the Q3_Kx16 layout. rows must be a multiple of 16 and cols of 256.
func RepackQ3Kx16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q3_Kx16", dst, src, rows, cols, QKK, q3_KBytes, Q3Kx16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q3Kx16BlockBytes:][:Q3Kx16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q3_KBytes:][:q3_KBytes]
				hmask, qs, scales := in[0:32], in[32:96], in[96:108]
				copy(out[2*i:][:2], in[108:110])
				for p := range 8 {
					e, h, k := p/4, p/2%2, p%2
					for t := range 2 {
						out[32+32*p+2*i+t] = byte(int8(q3KScale(scales, 8*h+2*(2*k+t)+e)))
					}
				}
				for c := range 8 {
					binary.LittleEndian.PutUint32(out[q3kx16Hi(c)+4*i:], binary.LittleEndian.Uint32(hmask[4*c:]))
					for h := range 2 {
						binary.LittleEndian.PutUint32(out[q3kx16Lo(h, c)+4*i:], binary.LittleEndian.Uint32(qs[32*h+4*c:]))
					}
				}
			}
		}
	}
	return nil
}

// Q3Kx16Aux writes, for each block of the Q8_K activation row a, −4 times
// the sums of its groups of four quants as int16 pairs: word 4c+2h+k
// holds those of elements 128h+32j+4c.. for j = 2k (low half) and 2k+1.
func Q3Kx16Aux(aux []uint32, a []byte) {
	nb := len(a) / q8_KBytes
	aux = aux[:Q3Kx16AuxWords*nb]
	for b := range nb {
		q := a[b*q8_KBytes+4:][:QKK]
		for c := range 8 {
			for h := range 2 {
				for k := range 2 {
					var s [2]int16
					for t := range 2 {
						j := 2*k + t
						for l := range 4 {
							s[t] += int16(int8(q[128*h+32*j+4*c+l]))
						}
						s[t] *= -4
					}
					aux[Q3Kx16AuxWords*b+4*c+2*h+k] = uint32(uint16(s[0])) | uint32(uint16(s[1]))<<16
				}
			}
		}
	}
}

// Q3Kx16Reference is the pure-Go form of the Q3_Kx16 kernel: the
// definition of the layout's summation order and the oracle of its tests.
func Q3Kx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ3Kx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		var acc [Q4x16Rows][8]float32
		for b := range nb {
			blk := w[b*Q3Kx16BlockBytes:][:Q3Kx16BlockBytes]
			y := a[r*astride+b*q8_KBytes:][:q8_KBytes]
			da := f32At(y)
			for i := range Q4x16Rows {
				d := da * f16At(blk[2*i:])
				for u := range 8 {
					var l int32
					for h := range 2 {
						for j := range 4 {
							sc := int32(int8(blk[32+32*(4*(u/4)+2*h+j/2)+2*i+j%2]))
							var s int32
							for e := range 4 {
								lo := int32(blk[q3kx16Lo(h, u)+4*i+e] >> (2 * j) & 3)
								hi := int32(blk[q3kx16Hi(u)+4*i+e] >> (4*h + j) & 1)
								s += (lo + 4*hi - 4) * int32(int8(y[4+128*h+32*j+4*u+e]))
							}
							l += sc * s
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

// checkQ3Kx16 is checkQ4x16 for the Q3_Kx16 kernel.
func checkQ3Kx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q3_Kx16", Q3Kx16BlockBytes, q8_KBytes, Q3Kx16AuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}
