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
	tQ4_0IAVX512VNNI
	tQ8_0IAVX512VNNI
)

// tileSpec is the tile dot product of one weight type.
type tileSpec struct {
	typ Type
	k   tileKernel
	// Block sizes and bytes of the weights and activations, looked up once
	// (a map lookup per tile was 2 % of a prefill).
	bs, wbb, abb int
}

// newTileSpec describes kernel k of weight type t with activations of type
// act (given, not looked up: this runs from init, maybe before the formats
// are registered).
func newTileSpec(t, act Type, k tileKernel) tileSpec {
	return tileSpec{typ: t, k: k, bs: t.BlockSize(), wbb: t.BlockBytes(), abb: act.BlockBytes()}
}

// run checks the buffers' lengths and runs the kernel, which finishes
// each (weight row, activation row) pair's 8 lanes in hsum8's order.
func (s tileSpec) run(n int, w []byte, wstride int, a []byte, astride, rows int, dst []float32, dstride int) {
	if rows < 1 || rows > TileRows {
		panic("quant: tile of an activation row count outside 1..TileRows")
	}
	_ = dst[(rows-1)*dstride+TileRows-1]
	nb := n / s.bs
	if nb == 0 {
		for r := range rows {
			clear(dst[r*dstride : r*dstride+TileRows])
		}
		return
	}
	_ = w[(TileRows-1)*wstride+nb*s.wbb-1]
	_ = a[(rows-1)*astride+nb*s.abb-1]
	switch s.k {
	case tQ4_0AVX512VNNI:
		tileQ4_0AVX512VNNI(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
	case tQ8_0AVX512VNNI:
		tileQ8_0AVX512VNNI(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
	case tQ4_KAVX512:
		tileQ4_KAVX512(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
	case tQ4_0IAVX512VNNI:
		if rows == TileRows {
			tileQ4_0I4AVX512VNNI(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
		} else {
			tileQ4_0IAVX512VNNI(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
		}
	case tQ8_0IAVX512VNNI:
		if rows == TileRows {
			tileQ8_0I4AVX512VNNI(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
		} else {
			tileQ8_0IAVX512VNNI(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
		}
	default:
		panic("quant: unknown tile kernel")
	}
}

// useTiles fills the tile kernel table for isa.
func useTiles(isa string) {
	clear(acceleratedTile)
	clear(interleavedTile)
	if isa != isaAVX512VNNI || !hasTileISA {
		return
	}
	acceleratedTile[Q4_0] = newTileSpec(Q4_0, Q8_0, tQ4_0AVX512VNNI).run
	acceleratedTile[Q8_0] = newTileSpec(Q8_0, Q8_0, tQ8_0AVX512VNNI).run
	acceleratedTile[Q4_K] = newTileSpec(Q4_K, Q8_K, tQ4_KAVX512).run
	acceleratedTile[F16] = tileF16
	interleavedTile[Q4_0] = newTileSpec(Q4_0, Q8_0, tQ4_0IAVX512VNNI).run
	interleavedTile[Q8_0] = newTileSpec(Q8_0, Q8_0, tQ8_0IAVX512VNNI).run
}

// tileF16 is the F16 tile: the kernel on whole groups of 8 elements of
// four weight rows × four activation rows, the reference's loop on the
// rest of each pair; fewer than four activation rows take the multi-row
// path per weight row.
func tileF16(n int, w []byte, wstride int, a []byte, astride, rows int, dst []float32, dstride int) {
	if rows < 1 || rows > TileRows {
		panic("quant: tile of an activation row count outside 1..TileRows")
	}
	_ = dst[(rows-1)*dstride+TileRows-1]
	if rows < TileRows {
		var d [MaxMultiRows]float32
		for i := range TileRows {
			multiHalf(false, n, w[i*wstride:], a, astride, d[:rows])
			for r := range rows {
				dst[r*dstride+i] = d[r]
			}
		}
		return
	}
	if n == 0 {
		for r := range rows {
			clear(dst[r*dstride : r*dstride+TileRows])
		}
		return
	}
	_ = w[(TileRows-1)*wstride+2*n-1]
	_ = a[(TileRows-1)*astride+2*n-1]
	var acc [TileRows * TileRows]float64
	ng := n / 8
	if ng > 0 {
		tileF16AVX512(ng, &w[0], wstride, &a[0], astride, &acc)
	}
	for i := range TileRows {
		x := u16View(w[i*wstride:])[:n]
		for r := range TileRows {
			dst[r*dstride+i] = sumF16(acc[i*TileRows+r], 8*ng, x, u16View(a[r*astride:])[:n])
		}
	}
}

//go:noescape
func tileF16AVX512(ng int, w *byte, wstride int, a *byte, astride int, acc *[TileRows * TileRows]float64)

//go:noescape
func tileQ4_0AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)

//go:noescape
func tileQ8_0AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)

//go:noescape
func tileQ4_KAVX512(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)

//go:noescape
func tileQ4_0IAVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)

//go:noescape
func tileQ8_0IAVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)

//go:noescape
func tileQ4_0I4AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)

//go:noescape
func tileQ8_0I4AVX512VNNI(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
