package quant

import (
	"encoding/binary"
	"math"
)

// Q8_0x16 is an in-memory layout of Q8_0 weights that the CPU backend
// builds at load time: 16 weight rows are interleaved so that one 512-bit
// register holds four quants of each of the 16 rows, as in Q4_0x16. The
// kernel keeps the summation order of ggml_vec_dot_q8_0_q8_0 (and of
// dotQ8_0Q8_0): each group of four products is summed exactly as an
// integer into lane j = 0..7 of its row, scaled by d_w·d_a and
// fused-multiply-added into that lane's float, block after block, and the
// eight lanes are added as hsum_float_8 does. With 16 rows side by side,
// lane j of every row is one register, so no lane is ever added across
// until the end.
//
// A matrix of rows (a multiple of 16) × cols Q8_0 values is rows/16
// groups; group g is cols/32 blocks of Q8x16BlockBytes in block order:
//
//	bytes   0..31   the 16 rows' f16 scales, row 0 first
//	bytes  32..543  eight chunks of 64 bytes; chunk j holds, for row i,
//	                the row's quants 4j..4j+3 at 4i..4i+3, plus 128
//
// The quants are stored unsigned (q+128, 0..255), as VPDPBUSD multiplies
// unsigned by signed bytes; the activations' aux words (Q8_0x16Aux) take
// the 128·Σa this adds back out exactly.
const Q8x16BlockBytes = Q4x16Rows * q8_0Bytes

// Q8x16Bytes is the size of a rows × cols matrix in the Q8_0x16 layout
// (the same as in GGUF).
func Q8x16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QK) * Q8x16BlockBytes }

// RepackQ8x16 writes the Q8_0 matrix src (rows × cols, GGUF layout) into
// dst in the Q8_0x16 layout. rows must be a multiple of 16 and cols of 32.
func RepackQ8x16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q8_0x16", dst, src, rows, cols, QK, q8_0Bytes, Q8x16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q8x16BlockBytes:][:Q8x16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q8_0Bytes:][:q8_0Bytes]
				out[2*i], out[2*i+1] = in[0], in[1]
				for j := range 8 {
					binary.LittleEndian.PutUint32(out[32+64*j+4*i:], binary.LittleEndian.Uint32(in[2+4*j:])^0x80808080)
				}
			}
		}
	}
	return nil
}

// Q8_0x16AuxWords is the number of uint32 words Q8_0x16Aux writes per
// block.
const Q8_0x16AuxWords = 9

// Q8_0x16Aux writes, for each block of the Q8_0 activation row a, what
// the Q8_0x16 kernel needs besides the quants: for each group j of four
// quants, −128 times their sum (int32), which takes back the offset of
// the stored weights, and then the block's scale as float32.
func Q8_0x16Aux(aux []uint32, a []byte) {
	nb := len(a) / q8_0Bytes
	aux = aux[:Q8_0x16AuxWords*nb]
	for b := range nb {
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		out := aux[Q8_0x16AuxWords*b:][:Q8_0x16AuxWords]
		for j := 0; j < 8; j += 2 {
			lo, hi := sum4x2(binary.LittleEndian.Uint64(y[2+4*j:]))
			out[j], out[j+1] = uint32(-128*lo), uint32(-128*hi)
		}
		out[8] = math.Float32bits(f16At(y))
	}
}

// Q8x16Reference is the pure-Go form of the Q8_0x16 kernel, the oracle of
// its tests: each output is dotQ8_0Q8_0 of its two rows, bit for bit.
func Q8x16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ8x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		var acc [Q4x16Rows][8]float32
		for b := range nb {
			blk := w[b*Q8x16BlockBytes:][:Q8x16BlockBytes]
			y := a[r*astride+b*q8_0Bytes:][:q8_0Bytes]
			ax := aux[r*auxstride+Q8_0x16AuxWords*b:][:Q8_0x16AuxWords]
			da := math.Float32frombits(ax[8])
			for i := range Q4x16Rows {
				d := FP16ToFP32(uint16(blk[2*i])|uint16(blk[2*i+1])<<8) * da
				for j := range 8 {
					s := int32(ax[j])
					for k := range 4 {
						s += int32(blk[32+64*j+4*i+k]) * int32(int8(y[2+4*j+k]))
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

// checkQ8x16 panics unless the buffers of a Q8_0x16 kernel call are large
// enough, so that the assembly kernel never reads or writes past them.
func checkQ8x16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q8_0x16", Q8x16BlockBytes, q8_0Bytes, Q8_0x16AuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}
