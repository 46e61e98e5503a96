package quant

import "encoding/binary"

// Q4_Kx16 is the in-memory layout the CPU backend repacks Q4_K matrices
// into, like Q4_0x16: 16 weight rows interleaved so that VPDPBUSD adds
// four products to each row's lane with no sum across lanes. The 6-bit
// group scales and minimums are unpacked to bytes, so a block takes 148
// bytes per row instead of 144.
//
// A matrix of rows (a multiple of 16) × cols Q4_K values is rows/16
// groups; group g is cols/256 super-blocks of Q4Kx16BlockBytes:
//
//	bytes    0..31    the 16 rows' f16 d, row 0 first
//	bytes   32..63    their f16 dmin
//	bytes   64..191   group scales: byte 64+16j+i is group j's of row i
//	bytes  192..319   group minimums in pairs: byte 192+32k+2i+e is
//	                  group 2k+e's of row i
//	bytes  320..2367  quants: for each 32-byte half k of the block's
//	                  qs, eight 64-byte chunks; chunk c holds row i's
//	                  bytes 32k+4c..32k+4c+3 at 4i..4i+3
//
// so chunk c of half k holds elements 64k+4c.. (group 2k) in its low
// nibbles and 64k+32+4c.. (group 2k+1) in its high nibbles.
//
// The summation order (Q4Kx16Reference) is that of llama.cpp's repacked
// Q4_K matrix kernel (ggml_gemm_q4_K_8x8_q8_K, which llama.cpp uses on
// every AVX2 machine for matrices of a multiple of 8 rows and batches of
// four rows or more, prompts included): per block, row and 64-element
// half (groups 2k and 2k+1), the exact integer sums sc·Σ q·a and m·Σ a of
// the half are fused-multiply-added with d·d_a and dmin·d_a into two
// float32 accumulators, half after half, and the output is their
// difference. (llama.cpp's vector kernel for fewer rows, gemv, adds a
// whole block's integers first: its decode is not batch-invariant; ruvllm
// takes the prompt order everywhere.)
const Q4Kx16BlockBytes = Q4x16Rows * (q4_KBytes + 4)

// Q8_KAuxWords is the number of uint32 words Q8_KAux writes per block.
const Q8_KAuxWords = 4

// Q4Kx16Bytes is the size of a rows × cols matrix in the Q4_Kx16 layout.
func Q4Kx16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QKK) * Q4Kx16BlockBytes }

// RepackQ4Kx16 writes the Q4_K matrix src (rows × cols, GGUF layout) into
// dst in the Q4_Kx16 layout. rows must be a multiple of 16 and cols of 256.
func RepackQ4Kx16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q4_Kx16", dst, src, rows, cols, QKK, q4_KBytes, Q4Kx16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q4Kx16BlockBytes:][:Q4Kx16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q4_KBytes:][:q4_KBytes]
				copy(out[2*i:][:2], in[0:2])
				copy(out[32+2*i:][:2], in[2:4])
				for j := range 8 {
					sc, m := scaleMinK4(j, in[4:16])
					out[64+16*j+i] = sc
					out[192+32*(j/2)+2*i+j%2] = m
				}
				for k := range 4 {
					for c := range 8 {
						binary.LittleEndian.PutUint32(out[320+512*k+64*c+4*i:], binary.LittleEndian.Uint32(in[16+32*k+4*c:]))
					}
				}
			}
		}
	}
	return nil
}

// Q8_KAux writes, for each block of the Q8_K activation row a, the sums
// of its eight groups of 32 quants as int16 pairs (groups 2k and 2k+1 in
// word k), which the Q4_Kx16 kernel multiplies with the minimums.
func Q8_KAux(aux []uint32, a []byte) {
	nb := len(a) / q8_KBytes
	aux = aux[:Q8_KAuxWords*nb]
	for b := range nb {
		bs := a[b*q8_KBytes+260:][:32]
		for k := range 4 {
			var s [2]int16
			for e := range 2 {
				j := 2*k + e
				s[e] = int16(le.Uint16(bs[4*j:])) + int16(le.Uint16(bs[4*j+2:]))
			}
			aux[4*b+k] = uint32(uint16(s[0])) | uint32(uint16(s[1]))<<16
		}
	}
}

// Q4Kx16Reference is the pure-Go form of the Q4_Kx16 kernel: the
// definition of the layout's summation order and the oracle of its tests.
func Q4Kx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ4Kx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		var acc, accMin [Q4x16Rows]float32
		for b := range nb {
			blk := w[b*Q4Kx16BlockBytes:][:Q4Kx16BlockBytes]
			y := a[r*astride+b*q8_KBytes:][:q8_KBytes]
			da := f32At(y)
			for i := range Q4x16Rows {
				d := FP16ToFP32(uint16(blk[2*i]) | uint16(blk[2*i+1])<<8)
				dmin := FP16ToFP32(uint16(blk[32+2*i]) | uint16(blk[32+2*i+1])<<8)
				for k := range 4 {
					var lo, hi int32
					for c := range 8 {
						for e := range 4 {
							q := blk[320+512*k+64*c+4*i+e]
							lo += int32(q&0xf) * int32(int8(y[4+64*k+4*c+e]))
							hi += int32(q>>4) * int32(int8(y[4+64*k+32+4*c+e]))
						}
					}
					sumi := int32(blk[64+16*(2*k)+i])*lo + int32(blk[64+16*(2*k+1)+i])*hi
					s := aux[r*auxstride+Q8_KAuxWords*b+k]
					summ := int32(blk[192+32*k+2*i])*int32(int16(s)) + int32(blk[192+32*k+2*i+1])*int32(int16(s>>16))
					acc[i] = fma32(float32(sumi), d*da, acc[i])
					accMin[i] = fma32(float32(summ), dmin*da, accMin[i])
				}
			}
		}
		for i := range Q4x16Rows {
			dst[r*dstride+i] = acc[i] - accMin[i]
		}
	}
}

// checkQ4Kx16 is checkQ4x16 for the Q4_Kx16 kernel.
func checkQ4Kx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q4_Kx16", Q4Kx16BlockBytes, q8_KBytes, Q8_KAuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}
