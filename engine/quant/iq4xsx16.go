package quant

import "math"

// IQ4_XSx16 is the in-memory layout the CPU backend's default mode
// repacks IQ4_XS matrices into, in the manner of Q4_Kx16: 16 weight rows
// interleaved so that one 512-bit register holds four weights of each
// row, and a VPDPBUSD with four activation quants broadcast to every lane
// adds four products to each row's lane with no sum across lanes.
//
// A matrix of rows (a multiple of 16) × cols IQ4_XS values is rows/16
// groups; group g is cols/256 super-blocks of IQ4XSx16BlockBytes:
//
//	bytes     0..2047  quants: for each 32-weight chunk c, four 64-byte
//	                   registers; register m holds row i's nibble bytes
//	                   16c+4m..16c+4m+3 at 4i..4i+3 (so its low nibbles
//	                   are weights 32c+4m.., its high ones 32c+16+4m..)
//	bytes  2048..2111  the 16 rows' d as float32, row 0 first
//	bytes  2112..2239  chunk scales s−32 as int8: byte 2112+16c+i is
//	                   chunk c's of row i
//
// (2240 bytes against the file's 16·136 = 2176: 35 whole cache lines.)
//
// The kernel looks each nibble up in the non-linear codebook shifted by
// +128 (1..241, unsigned, the operand VPDPBUSD takes unsigned) and takes
// the shift back exactly with −128 times the chunk's activation sum
// (IQ4XSx16Aux). Its summation order (IQ4XSx16Reference): per super-
// block, row and activation row, the exact integer Σ_c (s_c−32)·Σ v·a,
// converted to float32 and fused-multiply-added with d·d_a into one
// float32 accumulator, block after block. That is the order of llama.cpp's
// IQ4_XS prompt path (ggml-cpu's "IQ panel" gemm, for calls of eight
// tokens or more), not of its vector dot product (eight float lanes, its
// decode), which the exact mode keeps: the default mode takes the prompt
// order for every call (FastPackedFor), as Q4_Kx16 does in both modes, so
// that every token of a batch gets the same bits as alone.
const (
	IQ4XSx16BlockBytes = 2240
	// IQ4XSx16AuxWords is the number of uint32 words IQ4XSx16Aux writes
	// per block.
	IQ4XSx16AuxWords = 8

	iq4xsx16D      = 2048
	iq4xsx16Scales = 2112
)

// iq4x16Codebook is the IQ4 codebook plus 128, as the kernels' unsigned
// operand.
var iq4x16Codebook = func() (t [16]uint8) {
	for i, v := range iq4nlValues {
		t[i] = uint8(int16(v) + 128)
	}
	return t
}()

// IQ4XSx16Bytes is the size of a rows × cols matrix in the IQ4_XSx16
// layout.
func IQ4XSx16Bytes(rows, cols int) int {
	return rows / Q4x16Rows * (cols / QKK) * IQ4XSx16BlockBytes
}

// RepackIQ4XSx16 writes the IQ4_XS matrix src (rows × cols, GGUF layout)
// into dst in the IQ4_XSx16 layout. rows must be a multiple of 16 and cols
// of 256.
func RepackIQ4XSx16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("IQ4_XSx16", dst, src, rows, cols, QKK, iq4_XSBytes, IQ4XSx16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := range nb {
			out := dst[(g*nb+b)*IQ4XSx16BlockBytes:][:IQ4XSx16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*iq4_XSBytes:][:iq4_XSBytes]
				le.PutUint32(out[iq4xsx16D+4*i:], math.Float32bits(f16At(in)))
				for c := range 8 {
					out[iq4xsx16Scales+16*c+i] = byte(int8(iq4XSScale(in, c)))
					for m := range 4 {
						copy(out[256*c+64*m+4*i:][:4], in[8+16*c+4*m:][:4])
					}
				}
			}
		}
	}
	return nil
}

// IQ4XSx16Aux writes, for each block of the Q8_K activation row a, −128
// times the sum of each of its eight 32-quant chunks (int32), which takes
// the codebook's shift of 128 back.
func IQ4XSx16Aux(aux []uint32, a []byte) {
	nb := len(a) / q8_KBytes
	aux = aux[:IQ4XSx16AuxWords*nb]
	for b := range nb {
		bs := a[b*q8_KBytes+260:][:32]
		for c := range 8 {
			s := int32(int16(le.Uint16(bs[4*c:]))) + int32(int16(le.Uint16(bs[4*c+2:])))
			aux[8*b+c] = uint32(-128 * s)
		}
	}
}

// IQ4XSx16Reference is the pure-Go form of the IQ4_XSx16 kernel: the
// definition of the layout's summation order and the oracle of its tests.
func IQ4XSx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	iq4xsx16Reference(nb, w, a, astride, aux, auxstride, rows, dst, dstride, false)
}

// IQ4XSx16AccReference is IQ4XSx16Reference starting from dst's values,
// the form of Packed.Accumulate.
func IQ4XSx16AccReference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	iq4xsx16Reference(nb, w, a, astride, aux, auxstride, rows, dst, dstride, true)
}

func iq4xsx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int, accumulate bool) {
	checkIQ4XSx16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		var acc [Q4x16Rows]float32
		if accumulate {
			copy(acc[:], dst[r*dstride:][:Q4x16Rows])
		}
		for b := range nb {
			blk := w[b*IQ4XSx16BlockBytes:][:IQ4XSx16BlockBytes]
			y := a[r*astride+b*q8_KBytes:][:q8_KBytes]
			da := f32At(y)
			for i := range Q4x16Rows {
				var sum int32
				for c := range 8 {
					// The kernel's arithmetic: shifted codebook, then the
					// aux word's correction (int32, wrapping as it does).
					dot := int32(aux[r*auxstride+IQ4XSx16AuxWords*b+c])
					for m := range 4 {
						for e := range 4 {
							q := blk[256*c+64*m+4*i+e]
							dot += int32(iq4x16Codebook[q&0xf])*int32(int8(y[4+32*c+4*m+e])) +
								int32(iq4x16Codebook[q>>4])*int32(int8(y[4+32*c+16+4*m+e]))
						}
					}
					sum += int32(int8(blk[iq4xsx16Scales+16*c+i])) * dot
				}
				d := f32At(blk[iq4xsx16D+4*i:])
				acc[i] = fma32(float32(sum), d*da, acc[i])
			}
		}
		copy(dst[r*dstride:][:Q4x16Rows], acc[:])
	}
}

// checkIQ4XSx16 is checkQ4x16 for the IQ4_XSx16 kernel.
func checkIQ4XSx16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("IQ4_XSx16", IQ4XSx16BlockBytes, q8_KBytes, IQ4XSx16AuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}
