package quant

import (
	"fmt"
	"math"
)

// IQ4_NLx16 is the in-memory layout the CPU backend repacks IQ4_NL
// matrices into: an IQ4_NL block is a Q4_0 block with a non-linear
// codebook (f16 d, then 16 bytes whose low nibbles are weights 0-15 and
// high nibbles 16-31), so the layout is Q4_0x16's byte for byte
// (RepackQ4x16). Its kernel looks each nibble up in the codebook shifted
// by +128 and takes the shift back with −128 times the block's activation
// sum (IQ4NLx16Aux). Its summation order is DotIQ4_NLInterleaved's, that
// of llama.cpp's repacked IQ4_NL kernels (each block's exact integer sum,
// times d_w·d_a, fused-multiply-added into one float32 per output), so
// both arithmetic modes take it.
const IQ4NLx16BlockBytes = Q4x16BlockBytes

// RepackIQ4NLx16 writes the IQ4_NL matrix src (rows × cols, GGUF layout)
// into dst in the IQ4_NLx16 layout. rows must be a multiple of 16 and
// cols of 32.
func RepackIQ4NLx16(dst, src []byte, rows, cols int) error {
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("quant: IQ4_NLx16 repack of %d×%d", rows, cols)
	}
	if err := RepackQ4x16(dst, src, rows, cols); err != nil {
		return fmt.Errorf("quant: IQ4_NLx16 (the Q4_0x16 layout): %w", err)
	}
	return nil
}

// IQ4NLx16Aux writes, for each block of the Q8_0 activation row a, −128
// times the sum of its quants (int32) and its scale as float32: the
// layout of Q8_0Aux, with the IQ4 codebook's shift.
func IQ4NLx16Aux(aux []uint32, a []byte) {
	nb := len(a) / q8_0Bytes
	aux = aux[:Q8_0AuxWords*nb]
	for b := range nb {
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		var s int32
		for k := 2; k < q8_0Bytes; k += 8 {
			s += sum8(le.Uint64(y[k:]))
		}
		aux[2*b] = uint32(-128 * s)
		aux[2*b+1] = math.Float32bits(f16At(y))
	}
}

// IQ4NLx16Reference is the pure-Go form of the IQ4_NLx16 kernel, the
// oracle of its tests: DotIQ4_NLInterleaved of each pair, bit for bit.
func IQ4NLx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	iq4nlx16Reference(nb, w, a, astride, aux, auxstride, rows, dst, dstride, false)
}

// IQ4NLx16AccReference is IQ4NLx16Reference starting from dst's values,
// the form of Packed.Accumulate.
func IQ4NLx16AccReference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	iq4nlx16Reference(nb, w, a, astride, aux, auxstride, rows, dst, dstride, true)
}

func iq4nlx16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int, accumulate bool) {
	nibbleReference(&iq4x16Codebook, nb, w, a, astride, aux, auxstride, rows, dst, dstride, accumulate)
}
