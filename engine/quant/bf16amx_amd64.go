//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// bf16x16AMX is the BF16x16 layout's AMX kernel where this CPU has
// AMX-TILE and AMX-BF16 (nil otherwise); amxTiles says whether the OS lets
// this process use the tiles.
var bf16x16AMX TileKernel

func init() {
	if cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && cpu.X86.HasAVX512F {
		bf16x16AMX = bf16x16Tile
	}
}

//go:noescape
func bf16x16AMXTile(nb int, w *byte, groupBytes, groups int, a *byte, astride, rows int, dst *float32, dstride int, accumulate bool, cfg *[64]byte)

// bf16x16Tile is the TileKernel of the BF16x16AMX layout: rows (1 to 32)
// bf16 activation rows, astride bytes apart, times groups consecutive
// groups of nb blocks, groupBytes apart, in pairs; row r's outputs are
// dst[r·dstride : r·dstride+16·groups]. Each output is one float32 tile
// element that TDPBF16PS adds a block's 32 products to, block after
// block: its value depends on its weight row, its activation row and the
// blocks, not on which other rows or groups share the call, and a product
// split into ranges of blocks (accumulate) continues the same chain. The
// tile configuration is loaded once per call, so a call should take many
// groups: a decode step's whole share of a matrix.
func bf16x16Tile(nb int, w []byte, groupBytes, groups int, a []byte, astride int, _ []uint32, _, rows int, dst []float32, dstride int, accumulate bool) {
	checkTileCall("BF16x16AMX", F16x16BlockBytes, QK*2, 0, bf16AMXTileRows, nb, w, groupBytes, groups, a, astride, nil, 0, rows, dst, dstride)
	// The tile configuration (palette 1): bytes 16+2t hold tile t's bytes
	// per row, byte 48+t its rows. Tiles 0-3 are the accumulators (C00,
	// C01, C10, C11), 4-5 the activation row tiles, 6-7 a pair's groups.
	var cfg [64]byte
	cfg[0] = 1
	m0, m1 := byte(min(rows, 16)), byte(max(rows-16, 0))
	tiles := [8]byte{0: m0, 4: m0, 6: 16}
	if groups > 1 {
		tiles[1], tiles[7] = m0, 16
	}
	if m1 > 0 {
		tiles[2], tiles[5] = m1, m1
		if groups > 1 {
			tiles[3] = m1
		}
	}
	for t, r := range tiles {
		if r > 0 {
			cfg[16+2*t] = 64
			cfg[48+t] = r
		}
	}
	bf16x16AMXTile(nb, &w[0], groupBytes, groups, &a[0], astride, rows, &dst[0], dstride*4, accumulate, &cfg)
}
