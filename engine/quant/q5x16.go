package quant

import (
	"encoding/binary"
	"math"
)

// Q5_0x16 is the in-memory layout of Q5_0 weights that the CPU backend
// builds at load time where it has the kernel: 16 weight rows interleaved
// as in Q8_0x16, the 5-bit quants kept in 22 bytes per row and block as in
// GGUF. The kernel keeps the summation order of llama.cpp's Q5_0 products
// (ggml_vec_dot_q5_0_q8_0 and tinyBLAS_Q0_AVX, which agree): each group of
// four products summed exactly into lane j = 0..7 of its row, scaled by
// d_w·d_a and fused-multiply-added into that lane's float, block after
// block, and the eight lanes added as hsum_float_8 does. Both the exact
// and the default mode use it.
//
// A matrix of rows (a multiple of 16) × cols Q5_0 values is rows/16
// groups; group g is cols/32 blocks of Q5x16BlockBytes in block order:
//
//	bytes    0..31   the 16 rows' f16 scales, row 0 first
//	bytes   32..287  four chunks of 64 bytes; chunk m holds, for row i,
//	                 the row's quant bytes 4m..4m+3 at 4i..4i+3: low
//	                 nibbles elements 4m.., high nibbles 16+4m..
//	bytes  288..351  row i's high bits at 288+4i: bit j of byte k is the
//	                 fifth bit of element 4j+k
//
// The quants are taken unsigned (0..31); the activations' aux words
// (Q5_0x16Aux) take 16·Σa back out exactly.
const Q5x16BlockBytes = Q4x16Rows * q5_0Bytes

// Q5x16Bytes is the size of a rows × cols matrix in the Q5_0x16 layout
// (the same as in GGUF).
func Q5x16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QK) * Q5x16BlockBytes }

// RepackQ5x16 writes the Q5_0 matrix src (rows × cols, GGUF layout) into
// dst in the Q5_0x16 layout. rows must be a multiple of 16 and cols of 32.
func RepackQ5x16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q5_0x16", dst, src, rows, cols, QK, q5_0Bytes, Q5x16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q5x16BlockBytes:][:Q5x16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q5_0Bytes:][:q5_0Bytes]
				out[2*i], out[2*i+1] = in[0], in[1]
				for m := range 4 {
					copy(out[32+64*m+4*i:][:4], in[6+4*m:][:4])
				}
				qh := le.Uint32(in[2:])
				var hb [4]byte
				for e := range 32 {
					hb[e%4] |= byte(qh>>e&1) << (e / 4)
				}
				copy(out[288+4*i:][:4], hb[:])
			}
		}
	}
	return nil
}

// Q5_0x16Aux writes, for each block of the Q8_0 activation row a, what
// the Q5_0x16 kernel needs besides the quants: for each group j of four
// quants, −16 times their sum (int32), which takes back the offset of the
// unsigned weights, and then the block's scale as float32 (Q8_0x16AuxWords
// words per block, as Q8_0x16Aux).
func Q5_0x16Aux(aux []uint32, a []byte) {
	nb := len(a) / q8_0Bytes
	aux = aux[:Q8_0x16AuxWords*nb]
	for b := range nb {
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		out := aux[Q8_0x16AuxWords*b:][:Q8_0x16AuxWords]
		for j := 0; j < 8; j += 2 {
			lo, hi := sum4x2(binary.LittleEndian.Uint64(y[2+4*j:]))
			out[j], out[j+1] = uint32(-16*lo), uint32(-16*hi)
		}
		out[8] = math.Float32bits(f16At(y))
	}
}

// Q5x16Reference is the pure-Go form of the Q5_0x16 kernel, the oracle of
// its tests: each output is dotQ5_0Q8_0 of its two rows, bit for bit.
func Q5x16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ5x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		var acc [Q4x16Rows][8]float32
		for b := range nb {
			blk := w[b*Q5x16BlockBytes:][:Q5x16BlockBytes]
			y := a[r*astride+b*q8_0Bytes:][:q8_0Bytes]
			ax := aux[r*auxstride+Q8_0x16AuxWords*b:][:Q8_0x16AuxWords]
			da := math.Float32frombits(ax[8])
			for i := range Q4x16Rows {
				d := FP16ToFP32(uint16(blk[2*i])|uint16(blk[2*i+1])<<8) * da
				for j := range 8 {
					s := int32(ax[j])
					for k := range 4 {
						e := 4*j + k
						nib := blk[32+64*(e%16/4)+4*i+k] >> (4 * (e / 16)) & 0xf
						q := nib | (blk[288+4*i+k]>>j&1)<<4
						s += int32(q) * int32(int8(y[2+e]))
					}
					acc[i][j] = fma32(d, float32(s), acc[i][j])
				}
			}
		}
		for i := range Q4x16Rows {
			dst[r*dstride+i] = hsum8(&acc[i])
		}
	}
}

// checkQ5x16 panics unless the buffers of a Q5_0x16 kernel call are large
// enough, so that the assembly kernel never reads or writes past them.
func checkQ5x16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q5_0x16", Q5x16BlockBytes, q8_0Bytes, Q8_0x16AuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}
