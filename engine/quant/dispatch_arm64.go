//go:build arm64 && !noasm

package quant

// asmKernel names one arm64 assembly kernel (a format and an instruction
// set). The kernels are called through runOne and runFour, whose switches
// call each one directly: through a func value the compiler could not
// apply their //go:noescape, and every dot product would allocate its
// accumulators on the heap.
type asmKernel uint8

const (
	kQ8_0SDOT asmKernel = iota
	kQ8_0NEON
	kQ4_0SDOT
	kQ4_0NEON
	kQ5_0SDOT
	kQ5_0NEON
	kQ4_1SDOT
	kQ4_1NEON
	kQ5_1SDOT
	kQ5_1NEON
	kQ4_KSDOT
	kQ4_KNEON
	kQ5_KSDOT
	kQ5_KNEON
	kQ6_KSDOT
	kQ6_KNEON
	kQ3_KSDOT
	kQ3_KNEON
	kQ2_KSDOT
	kQ2_KNEON
)

// runOne runs kernel k on one activation row.
func runOne(k asmKernel, nb int, w, a *byte, acc *[12]float32) {
	switch k {
	case kQ8_0SDOT:
		dotQ8_0SDOT(nb, w, a, acc)
	case kQ8_0NEON:
		dotQ8_0NEON(nb, w, a, acc)
	case kQ4_0SDOT:
		dotQ4_0SDOT(nb, w, a, acc)
	case kQ4_0NEON:
		dotQ4_0NEON(nb, w, a, acc)
	case kQ5_0SDOT:
		dotQ5_0SDOT(nb, w, a, acc)
	case kQ5_0NEON:
		dotQ5_0NEON(nb, w, a, acc)
	case kQ4_1SDOT:
		dotQ4_1SDOT(nb, w, a, acc)
	case kQ4_1NEON:
		dotQ4_1NEON(nb, w, a, acc)
	case kQ5_1SDOT:
		dotQ5_1SDOT(nb, w, a, acc)
	case kQ5_1NEON:
		dotQ5_1NEON(nb, w, a, acc)
	case kQ4_KSDOT:
		dotQ4_KSDOT(nb, w, a, acc)
	case kQ4_KNEON:
		dotQ4_KNEON(nb, w, a, acc)
	case kQ5_KSDOT:
		dotQ5_KSDOT(nb, w, a, acc)
	case kQ5_KNEON:
		dotQ5_KNEON(nb, w, a, acc)
	case kQ6_KSDOT:
		dotQ6_KSDOT(nb, w, a, acc)
	case kQ6_KNEON:
		dotQ6_KNEON(nb, w, a, acc)
	case kQ3_KSDOT:
		dotQ3_KSDOT(nb, w, a, acc)
	case kQ3_KNEON:
		dotQ3_KNEON(nb, w, a, acc)
	case kQ2_KSDOT:
		dotQ2_KSDOT(nb, w, a, acc)
	case kQ2_KNEON:
		dotQ2_KNEON(nb, w, a, acc)
	default:
		panic("quant: unknown arm64 kernel")
	}
}

// runFour runs kernel k on four activation rows.
func runFour(k asmKernel, nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32) {
	switch k {
	case kQ8_0SDOT:
		dotQ8_0SDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ8_0NEON:
		dotQ8_0NEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ4_0SDOT:
		dotQ4_0SDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ4_0NEON:
		dotQ4_0NEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ5_0SDOT:
		dotQ5_0SDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ5_0NEON:
		dotQ5_0NEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ4_1SDOT:
		dotQ4_1SDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ4_1NEON:
		dotQ4_1NEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ5_1SDOT:
		dotQ5_1SDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ5_1NEON:
		dotQ5_1NEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ4_KSDOT:
		dotQ4_KSDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ4_KNEON:
		dotQ4_KNEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ5_KSDOT:
		dotQ5_KSDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ5_KNEON:
		dotQ5_KNEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ6_KSDOT:
		dotQ6_KSDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ6_KNEON:
		dotQ6_KNEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ3_KSDOT:
		dotQ3_KSDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ3_KNEON:
		dotQ3_KNEONx4(nb, w, a0, a1, a2, a3, acc)
	case kQ2_KSDOT:
		dotQ2_KSDOTx4(nb, w, a0, a1, a2, a3, acc)
	case kQ2_KNEON:
		dotQ2_KNEONx4(nb, w, a0, a1, a2, a3, acc)
	default:
		panic("quant: unknown arm64 kernel")
	}
}
