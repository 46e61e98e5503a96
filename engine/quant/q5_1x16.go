package quant

import "math"

// Q5_1x16 is the in-memory layout of Q5_1 weights that the CPU backend
// builds at load time where it has the kernel: 16 weight rows interleaved
// as in Q5_0x16 (same quant chunks and high bits), with each row's f16
// minimum beside its scale, 24 bytes per row and block as in GGUF. The
// kernel keeps the summation order of llama.cpp's ggml_vec_dot_q5_1_q8_1
// (AVX2, dotQ5_1Q8_1): lanes of four products fused-multiply-added with
// d_w·d_a block after block and added as hsum_float_8, plus the minimum
// term m_w·s_a fused-multiply-added block after block into one float.
// Both the exact and the default mode use it.
//
// A matrix of rows (a multiple of 16) × cols Q5_1 values is rows/16
// groups; group g is cols/32 blocks of Q51x16BlockBytes in block order:
//
//	bytes    0..31   the 16 rows' f16 scales d
//	bytes   32..63   their f16 minimums m
//	bytes   64..319  four quant chunks, as Q5_0x16's bytes 32..287
//	bytes  320..383  the fifth bits, as Q5_0x16's bytes 288..351
const Q51x16BlockBytes = Q4x16Rows * q5_1Bytes

// Q8_1x16AuxWords is the number of uint32 words Q8_1x16Aux writes per
// block.
const Q8_1x16AuxWords = 2

// Q51x16Bytes is the size of a rows × cols matrix in the Q5_1x16 layout
// (the same as in GGUF).
func Q51x16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QK) * Q51x16BlockBytes }

// RepackQ51x16 writes the Q5_1 matrix src (rows × cols, GGUF layout) into
// dst in the Q5_1x16 layout. rows must be a multiple of 16 and cols of 32.
func RepackQ51x16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q5_1x16", dst, src, rows, cols, QK, q5_1Bytes, Q51x16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q51x16BlockBytes:][:Q51x16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q5_1Bytes:][:q5_1Bytes]
				copy(out[2*i:][:2], in[0:2])
				copy(out[32+2*i:][:2], in[2:4])
				for m := range 4 {
					copy(out[64+64*m+4*i:][:4], in[8+4*m:][:4])
				}
				qh := le.Uint32(in[4:])
				var hb [4]byte
				for e := range 32 {
					hb[e%4] |= byte(qh>>e&1) << (e / 4)
				}
				copy(out[320+4*i:][:4], hb[:])
			}
		}
	}
	return nil
}

// Q8_1x16Aux writes, for each block of the Q8_1 activation row a, its
// scale d and its s as float32 words, for the Q5_1x16 kernel.
func Q8_1x16Aux(aux []uint32, a []byte) {
	nb := len(a) / q8_1Bytes
	aux = aux[:Q8_1x16AuxWords*nb]
	for b := range nb {
		y := a[b*q8_1Bytes:]
		aux[2*b] = math.Float32bits(f16At(y))
		aux[2*b+1] = math.Float32bits(f16At(y[2:]))
	}
}

// Q51x16Reference is the pure-Go form of the Q5_1x16 kernel, the oracle
// of its tests: each output is dotQ5_1Q8_1 of its two rows, bit for bit.
func Q51x16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ51x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		for i := range Q4x16Rows {
			var acc [8]float32
			var summs float32
			for b := range nb {
				blk := w[b*Q51x16BlockBytes:][:Q51x16BlockBytes]
				y := a[r*astride+b*q8_1Bytes:][:q8_1Bytes]
				ax := aux[r*auxstride+Q8_1x16AuxWords*b:]
				da, sa := math.Float32frombits(ax[0]), math.Float32frombits(ax[1])
				d := FP16ToFP32(le.Uint16(blk[2*i:])) * da
				summs = fma32(FP16ToFP32(le.Uint16(blk[32+2*i:])), sa, summs)
				for j := range 8 {
					var s int32
					for k := range 4 {
						e := 4*j + k
						nib := blk[64+64*(e%16/4)+4*i+k] >> (4 * (e / 16)) & 0xf
						q := nib | (blk[320+4*i+k]>>j&1)<<4
						s += int32(q) * int32(int8(y[4+e]))
					}
					acc[j] = fma32(d, float32(s), acc[j])
				}
			}
			dst[r*dstride+i] = hsum8(&acc) + summs
		}
	}
}

// checkQ51x16 panics unless the buffers of a Q5_1x16 kernel call are
// large enough, so that the assembly kernel never reads or writes past
// them.
func checkQ51x16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q5_1x16", Q51x16BlockBytes, q8_1Bytes, Q8_1x16AuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}

// RepackQ41x16 writes the Q4_1 matrix src (rows × cols, GGUF layout) into
// dst in the Q5_1x16 layout, with every fifth bit zero: a Q4_1 block is a
// Q5_1 block whose high bits are clear, and llama.cpp's vector dot
// products of the two types (ggml_vec_dot_q4_1_q8_1 and _q5_1_q8_1, AVX2)
// have the same order, so the Q5_1x16 kernel computes Q4_1 products bit
// for bit (TestQ51x16MatchesVecDot). The layout reads 24 bytes a row and block
// where the file has 20, which decode pays for in bandwidth; prompts run
// the repacked kernel instead of a vector dot per row.
func RepackQ41x16(dst, src []byte, rows, cols int) error {
	nb, _, err := checkRepack("Q5_1x16 (from Q4_1)", dst, src, rows, cols, QK, q4_1Bytes, Q51x16BlockBytes)
	if err != nil {
		return err
	}
	group := make([]byte, Q4x16Rows*nb*q5_1Bytes) // one group of 16 rows as Q5_1
	for g := 0; g < rows/Q4x16Rows; g++ {
		for i := range Q4x16Rows * nb {
			in := src[(g*Q4x16Rows*nb+i)*q4_1Bytes:][:q4_1Bytes]
			out := group[i*q5_1Bytes:][:q5_1Bytes]
			copy(out[0:4], in[0:4]) // d, m
			clear(out[4:8])         // no fifth bits
			copy(out[8:24], in[4:20])
		}
		gb := Q51x16Bytes(Q4x16Rows, cols)
		if err := RepackQ51x16(dst[g*gb:(g+1)*gb], group, Q4x16Rows, cols); err != nil {
			return err
		}
	}
	return nil
}
