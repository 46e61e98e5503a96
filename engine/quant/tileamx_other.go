//go:build !amd64 || noasm

package quant

// hasTileF16 is false here.
const hasTileF16 = false

// tileF16F32x16 has no vector form here; TileF16AMX calls it only where
// hasFlashAVX512 is set.
func tileF16F32x16(n int, w *uint16, wstride int, a *float32, astride int, rows int, dst *float32, dstride int) {
	panic("quant: no vector tileF16F32x16")
}
