package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// F16x16 and BF16x16 are in-memory layouts of F16 and BF16 weights that
// the CPU backend builds at load time in its default (not exact) mode: 16
// weight rows interleaved so that one 512-bit register holds one column
// of all 16 rows, converted to float32 and fused-multiply-added with one
// float32 activation broadcast to every lane. No lane is ever added
// across, and nothing is rounded to f16 or bf16 on the activation side.
//
// A matrix of rows (a multiple of 16) × cols (a multiple of 32) values is
// rows/16 groups; group g is cols/32 blocks of 1024 bytes in block order:
//
//	F16x16:  bytes 32k..32k+31 hold column k (0..31) of the block, row i's
//	         half at 32k+2i
//	BF16x16: bytes 64p..64p+63 hold columns 2p and 2p+1 (p = 0..15), row
//	         i's two values at 64p+4i (column 2p) and 64p+4i+2 (column 2p+1)
//
// The summation order (F16x16Reference, BF16x16Reference): each output
// is one float32 accumulator that takes the products of its row with the
// activation row column after column, each with one fused multiply-add.
// F16 activations stay float32 (Packed.Act F32; llama.cpp's F16 kernels
// round them to f16 and sum in lanes, which the exact mode keeps). BF16
// activations are rounded to bf16 (Packed.Act BF16), as llama.cpp does,
// and the columns of a pair go odd first, then even, with bf16 inputs
// that are subnormal taken as zero and float32 results that are
// subnormal flushed to zero: AVX512-BF16's VDPBF16PS, which multiplies
// 32 pairs per instruction. A product split into ranges of blocks whose
// later calls add to the earlier results (Accumulate) is the same chain,
// so it gives the same bits.
const (
	F16x16BlockBytes = Q4x16Rows * QK * 2
)

// F16x16Bytes is the size of a rows × cols matrix in the F16x16 or BF16x16
// layout (the same as in GGUF).
func F16x16Bytes(rows, cols int) int { return rows * cols * 2 }

// RepackF16x16 writes the F16 matrix src (rows × cols, GGUF layout) into
// dst in the F16x16 layout. rows must be a multiple of 16 and cols of 32.
func RepackF16x16(dst, src []byte, rows, cols int) error {
	return repackHalf16(dst, src, rows, cols, false)
}

// RepackBF16x16 writes the BF16 matrix src (rows × cols, GGUF layout) into
// dst in the BF16x16 layout. rows must be a multiple of 16 and cols of 32.
func RepackBF16x16(dst, src []byte, rows, cols int) error {
	return repackHalf16(dst, src, rows, cols, true)
}

func repackHalf16(dst, src []byte, rows, cols int, bf bool) error {
	name := "F16x16"
	if bf {
		name = "BF16x16"
	}
	if rows%Q4x16Rows != 0 || cols%QK != 0 || rows <= 0 || cols <= 0 {
		return fmt.Errorf("quant: %s repack of %d×%d: rows must be a multiple of %d and columns of %d", name, rows, cols, Q4x16Rows, QK)
	}
	if len(src) != rows*cols*2 || len(dst) != F16x16Bytes(rows, cols) {
		return fmt.Errorf("quant: %s repack of %d×%d: have %d and %d bytes, want %d", name, rows, cols, len(src), len(dst), rows*cols*2)
	}
	nb := cols / QK
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*F16x16BlockBytes:][:F16x16BlockBytes]
			for i := range Q4x16Rows {
				in := src[((g*Q4x16Rows+i)*cols+b*QK)*2:][:2*QK]
				if bf { // column pairs: row i's values k, k+1 side by side
					for k := 0; k < QK; k += 2 {
						binary.LittleEndian.PutUint32(out[64*(k/2)+4*i:], binary.LittleEndian.Uint32(in[2*k:]))
					}
					continue
				}
				for k := range QK {
					binary.LittleEndian.PutUint16(out[32*k+2*i:], binary.LittleEndian.Uint16(in[2*k:]))
				}
			}
		}
	}
	return nil
}

// F16x16Reference is the pure-Go form of the F16x16 kernel: the definition
// of its summation order and the oracle of its tests. a holds float32
// activation rows (little-endian bytes; bf16 ones for BF16x16Reference);
// aux is unused.
func F16x16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	half16Reference(nb, w, a, astride, rows, dst, dstride, false, false)
}

// F16x16AccReference is F16x16Reference starting from dst's values.
func F16x16AccReference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	half16Reference(nb, w, a, astride, rows, dst, dstride, false, true)
}

// BF16x16Reference is F16x16Reference for the BF16x16 layout.
func BF16x16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	half16Reference(nb, w, a, astride, rows, dst, dstride, true, false)
}

// BF16x16AccReference is BF16x16Reference starting from dst's values.
func BF16x16AccReference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	half16Reference(nb, w, a, astride, rows, dst, dstride, true, true)
}

func half16Reference(nb int, w []byte, a []byte, astride int, rows int, dst []float32, dstride int, bf, accumulate bool) {
	checkHalf16(nb, w, a, astride, rows, dst, dstride, bf)
	for r := range rows {
		var acc [Q4x16Rows]float32
		if accumulate {
			copy(acc[:], dst[r*dstride:][:Q4x16Rows])
		}
		for b := range nb {
			blk := w[b*F16x16BlockBytes:][:F16x16BlockBytes]
			if bf {
				for p := range QK / 2 {
					ao := r*astride + 2*(b*QK+2*p)
					for i := range Q4x16Rows {
						o := 64*p + 4*i
						acc[i] = ftz(fma32(bf16DAZ(le.Uint16(blk[o+2:])), bf16DAZ(le.Uint16(a[ao+2:])), acc[i]))
						acc[i] = ftz(fma32(bf16DAZ(le.Uint16(blk[o:])), bf16DAZ(le.Uint16(a[ao:])), acc[i]))
					}
				}
				continue
			}
			for k := range QK {
				x := math.Float32frombits(le.Uint32(a[r*astride+4*(b*QK+k):]))
				for i := range Q4x16Rows {
					acc[i] = fma32(halfTable[le.Uint16(blk[32*k+2*i:])], x, acc[i])
				}
			}
		}
		copy(dst[r*dstride:][:Q4x16Rows], acc[:])
	}
}

// bf16DAZ converts a bf16 value to float32, a subnormal one as zero.
func bf16DAZ(h uint16) float32 {
	if h&0x7f80 == 0 {
		return math.Float32frombits(uint32(h&0x8000) << 16)
	}
	return BF16ToFP32(h)
}

// ftz flushes a subnormal float32 to zero of its sign.
func ftz(x float32) float32 {
	if u := math.Float32bits(x); u&0x7f800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return x
}

// checkHalf16 panics unless the buffers of an F16x16 or BF16x16 kernel
// call are large enough, so that the assembly never reads or writes past
// them.
func checkHalf16(nb int, w []byte, a []byte, astride int, rows int, dst []float32, dstride int, bf bool) {
	if rows < 1 || rows > PackedRows || nb < 1 {
		panic(fmt.Sprintf("quant: F16x16 kernel of %d blocks × %d activation rows", nb, rows))
	}
	ab := 4 // float32 activations, or bf16
	if bf {
		ab = 2
	}
	_ = w[nb*F16x16BlockBytes-1]
	_ = a[(rows-1)*astride+nb*QK*ab-1]
	_ = dst[(rows-1)*dstride+Q4x16Rows-1]
}
