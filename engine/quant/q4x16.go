package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Q4_0x16 is an in-memory layout of Q4_0 weights that the CPU backend
// builds at load time (llama.cpp repacks Q4_0 matrices likewise): 16
// weight rows are interleaved so that one 512-bit register holds four
// quant bytes of each of the 16 rows, and a VPDPBUSD with four activation
// bytes broadcast to every lane adds four products to each row's sum. No
// lane ever needs adding across, which is what the GGUF layout costs in
// the interleaved (repacked) summation order.
//
// A matrix of rows (a multiple of 16) × cols Q4_0 values is rows/16
// groups; group g is cols/32 blocks of Q4x16BlockBytes in block order:
//
//	bytes   0..31   the 16 rows' f16 scales, row 0 first
//	bytes  32..287  four chunks of 64 bytes; chunk m holds, for row i,
//	                the row's quant bytes 4m..4m+3 at 4i..4i+3
//
// so a chunk's low nibbles are elements 4m..4m+3 of each row and its high
// nibbles elements 16+4m..16+4m+3 (see the Q4_0 block layout).
const (
	Q4x16Rows       = 16
	Q4x16BlockBytes = Q4x16Rows * q4_0Bytes
)

// Q4x16Bytes is the size of a rows × cols matrix in the Q4_0x16 layout
// (the same as in GGUF).
func Q4x16Bytes(rows, cols int) int { return rows / Q4x16Rows * (cols / QK) * Q4x16BlockBytes }

// RepackQ4x16 writes the Q4_0 matrix src (rows × cols, GGUF layout) into
// dst in the Q4_0x16 layout. rows must be a multiple of 16 and cols of 32.
func RepackQ4x16(dst, src []byte, rows, cols int) error {
	nb, rb, err := checkRepack("Q4_0x16", dst, src, rows, cols, QK, q4_0Bytes, Q4x16BlockBytes)
	if err != nil {
		return err
	}
	for g := 0; g < rows/Q4x16Rows; g++ {
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*Q4x16BlockBytes:][:Q4x16BlockBytes]
			for i := range Q4x16Rows {
				in := src[(g*Q4x16Rows+i)*rb+b*q4_0Bytes:][:q4_0Bytes]
				out[2*i], out[2*i+1] = in[0], in[1]
				for m := range 4 {
					binary.LittleEndian.PutUint32(out[32+64*m+4*i:], binary.LittleEndian.Uint32(in[2+4*m:]))
				}
			}
		}
	}
	return nil
}

// Q8_0AuxWords is the number of uint32 words Q8_0Aux writes per block.
const Q8_0AuxWords = 2

// Q8_0Aux writes, for each block of the Q8_0 activation row a, what the
// Q4_0x16 kernel needs besides the quants: −8 times the sum of the
// block's quants (int32; the weights' nibbles are taken unsigned, 0..15,
// and this takes the offset of 8 back exactly) and its scale as float32.
func Q8_0Aux(aux []uint32, a []byte) { q8_0OffsetAux(aux, a, -8) }

// q8_0OffsetAux writes, for each block of the Q8_0 activation row a, two
// aux words: offset times the sum of the block's quants (int32), which
// takes back an offset the stored weights carry, and the block's scale as
// float32.
func q8_0OffsetAux(aux []uint32, a []byte, offset int32) {
	nb := len(a) / q8_0Bytes
	aux = aux[:2*nb]
	for b := range nb {
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		var s int32
		for k := 2; k < q8_0Bytes; k += 8 {
			s += sum8(binary.LittleEndian.Uint64(y[k:]))
		}
		aux[2*b] = uint32(offset * s)
		aux[2*b+1] = math.Float32bits(f16At(y))
	}
}

// sum8 is the sum of the eight signed bytes of x, added eight at a time:
// flipping the sign bits makes each byte q+128, whose pairs and then
// quadruples are summed in 16-bit lanes (at most 4·255).
func sum8(x uint64) int32 {
	const lo = 0x00ff00ff00ff00ff
	x ^= 0x8080808080808080
	x = x&lo + x>>8&lo
	x = (x * 0x0001000100010001) >> 48 // the four 16-bit lanes' sum
	return int32(x) - 8*128
}

