package quant

import (
	"fmt"
	"math"
)

// Q8_0x16AMX is the default mode's layout of Q8_0 weights on CPUs with
// AMX-INT8: the Q8_0x16 bytes (16 interleaved rows, quants stored +128),
// summed in the order of llama.cpp's AMX kernels (DotQ8_0Interleaved,
// which the exact mode follows on such CPUs, as llama.cpp does): per
// block, each output takes one exact integer, the block's 32 products of
// weight and activation quants; it is converted to float32 and
// fused-multiply-added with d_w·d_a into the output, block after block.
// (Q8_0x16 keeps the order of llama.cpp without AMX: eight integer lanes
// per block and their hsum_float_8.) So on these CPUs the default mode's
// Q8_0 products are llama.cpp's, bit for bit, as without AMX.
//
// A block's eight 64-byte chunks (chunk j: quants 4j..4j+3 of each of the
// 16 rows) are an AMX-INT8 B tile as they lie, of 8 rows of 64 bytes, and
// the activations' Q8_0 quants an A tile of 32 bytes per row: TDPBSUD
// multiplies signed activations by the unsigned stored weights, and the
// aux word −128·Σa (Q8_0x16SumAux) takes the offset out exactly. A
// verification or a prompt (two or more rows) takes the tiles; decode
// (one row) takes an AVX-512 VNNI kernel whose integers are the same, so
// a token's logits do not depend on the batch it is computed in.
//
// The integers are exact and below 2^24 (32·127·127 plus the offset), so
// their conversion is exact too; only the order of the float steps sets
// the results, and it is the same in both kernels.

// Q8_0x16SumAuxWords is the number of uint32 words Q8_0x16SumAux writes
// per block.
const Q8_0x16SumAuxWords = 2

// Q8_0x16SumAux writes, for each block of the Q8_0 activation row a, what
// the Q8_0x16AMX kernels need besides the quants: −128 times the sum of
// the block's quants (int32), which takes back the offset of the stored
// weights, and the block's scale as float32.
func Q8_0x16SumAux(aux []uint32, a []byte) { q8_0OffsetAux(aux, a, -128) }

// Q8x16AMXReference is the pure-Go form of the Q8_0x16AMX kernels, the
// oracle of their tests: per block, the exact integer sum of the 32
// products converted and fused-multiply-added with d_w·d_a into the
// output.
func Q8x16AMXReference(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ8x16AMX(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		var acc [Q4x16Rows]float32
		for b := range nb {
			blk := w[b*Q8x16BlockBytes:][:Q8x16BlockBytes]
			y := a[r*astride+b*q8_0Bytes:][:q8_0Bytes]
			ax := aux[r*auxstride+Q8_0x16SumAuxWords*b:][:Q8_0x16SumAuxWords]
			da := math.Float32frombits(ax[1])
			for i := range Q4x16Rows {
				s := int32(ax[0])
				for j := range 8 {
					for k := range 4 {
						s += int32(blk[32+64*j+4*i+k]) * int32(int8(y[2+4*j+k]))
					}
				}
				d := FP16ToFP32(uint16(blk[2*i])|uint16(blk[2*i+1])<<8) * da
				acc[i] = fma32(d, float32(s), acc[i])
			}
		}
		copy(dst[r*dstride:r*dstride+Q4x16Rows], acc[:])
	}
}

// checkQ8x16AMX panics unless the buffers of a Q8_0x16AMX kernel call
// are large enough, so that the assembly never reads or writes past them.
func checkQ8x16AMX(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkPackedCall("Q8_0x16AMX", Q8x16BlockBytes, q8_0Bytes, Q8_0x16SumAuxWords, nb, w, a, astride, aux, auxstride, rows, dst, dstride)
}

// AMXInt8Tiles reports whether FastPackedFor(Q8_0, true) takes AMX tiles
// here: the CPU has AMX-INT8 and the OS lets this process use the tile
// state.
func AMXInt8Tiles() bool { return q8x16AMXPacked() != nil }

// q8x16AMXTileRows is the most activation rows of one call of the
// Q8_0x16AMX tile kernel: one A tile of 16 rows.
const q8x16AMXTileRows = 16

// q8x16AMXPacked returns the Q8_0x16AMX layout, or nil where this CPU or
// OS has no AMX-INT8 tiles.
func q8x16AMXPacked() *Packed {
	if q8x16AMXTile == nil || q8x16SumKernel == nil || !amxTiles() {
		return nil
	}
	return &Packed{Name: "Q8_0x16AMX", Act: Q8_0, BlockSize: QK, BlockBytes: Q8x16BlockBytes,
		AuxWords: Q8_0x16SumAuxWords, Aux: Q8_0x16SumAux, Repack: RepackQ8x16, Kernel: q8x16SumKernel,
		Tile: q8x16AMXTile, TileRows: q8x16AMXTileRows, TileFrom: 2, Streams: q8x16SumStreams, AMX: true}
}

// checkTileCall panics unless the buffers of a TileKernel call are large
// enough: groups groups of nb blocks of blockBytes, groupBytes apart;
// rows activation rows of actBytes, astride bytes apart, with auxWords
// per block at auxstride words apart; outputs 16·groups per row,
// dstride apart.
func checkTileCall(name string, blockBytes, actBytes, auxWords, maxRows int, nb int, w []byte, groupBytes, groups int, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int) {
	if nb < 1 || rows < 1 || rows > maxRows || groups < 1 ||
		groups > 1 && groupBytes < nb*blockBytes || rows > 1 && (astride < nb*actBytes || dstride < groups*Q4x16Rows || auxstride < nb*auxWords) {
		panic(fmt.Sprintf("quant: %s tile kernel of %d blocks × %d groups (%d bytes apart) × %d rows (stride %d, aux %d, outputs %d)",
			name, nb, groups, groupBytes, rows, astride, auxstride, dstride))
	}
	_ = w[(groups-1)*groupBytes+nb*blockBytes-1]
	_ = a[(rows-1)*astride+nb*actBytes-1]
	if auxWords > 0 {
		_ = aux[(rows-1)*auxstride+nb*auxWords-1]
	}
	_ = dst[(rows-1)*dstride+groups*Q4x16Rows-1]
}
