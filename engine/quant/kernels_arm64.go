//go:build arm64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// The arm64 kernels (NEON, which every arm64 CPU Go supports has, plus
// SDOT where FEAT_DotProd is present: Apple M1 and later, Graviton 2 and
// later, Cortex-A55/A76 and later) reproduce the references bit for bit:
// SDOT, like the NEON sequence SMULL, SADDLP, ADDP, sums each group of 4
// consecutive int8 products into one int32 lane, which is the references'
// lane assignment, and FMLA is the references' fused multiply-add. The
// formats covered are Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (block32_arm64.s) and
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (kquant_arm64.s), each with one-row and
// four-row kernels.

func init() { installARM64(cpu.ARM64.HasASIMD, cpu.ARM64.HasASIMDDP) }

// installARM64 fills the accelerated tables for a CPU with the given
// features, replacing what was there. The tests call it to run the plain
// NEON kernels on a CPU that has SDOT.
func installARM64(asimd, dotprod bool) {
	clear(accelerated)
	clear(acceleratedMulti)
	kernelISA = "go"
	if !asimd {
		return
	}
	kernelISA = "neon"
	k32, kk := block32NEON, kquantNEON
	if dotprod {
		kernelISA = "neon+dotprod"
		k32, kk = block32SDOT, kquantSDOT
	}
	for t, k := range k32 {
		accelerated[t] = k.dot
		acceleratedMulti[t] = k.multi
	}
	for t, k := range kk {
		accelerated[t] = k.dot
		acceleratedMulti[t] = k.multi
	}
	installIQ(dotprod)
}

// block32Kernel is the assembly of one 32-element format: one computes
// a row's 8 float lanes (acc[0:8]) and the _1 formats' minimum term
// (acc[8]); four does the same for four activation rows at once.
type block32Kernel struct {
	k      asmKernel
	wBytes int
	aBytes int
	summs  bool
}

var block32SDOT = map[Type]block32Kernel{
	Q8_0: {kQ8_0SDOT, q8_0Bytes, q8_0Bytes, false},
	Q4_0: {kQ4_0SDOT, q4_0Bytes, q8_0Bytes, false},
	Q5_0: {kQ5_0SDOT, q5_0Bytes, q8_0Bytes, false},
	Q4_1: {kQ4_1SDOT, q4_1Bytes, q8_1Bytes, true},
	Q5_1: {kQ5_1SDOT, q5_1Bytes, q8_1Bytes, true},
}

var block32NEON = map[Type]block32Kernel{
	Q8_0: {kQ8_0NEON, q8_0Bytes, q8_0Bytes, false},
	Q4_0: {kQ4_0NEON, q4_0Bytes, q8_0Bytes, false},
	Q5_0: {kQ5_0NEON, q5_0Bytes, q8_0Bytes, false},
	Q4_1: {kQ4_1NEON, q4_1Bytes, q8_1Bytes, true},
	Q5_1: {kQ5_1NEON, q5_1Bytes, q8_1Bytes, true},
}

// sum adds one row's lanes in the references' order.
func (k block32Kernel) sum(acc *[12]float32) float32 {
	s := hsum8((*[8]float32)(acc[:8]))
	if k.summs {
		s += acc[8]
	}
	return s
}

func (k block32Kernel) dot(n int, w, a []byte) float32 {
	nb := n / QK
	if nb == 0 {
		return 0
	}
	// The assembly reads nb blocks of each row without bounds checks.
	_, _ = w[nb*k.wBytes-1], a[nb*k.aBytes-1]
	var acc [12]float32
	runOne(k.k, nb, &w[0], &a[0], &acc)
	return k.sum(&acc)
}

func (k block32Kernel) multi(n int, w, a []byte, stride int, dst []float32) {
	nb := n / QK
	for len(dst) > 0 {
		rows := min(len(dst), MaxMultiRows)
		switch {
		case nb == 0:
			clear(dst[:rows])
		case rows == 1:
			dst[0] = k.dot(n, w, a)
		default:
			_ = w[nb*k.wBytes-1]
			// Rows past the last are computed again from the last one
			// (already in cache) and dropped.
			var p [MaxMultiRows]*byte
			for r := range p {
				off := min(r, rows-1) * stride
				_ = a[off+nb*k.aBytes-1]
				p[r] = &a[off]
			}
			var acc [MaxMultiRows][12]float32
			runFour(k.k, nb, &w[0], p[0], p[1], p[2], p[3], &acc)
			for r := range rows {
				dst[r] = k.sum(&acc[r])
			}
		}
		dst = dst[rows:]
		if len(dst) > 0 {
			a = a[rows*stride:]
		}
	}
}