// sum4x2 returns the sums of the low and the high four signed bytes of x.
func sum4x2(x uint64) (lo, hi int32) {
	const b16, b32 = 0x00ff00ff00ff00ff, 0x0000ffff0000ffff
	x ^= 0x8080808080808080
	x = x&b16 + x>>8&b16
	x = x&b32 + x>>16&b32
	return int32(x&0xffffffff) - 4*128, int32(x>>32) - 4*128
}

// PackedKernel computes, for the 16 weight rows of one group w of a
// repacked layout (nb blocks) and activation rows r < rows (1 to PackedRows, rows
// of the layout's activation format at a[r·astride:], their aux words at
// aux[r·auxstride:]), dst[r·dstride+i] = the dot product of row i and
// activation row r in the layout's order. For Q4_0x16 that is
// DotQ4_0Interleaved, bit for bit: the summation order of llama.cpp's
// repacked kernels; for Q8_0x16, the vector order of dotQ8_0Q8_0; for
// Q4_Kx16, Q4Kx16Reference.
type PackedKernel func(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int)

// Q4x16Reference is the pure-Go form of the Q4_0x16 kernel, the oracle of
// its tests.
func Q4x16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	q4x16Reference(nb, w, a, astride, aux, auxstride, rows, dst, dstride, false)
}

// Q4x16AccReference is Q4x16Reference starting from dst's values instead
// of zero, the form of Packed.Accumulate.
func Q4x16AccReference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	q4x16Reference(nb, w, a, astride, aux, auxstride, rows, dst, dstride, true)
}

func q4x16Reference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int, accumulate bool) {
	nibbleReference(&q4x16Nibbles, nb, w, a, astride, aux, auxstride, rows, dst, dstride, accumulate)
}

// q4x16Nibbles maps a Q4_0 nibble to itself (the kernels subtract 8 from
// each through the aux word's correction).
var q4x16Nibbles = [16]uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// nibbleReference is the pure-Go product of the Q4_0x16 layout with
// Q8_0 activations, each nibble q standing for values[q] (Q4_0: itself;
// IQ4_NL: the shifted codebook): per block the aux word's correction plus
// the integer sum, fused-multiply-added with d_w·d_a.
func nibbleReference(values *[16]uint8, nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int, accumulate bool) {
	checkQ4x16(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		var acc [Q4x16Rows]float32
		if accumulate {
			copy(acc[:], dst[r*dstride:][:Q4x16Rows])
		}
		for b := range nb {
			blk := w[b*Q4x16BlockBytes:][:Q4x16BlockBytes]
			y := a[r*astride+b*q8_0Bytes:][:q8_0Bytes]
			corr, da := int32(aux[r*auxstride+2*b]), math.Float32frombits(aux[r*auxstride+2*b+1])
			for i := range Q4x16Rows {
				sum := corr
				for m := range 4 {
					for k := range 4 {
						q := blk[32+64*m+4*i+k]
						sum += int32(values[q&0xf])*int32(int8(y[2+4*m+k])) + int32(values[q>>4])*int32(int8(y[18+4*m+k]))
					}
				}
				dw := FP16ToFP32(uint16(blk[2*i]) | uint16(blk[2*i+1])<<8)
				acc[i] = fma32(float32(sum), dw*da, acc[i])
			}
		}
		copy(dst[r*dstride:][:Q4x16Rows], acc[:])
	}
}

