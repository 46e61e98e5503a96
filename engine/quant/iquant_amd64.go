//go:build amd64 && !noasm

package quant

// The i-quants' AVX2 kernels (iquant_amd64.s). Each accumulates nb blocks
// of a weight row against 1 to 4 activation rows into acc[r]: lanes 0-7
// the main sum; for IQ1_S lane 8 the delta term, for IQ1_M lanes 8-15 the
// delta lanes, for IQ4_NL lanes 8-15 the odd blocks' lanes. The finish
// (the type's factor, the delta, a last unpaired IQ4_NL block) runs in Go
// with the references' arithmetic.

// iqKernelID names one i-quant kernel.
type iqKernelID uint8

const (
	kIQ2_XXSAVX2 iqKernelID = iota
	kIQ2_XSAVX2
	kIQ2_SAVX2
	kIQ3_XXSAVX2
	kIQ3_SAVX2
	kIQ1_SAVX2
	kIQ1_MAVX2
	kIQ4_XSAVX2
	kIQ4_NLAVX2
)

// runIQKernel calls kernel id directly (see runKernel for why).
func runIQKernel(id iqKernelID, nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32) {
	switch id {
	case kIQ2_XXSAVX2:
		kernIQ2_XXSAVX2(nb, w, a, stride, rows, acc)
	case kIQ2_XSAVX2:
		kernIQ2_XSAVX2(nb, w, a, stride, rows, acc)
	case kIQ2_SAVX2:
		kernIQ2_SAVX2(nb, w, a, stride, rows, acc)
	case kIQ3_XXSAVX2:
		kernIQ3_XXSAVX2(nb, w, a, stride, rows, acc)
	case kIQ3_SAVX2:
		if rows == 1 && iq3sAVX512 {
			kernIQ3_SAVX512(nb, w, a, acc)
			return
		}
		kernIQ3_SAVX2(nb, w, a, stride, rows, acc)
	case kIQ1_SAVX2:
		kernIQ1_SAVX2(nb, w, a, stride, rows, acc)
	case kIQ1_MAVX2:
		kernIQ1_MAVX2(nb, w, a, stride, rows, acc)
	case kIQ4_XSAVX2:
		kernIQ4_XSAVX2(nb, w, a, stride, rows, acc)
	case kIQ4_NLAVX2:
		kernIQ4_NLAVX2(nb, w, a, stride, rows, acc)
	default:
		panic("quant: unknown i-quant kernel")
	}
}

// iq3sAVX512 reports whether one-row IQ3_S products take
// kernIQ3_SAVX512 (AVX-512 VNNI with BW), which decodes a block's grid
// points with gathers: a 1B IQ3_S decode (bound by this decoding, not by
// memory) ran 10.1-10.7 -> 10.7-11.2 tokens/s on one Zen 5 core and
// 19.3 -> 20.7 on two, alternated with the AVX2 kernel.
var iq3sAVX512 bool

// useIQ fills the kernel tables with the i-quant kernels of isa (every
// level runs the AVX2 ones, and AVX-512 VNNI one-row IQ3_S products
// kernIQ3_SAVX512).
func useIQ(isa string) {
	iq3sAVX512 = isa == isaAVX512VNNI && hasTileISA
	for _, s := range []iqSpec{
		{IQ2_XXS, kIQ2_XXSAVX2, iqScaled, 0.125},
		{IQ2_XS, kIQ2_XSAVX2, iqScaled, 0.125},
		{IQ2_S, kIQ2_SAVX2, iqScaled, 0.125},
		{IQ3_XXS, kIQ3_XXSAVX2, iqScaled, 0.25},
		{IQ3_S, kIQ3_SAVX2, iqScaled, 1},
		{IQ1_S, kIQ1_SAVX2, iqDelta1, 0},
		{IQ1_M, kIQ1_MAVX2, iqDelta8, 0},
		{IQ4_XS, kIQ4_XSAVX2, iqScaled, 1},
		{IQ4_NL, kIQ4_NLAVX2, iqPairs, 0},
	} {
		accelerated[s.typ] = func(n int, w, a []byte) float32 {
			var d [1]float32
			s.run(n, w, a, 0, d[:])
			return d[0]
		}
		acceleratedMulti[s.typ] = s.run
	}
	interleavedTile[IQ4_NL] = tileIQ4_NLI
}

//go:noescape
func kernIQ2_XXSAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ2_XSAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ2_SAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ3_XXSAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ3_SAVX512(nb int, w, a *byte, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ3_SAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ1_SAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ1_MAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ4_XSAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernIQ4_NLAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

// tileIQ4_NLI is the IQ4_NL tile in the repacked order (TileDotFunc).
func tileIQ4_NLI(n int, w []byte, wstride int, a []byte, astride, rows int, dst []float32, dstride int) {
	if rows < 1 || rows > TileRows {
		panic("quant: tile of an activation row count outside 1..TileRows")
	}
	_ = dst[(rows-1)*dstride+TileRows-1]
	nb := n / QK
	if nb == 0 {
		for r := range rows {
			clear(dst[r*dstride : r*dstride+TileRows])
		}
		return
	}
	_ = w[(TileRows-1)*wstride+nb*iq4_NLBytes-1]
	_ = a[(rows-1)*astride+nb*q8_0Bytes-1]
	tileIQ4_NLIAVX2(nb, &w[0], wstride, &a[0], astride, rows, &dst[0], dstride)
}

//go:noescape
func tileIQ4_NLIAVX2(nb int, w *byte, wstride int, a *byte, astride, rows int, dst *float32, dstride int)
