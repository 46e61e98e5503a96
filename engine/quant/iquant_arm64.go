//go:build arm64 && !noasm

package quant

import "unsafe"

// The i-quants' NEON kernels (iquant_arm64.s), with SDOT where the CPU has
// FEAT_DotProd (the sdot argument) and plain NEON otherwise. IQ4_NL's
// takes one activation row; runIQKernel calls it per row.

// iqKernelID names one i-quant kernel.
type iqKernelID uint8

const (
	kIQ2_XXSNEON iqKernelID = iota
	kIQ2_XSNEON
	kIQ2_SNEON
	kIQ3_XXSNEON
	kIQ3_SNEON
	kIQ1_SNEON
	kIQ1_MNEON
	kIQ4_XSNEON
	kIQ4_NLNEON
)

// iqSDOT is 1 when the kernels may use SDOT (installIQ sets it).
var iqSDOT int

// runIQKernel calls kernel id directly (see runOne for why).
func runIQKernel(id iqKernelID, nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32) {
	s := iqSDOT
	switch id {
	case kIQ2_XXSNEON:
		kernIQ2_XXSNEON(nb, w, a, stride, rows, acc, s)
	case kIQ2_XSNEON:
		kernIQ2_XSNEON(nb, w, a, stride, rows, acc, s)
	case kIQ2_SNEON:
		kernIQ2_SNEON(nb, w, a, stride, rows, acc, s)
	case kIQ3_XXSNEON:
		kernIQ3_XXSNEON(nb, w, a, stride, rows, acc, s)
	case kIQ3_SNEON:
		kernIQ3_SNEON(nb, w, a, stride, rows, acc, s)
	case kIQ1_SNEON:
		kernIQ1_SNEON(nb, w, a, stride, rows, acc, s)
	case kIQ1_MNEON:
		kernIQ1_MNEON(nb, w, a, stride, rows, acc, s)
	case kIQ4_XSNEON:
		kernIQ4_XSNEON(nb, w, a, stride, rows, acc, s)
	case kIQ4_NLNEON:
		for r := 0; r < rows; r++ {
			kernIQ4_NLNEON(nb, w, (*byte)(unsafe.Add(unsafe.Pointer(a), r*stride)), &acc[r], s)
		}
	default:
		panic("quant: unknown i-quant kernel")
	}
}

// installIQ fills the kernel tables with the i-quant kernels.
func installIQ(dotprod bool) {
	iqSDOT = 0
	if dotprod {
		iqSDOT = 1
	}
	for _, s := range []iqSpec{
		{IQ2_XXS, kIQ2_XXSNEON, iqScaled, 0.125},
		{IQ2_XS, kIQ2_XSNEON, iqScaled, 0.125},
		{IQ2_S, kIQ2_SNEON, iqScaled, 0.125},
		{IQ3_XXS, kIQ3_XXSNEON, iqScaled, 0.25},
		{IQ3_S, kIQ3_SNEON, iqScaled, 1},
		{IQ1_S, kIQ1_SNEON, iqDelta1, 0},
		{IQ1_M, kIQ1_MNEON, iqDelta8, 0},
		{IQ4_XS, kIQ4_XSNEON, iqScaled, 1},
		{IQ4_NL, kIQ4_NLNEON, iqPairs, 0},
	} {
		accelerated[s.typ] = func(n int, w, a []byte) float32 {
			var d [1]float32
			s.run(n, w, a, 0, d[:])
			return d[0]
		}
		acceleratedMulti[s.typ] = s.run
	}
}

//go:noescape
func kernIQ2_XXSNEON(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32, sdot int)

//go:noescape
func kernIQ2_XSNEON(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32, sdot int)

//go:noescape
func kernIQ2_SNEON(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32, sdot int)

//go:noescape
func kernIQ3_XXSNEON(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32, sdot int)

//go:noescape
func kernIQ3_SNEON(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32, sdot int)

//go:noescape
func kernIQ1_SNEON(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32, sdot int)

//go:noescape
func kernIQ1_MNEON(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32, sdot int)

//go:noescape
func kernIQ4_XSNEON(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32, sdot int)

//go:noescape
func kernIQ4_NLNEON(nb int, w, a *byte, acc *[16]float32, sdot int)
