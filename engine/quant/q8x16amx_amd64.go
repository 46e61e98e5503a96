//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// The Q8_0x16AMX layout's kernels where this CPU has AMX-INT8 and AVX-512
// VNNI (nil otherwise): q8x16SumKernel for one activation row at a time
// (decode), q8x16AMXTile for two or more.
var (
	q8x16SumKernel  PackedKernel
	q8x16AMXTile    TileKernel
	q8x16SumStreams StreamKernel // the one-row kernel over four groups
)

func init() {
	if cpu.X86.HasAMXTile && cpu.X86.HasAMXInt8 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI {
		q8x16SumKernel, q8x16AMXTile, q8x16SumStreams = q8x16Sum, q8x16Tile, q8x16Sum4
	}
}

// q8x16Sum4 checks the buffers and runs the four-stream one-row kernel.
func q8x16Sum4(nb int, w []byte, stride int, a []byte, aux []uint32, dst []float32, dstride int) {
	checkStreams(nb, Q8x16BlockBytes, q8_0Bytes, Q8_0x16SumAuxWords, w, stride, a, aux, dst, dstride)
	q8x16Sum4AVX512VNNI(nb, &w[0], stride, &a[0], &aux[0], &dst[0], dstride)
}

//go:noescape
func q8x16Sum4AVX512VNNI(nb int, w *byte, stride int, a *byte, aux *uint32, dst *float32, dstride int)

// q8x16Sum checks the buffers and runs the one-row kernel for each
// activation row.
func q8x16Sum(nb int, w []byte, a []byte, astride int, aux []uint32, auxstride int, rows int, dst []float32, dstride int) {
	checkQ8x16AMX(nb, w, a, astride, aux, auxstride, rows, dst, dstride)
	for r := range rows {
		q8x16SumAVX512VNNI(nb, &w[0], &a[r*astride], &aux[r*auxstride], &dst[r*dstride])
	}
}

//go:noescape
func q8x16SumAVX512VNNI(nb int, w *byte, a *byte, aux *uint32, dst *float32)

// q8x16Tile is the TileKernel of the Q8_0x16AMX layout: rows (1 to 16)
// Q8_0 activation rows with their Q8_0x16SumAux words times groups
// consecutive groups, one group at a time, two blocks in flight. Per
// block TDPBSUD multiplies
// the activations' A tile (rows × 32 quants) by the block's B tile (its
// 512 stored quants) into int32 C, which is stored to scratch; each row's
// 16 integers then take the aux offset, are converted and are
// fused-multiply-added with d_w·d_a into the row's outputs, kept in
// registers across the blocks.
func q8x16Tile(nb int, w []byte, groupBytes, groups int, a []byte, astride int, aux []uint32, auxstride, rows int, dst []float32, dstride int, accumulate bool) {
	checkTileCall("Q8_0x16AMX", Q8x16BlockBytes, q8_0Bytes, Q8_0x16SumAuxWords, q8x16AMXTileRows, nb, w, groupBytes, groups, a, astride, aux, auxstride, rows, dst, dstride)
	// The tile configuration (palette 1): bytes 16+2t hold tile t's bytes
	// per row, byte 48+t its rows. tmm0 is A, tmm1 B (8 rows of four
	// quants of each of 16 weight rows), tmm2 C; tmm3-5 the same for a
	// second block.
	var cfg [64]byte
	cfg[0] = 1
	for _, t := range []int{0, 3} { // two blocks in flight
		cfg[16+2*t], cfg[48+t] = 32, byte(rows)
		cfg[18+2*t], cfg[49+t] = 64, 8
		cfg[20+2*t], cfg[50+t] = 64, byte(rows)
	}
	var scratch [2 * q8x16AMXTileRows * 64]byte
	q8x16AMXTileAsm(nb, &w[0], groupBytes, groups, &a[0], astride, &aux[0], 4*auxstride, rows, &dst[0], 4*dstride, accumulate, &cfg, &scratch[0])
}

//go:noescape
func q8x16AMXTileAsm(nb int, w *byte, groupBytes, groups int, a *byte, astride int, aux *uint32, auxstride, rows int, dst *float32, dstride int, accumulate bool, cfg *[64]byte, scratch *byte)
