//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// hasTileISA reports whether the tile kernels can run: AVX-512 with VNNI,
// and BW for the nibble shifts.
var hasTileISA = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

// tileKernel names one assembly tile kernel.
type tileKernel uint8

const (
	tQ4_0AVX512VNNI tileKernel = iota
	tQ8_0AVX512VNNI
	tQ4_KAVX512
)

// tileSpec is the tile dot product of one weight type.
type tileSpec struct {
	typ Type
	k   tileKernel
}

// run checks the buffers' lengths and runs the kernel, which finishes
// each (weight row, activation row) pair's 8 lanes in hsum8's order.
func (s tileSpec) run(n int, w []byte, wstride int, a []byte, astride, rows int, dst []float32, dstride int) {
	if rows < 1 || rows > TileRows {
		panic("quant: tile of an activation row count outside 1..TileRows")
	}
	_ = dst[(rows-1)*dstride+TileRows-1]
	nb := n / s.typ.BlockSize()
	if nb == 0 {
		for r := range rows {
			clear(dst[r*dstride : r*dstride+TileRows])
		}
		return
	}
	_ = w[(TileRows-1)*wstride+nb*s.typ.BlockBytes()-1]
	_ = a[(rows-1)*astride+nb*VecDotType(s.typ).BlockBytes()-1]
	switch s.k {
	case tQ4_0AVX512VNNI:
		tileQ4_0AVX512VNNI(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
	case tQ8_0AVX512VNNI:
		tileQ8_0AVX512VNNI(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
	case tQ4_KAVX512:
		tileQ4_KAVX512(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
	default:
		panic("quant: unknown tile kernel")
	}
}

// useTiles fills the tile kernel table for isa.
func useTiles(isa string) {
	clear(acceleratedTile)
	if isa != isaAVX512VNNI || !hasTileISA {
		return
	}
	acceleratedTile[Q4_0] = tileSpec{Q4_0, tQ4_0AVX512VNNI}.run
	acceleratedTile[Q8_0] = tileSpec{Q8_0, tQ8_0AVX512VNNI}.run
	acceleratedTile[Q4_K] = tileSpec{Q4_K, tQ4_KAVX512}.run
}

//go:noescape
func tileQ4_0AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)

//go:noescape
func tileQ8_0AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)

//go:noescape
func tileQ4_KAVX512(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
