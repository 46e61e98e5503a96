//go:build arm64 && !noasm

package quant

// K-quant kernels in kquant_arm64.s, plain NEON and SDOT, one row and
// four rows: each computes a row's 8 float lanes (acc[0:8]) and, for
// Q4_K and Q5_K, its minimum lanes (acc[8:12]); kKernel adds them up in
// the references' order. acc must be the Go side's stack array.

//go:noescape
func dotQ4_KSDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ4_KNEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ5_KSDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ5_KNEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ6_KSDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ6_KNEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ3_KSDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ3_KNEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ2_KSDOT(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ2_KNEON(nb int, w, a *byte, acc *[12]float32)

//go:noescape
func dotQ4_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ4_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ6_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ6_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ5_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ5_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ3_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ3_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ2_KSDOTx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

//go:noescape
func dotQ2_KNEONx4(nb int, w, a0, a1, a2, a3 *byte, acc *[4][12]float32)

// kMinLanes says how a K-quant kernel's acc[8:12] joins the 8 lanes.
type kMinLanes int

const (
	kMinNone kMinLanes = iota // Q6_K, Q3_K, Q2_K (in the lanes): nothing
	kMinOne                   // Q5_K: the scalar summs in acc[8]
	kMinFour                  // Q4_K: 4 lanes added as (0+2)+(1+3)
)

// kKernel is the assembly of one 256-element super-block format: one
// row, and four activation rows at once.
type kKernel struct {
	k      asmKernel
	wBytes int
	mins   kMinLanes
}

var kquantSDOT = map[Type]kKernel{
	Q4_K: {kQ4_KSDOT, q4_KBytes, kMinFour},
	Q5_K: {kQ5_KSDOT, q5_KBytes, kMinOne},
	Q6_K: {kQ6_KSDOT, q6_KBytes, kMinNone},
	Q3_K: {kQ3_KSDOT, q3_KBytes, kMinNone},
	Q2_K: {kQ2_KSDOT, q2_KBytes, kMinNone},
}

var kquantNEON = map[Type]kKernel{
	Q4_K: {kQ4_KNEON, q4_KBytes, kMinFour},
	Q5_K: {kQ5_KNEON, q5_KBytes, kMinOne},
	Q6_K: {kQ6_KNEON, q6_KBytes, kMinNone},
	Q3_K: {kQ3_KNEON, q3_KBytes, kMinNone},
	Q2_K: {kQ2_KNEON, q2_KBytes, kMinNone},
}

func (k kKernel) dot(n int, w, a []byte) float32 {
	nb := n / QKK
	if nb == 0 {
		return 0
	}
	// The assembly reads nb super-blocks of each row without bounds checks.
	_, _ = w[nb*k.wBytes-1], a[nb*q8_KBytes-1]
	var acc [12]float32
	runOne(k.k, nb, &w[0], &a[0], &acc)
	return k.sum(&acc)
}

// sum adds one row's lanes in the references' order.
func (k kKernel) sum(acc *[12]float32) float32 {
	s := hsum8((*[8]float32)(acc[:8]))
	switch k.mins {
	case kMinOne:
		s += acc[8]
	case kMinFour:
		s += (acc[8] + acc[10]) + (acc[9] + acc[11])
	}
	return s
}

func (k kKernel) multi(n int, w, a []byte, stride int, dst []float32) {
	nb := n / QKK
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
			// and dropped.
			var p [MaxMultiRows]*byte
			for r := range p {
				off := min(r, rows-1) * stride
				_ = a[off+nb*q8_KBytes-1]
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