// checkQ4x16 panics unless the buffers of a PackedKernel call are large
// enough, so that the assembly kernel never reads or writes past them.
func checkQ4x16(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q4_0x16", Q4x16BlockBytes, q8_0Bytes, Q8_0AuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}

// checkRepack checks a repack of the rows × cols matrix src (GGUF layout,
// inBytes a block of blockValues values) into dst, in the layout named
// layout of outBytes a block of 16 rows: rows a positive multiple of 16,
// cols of blockValues, and both buffers of the sizes these give. It
// returns the blocks a row (nb) and the GGUF bytes a row (rb).
func checkRepack(layout string, dst, src []byte, rows, cols, blockValues, inBytes, outBytes int) (nb, rb int, err error) {
	if rows <= 0 || cols <= 0 || rows%Q4x16Rows != 0 || cols%blockValues != 0 {
		return 0, 0, fmt.Errorf("quant: %s repack of %d×%d: rows must be a positive multiple of %d and columns of %d", layout, rows, cols, Q4x16Rows, blockValues)
	}
	nb = cols / blockValues
	rb = nb * inBytes
	if want := rows / Q4x16Rows * nb * outBytes; len(src) != rows*rb || len(dst) != want {
		return 0, 0, fmt.Errorf("quant: %s repack of %d×%d: have %d and %d bytes, want %d and %d", layout, rows, cols, len(src), len(dst), rows*rb, want)
	}
	return nb, rb, nil
}

// checkPackedCall panics unless the buffers of a call of a packed layout's
// kernel are large enough for nb blocks of blockBytes weight bytes,
// actBytes activation bytes and auxWords aux words each, over rows
// activation rows (1 to PackedRows), so that the assembly kernel never
// reads or writes past them. layout names the layout in the panic.
func checkPackedCall(layout string, blockBytes, actBytes, auxWords, nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	if rows < 1 || rows > PackedRows || nb < 1 {
		panic(fmt.Sprintf("quant: %s kernel of %d blocks × %d activation rows", layout, nb, rows))
	}
	_ = w[nb*blockBytes-1]
	_ = a[(rows-1)*astride+nb*actBytes-1]
	if auxWords > 0 {
		_ = aux[(rows-1)*auxstride+auxWords*nb-1]
	}
	_ = dst[(rows-1)*dstride+Q4x16Rows-1]
}

// checkStreams panics unless a StreamKernel call's weights and
// destination hold DecodeStreams groups of nb blocks of blockBytes,
// stride bytes and dstride floats apart (stride at least a group, so the
// groups do not overlap), and its activation row nb blocks of actBytes
// with auxWords aux words each, as checkPackedCall for one row.
func checkStreams(nb, blockBytes, actBytes, auxWords int, w []byte, stride int, a []byte, aux []uint32, dst []float32, dstride int) {
	if nb < 1 || stride < nb*blockBytes || dstride < Q4x16Rows {
		panic(fmt.Sprintf("quant: stream kernel of %d blocks of %d bytes, stride %d, dstride %d", nb, blockBytes, stride, dstride))
	}
	_ = w[(DecodeStreams-1)*stride+nb*blockBytes-1]
	_ = a[nb*actBytes-1]
	if auxWords > 0 {
		_ = aux[nb*auxWords-1]
	}
	_ = dst[(DecodeStreams-1)*dstride+Q4x16Rows-1]
}

// PackedRows is the most activation rows a PackedKernel takes in one
// call: a decode batch of up to eight sequences reads each group of
// weights once.
const PackedRows = 8

// Packed describes a repacked weight layout of 16-row groups (Q4_0x16,
// Q8_0x16, Q4_Kx16) and this CPU's kernel for it.
type Packed struct {
	Name       string // the layout's name: Q4_0x16, Q8_0x16, Q4_Kx16
	Act        Type   // activation format: Q8_0 or Q8_K
	BlockSize  int    // values per block
	BlockBytes int    // bytes per block of a 16-row group
	AuxWords   int    // words of aux per activation block
	// Aux writes an activation row's aux words.
	Aux func(aux []uint32, a []byte)
	// Repack writes a GGUF-layout matrix into the layout; nil where the
	// layout is the GGUF layout itself (IQGridPacked), which the backend
	// then reads as it is.
	Repack func(dst, src []byte, rows, cols int) error
	// Kernel computes one group against 1 to PackedRows activation rows.
	Kernel PackedKernel
	// Accumulate, where the layout allows it, is Kernel adding to dst's
	// values instead of starting from zero. The layout then sums block
	// after block into one float per output, so a product split over
	// consecutive ranges of blocks gives the same result, bit for bit,
	// while a range's activations stay in L1. Nil: no split.
	Accumulate PackedKernel
	// Decode, where the layout has it, multiplies one activation row by
	// DecodeGroups consecutive groups (groupBytes apart) at once, writing
	// 16·DecodeGroups consecutive outputs; each group's results are
	// Kernel's (Accumulate's when accumulate), bit for bit. A group's sums
	// are chains of dependent operations, and one row of decode has
	// nothing else to overlap them with.
	Decode       func(nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool)
	DecodeGroups int
	// DecodeMulti, where the layout has it, is Decode for 1 to DecodeRows
	// activation rows (astride bytes apart; row r's outputs at
	// dst[r·dstride:]): the small batches of a speculative verification,
	// whose few rows leave one group's chains as short of independent
	// work as decode's. Each group's results are Kernel's (Accumulate's
	// when accumulate), bit for bit, and every weight is read once for
	// all the rows.
	DecodeMulti func(nb int, w []byte, groupBytes int, a []byte, astride, rows int, dst []float32, dstride int, accumulate bool)
	DecodeRows  int
	// Pair, where the layout has it, is Kernel (Accumulate when
	// accumulate) for PackedRows activation rows and two consecutive
	// groups at once (groupBytes apart; the second's 16 outputs follow the
	// first's in dst), bit for bit: for layouts whose sums are chains of
	// long-latency steps, twice the independent chains of one group.
	Pair PairKernel
	// Tile, where the layout has it, computes the products of TileFrom
	// or more activation rows: 1 to TileRows rows by any number of
	// consecutive groups per call, whatever the batch (a verification, a
	// prompt). Its results are Kernel's (Accumulate's), bit for bit, so
	// that they do not depend on the batch either; with TileFrom 0 or 1
	// it takes every call, decode included, and Kernel and Accumulate are
	// Tile of one group. Nil: the layout takes Kernel, Decode and
	// DecodeMulti as above.
	Tile     TileKernel
	TileRows int
	TileFrom int
	// AMX says the layout sums in AMX tiles, in the hardware's order
	// (BF16x16AMX, Q8_0x16AMX): a backend's arithmetic then names it.
	AMX bool
	// Streams, where the layout has it, multiplies one activation row by
	// DecodeStreams groups at once, each stride bytes after the one
	// before (group s's 16 outputs at dst[s·dstride:]), block by block in
	// turn; each group's results are Kernel's, bit for bit. A core that
	// reads its share of a decode step's weights as several streams far
	// apart keeps more of them in flight than one stream lets it.
	Streams StreamKernel
	// Expand, where the layout has it, writes nb blocks of one group as
	// the bytes of layout Expanded (BlockSize/Expanded.BlockSize blocks of
	// it each), whose kernels give this layout's results bit for bit: a
	// compressed layout (BF16x16Z), whose kernels above expand what they
	// read at every call (in registers, or into L1). A batch of many
	// activation rows reads each group many times, so the backend expands
	// a tile of groups once and runs Expanded's kernels on it. Nil: none.
	Expand   func(dst, src []byte, nb int)
	Expanded *Packed
}

// DecodeStreams is the number of groups a Packed.Streams kernel takes.
const DecodeStreams = 4

// PairKernel is the type of Packed.Pair.
type PairKernel func(nb int, w []byte, groupBytes int, a []byte, astride int, dst []float32, dstride int, accumulate bool)

// StreamKernel is the type of Packed.Streams.
type StreamKernel func(nb int, w []byte, stride int, a []byte, aux []uint32, dst []float32, dstride int)

// TileKernel multiplies rows activation rows (astride bytes apart, their
// aux words auxstride words apart) by groups consecutive groups of a
// repacked weight (groupBytes apart), nb blocks, writing 16·groups
// outputs per activation row at dst[r·dstride:] (adding to them when
// accumulate).
type TileKernel func(nb int, w []byte, groupBytes, groups int, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int, accumulate bool)

// TakesTile reports whether a product of rows activation rows takes the
// layout's Tile kernel.
func (p *Packed) TakesTile(rows int) bool { return p.Tile != nil && rows >= p.TileFrom }

// Bytes is the size of a rows × cols matrix in the layout.
func (p *Packed) Bytes(rows, cols int) int {
	return rows / Q4x16Rows * (cols / p.BlockSize) * p.BlockBytes
}

// PackedFor returns the repacked layout of weight type t that this CPU has
// a kernel for, or nil (the weight then stays in its GGUF layout).
func PackedFor(t Type) *Packed {
	switch {
	case t == Q4_0 && q4x16Kernel != nil:
		return &Packed{Name: "Q4_0x16", Act: Q8_0, BlockSize: QK, BlockBytes: Q4x16BlockBytes, AuxWords: Q8_0AuxWords,
			Aux: Q8_0Aux, Repack: RepackQ4x16, Kernel: q4x16Kernel, Accumulate: q4x16AccKernel, Streams: q4x16Streams}
	case t == Q8_0 && q8x16Kernel != nil:
		return &Packed{Name: "Q8_0x16", Act: Q8_0, BlockSize: QK, BlockBytes: Q8x16BlockBytes, AuxWords: Q8_0x16AuxWords,
			Aux: Q8_0x16Aux, Repack: RepackQ8x16, Kernel: q8x16Kernel}
	case t == Q5_0 && q5x16Kernel != nil:
		return &Packed{Name: "Q5_0x16", Act: Q8_0, BlockSize: QK, BlockBytes: Q5x16BlockBytes, AuxWords: Q8_0x16AuxWords,
			Aux: Q5_0x16Aux, Repack: RepackQ5x16, Kernel: q5x16Kernel}
	case t == Q6_K && q6kx16Kernel != nil:
		return &Packed{Name: "Q6_Kx16", Act: Q8_K, BlockSize: QKK, BlockBytes: Q6Kx16BlockBytes,
			Repack: RepackQ6Kx16, Kernel: q6kx16Kernel, Streams: q6kx16Streams}
	case t == Q5_K && q5kx16Kernel != nil:
		return &Packed{Name: "Q5_Kx16", Act: Q8_K, BlockSize: QKK, BlockBytes: Q5Kx16BlockBytes, AuxWords: Q8_KAuxWords,
			Aux: Q8_KAux, Repack: RepackQ5Kx16, Kernel: q5kx16Kernel}
	case t == Q4_1 && q51x16Kernel != nil:
		return &Packed{Name: "Q4_1x16", Act: Q8_1, BlockSize: QK, BlockBytes: Q51x16BlockBytes, AuxWords: Q8_1x16AuxWords,
			Aux: Q8_1x16Aux, Repack: RepackQ41x16, Kernel: q51x16Kernel}
	case t == Q5_1 && q51x16Kernel != nil:
		return &Packed{Name: "Q5_1x16", Act: Q8_1, BlockSize: QK, BlockBytes: Q51x16BlockBytes, AuxWords: Q8_1x16AuxWords,
			Aux: Q8_1x16Aux, Repack: RepackQ51x16, Kernel: q51x16Kernel}
	case t == IQ4_NL && iq4nlx16Kernel != nil:
		return &Packed{Name: "IQ4_NLx16", Act: Q8_0, BlockSize: QK, BlockBytes: IQ4NLx16BlockBytes, AuxWords: Q8_0AuxWords,
			Aux: IQ4NLx16Aux, Repack: RepackIQ4NLx16, Kernel: iq4nlx16Kernel, Accumulate: iq4nlx16AccKernel}
	case t == Q4_K && q4kx16Kernel != nil:
		return &Packed{Name: "Q4_Kx16", Act: Q8_K, BlockSize: QKK, BlockBytes: Q4Kx16BlockBytes, AuxWords: Q8_KAuxWords,
			Aux: Q8_KAux, Repack: RepackQ4Kx16, Kernel: q4kx16Kernel, Streams: q4kx16Streams}
	case t == Q2_K && q2kx16Kernel != nil:
		return &Packed{Name: "Q2_Kx16", Act: Q8_K, BlockSize: QKK, BlockBytes: Q2Kx16BlockBytes,
			Repack: RepackQ2Kx16, Kernel: q2kx16Kernel}
	case t == Q3_K && q3kx16Kernel != nil:
		return &Packed{Name: "Q3_Kx16", Act: Q8_K, BlockSize: QKK, BlockBytes: Q3Kx16BlockBytes, AuxWords: Q3Kx16AuxWords,
			Aux: Q3Kx16Aux, Repack: RepackQ3Kx16, Kernel: q3kx16Kernel}
	}
	return IQGridPacked(t) // nil for the types it does not hold
}
