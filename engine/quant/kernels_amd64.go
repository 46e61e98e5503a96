//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// The amd64 kernels are written in Go assembly (*_amd64.s). Every kernel
// computes the same exact integer lane sums as its reference and applies
// the same float32 fused multiply-adds in the same order, so its results
// are bit-identical to the reference's; the tests check this on random
// rows. The final horizontal sums run in Go (hsum8), shared with the
// references.
//
// The kernels of the 32-element formats with signed weights (Q8_0, Q4_0)
// use the sign trick of llama.cpp (|w|·(y·sign w) with VPMADDUBSW), which
// is exact while the activation quants stay in -127..127, as every
// activation quantizer of this package produces.

// kernel is the signature of every assembly kernel: it accumulates nb
// blocks of weight row w against rows activation rows (1..4) stride bytes
// apart starting at a into acc[r] (lanes 0-7 the main sum, 8-11 the
// minimum term of the K-quants that have one).
type kernel func(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

// kernelSpec describes one weight type's kernel: block geometry of the
// weight and activation formats and how the lanes finish into a float.
type kernelSpec struct {
	typ    Type
	act    Type // the activation format, VecDotType(typ)
	k      kernel
	finish func(acc *[16]float32) float32
}

func finish8(acc *[16]float32) float32 { return hsum8((*[8]float32)(acc[:8])) }

// finishSum adds the scalar minimum term in lane 8 (Q4_1, Q5_1, Q5_K).
func finishSum(acc *[16]float32) float32 { return hsum8((*[8]float32)(acc[:8])) + acc[8] }

// finishMin adds the minimum lanes 8-11 as the K-quant references do.
func finishMin(acc *[16]float32) float32 {
	return hsum8((*[8]float32)(acc[:8])) + ((acc[8] + acc[10]) + (acc[9] + acc[11]))
}

// multi returns the MultiDotFunc of s, which checks the buffers' lengths
// before handing their addresses to assembly.
func (s kernelSpec) multi() MultiDotFunc {
	bs, wb, ab := s.typ.BlockSize(), s.typ.BlockBytes(), s.act.BlockBytes()
	return func(n int, w, a []byte, stride int, dst []float32) {
		rows := len(dst)
		if rows > MaxMultiRows {
			panic("quant: multi-row dot of more than MaxMultiRows rows")
		}
		nb := n / bs
		if nb == 0 || rows == 0 {
			clear(dst)
			return
		}
		// Slicing panics like the references' indexing would on short
		// buffers.
		_ = w[nb*wb-1]
		_ = a[(rows-1)*stride+nb*ab-1]
		var acc [MaxMultiRows][16]float32
		s.k(nb, &w[0], &a[0], stride, rows, &acc)
		for r := range dst {
			dst[r] = s.finish(&acc[r])
		}
	}
}

// single returns the DotFunc of s: the multi-row kernel on one row.
func (s kernelSpec) single() DotFunc {
	m := s.multi()
	return func(n int, w, a []byte) float32 {
		var d [1]float32
		m(n, w, a, 0, d[:])
		return d[0]
	}
}

func init() {
	x := cpu.X86
	if !(x.HasAVX2 && x.HasFMA && x.HasF16C) {
		return
	}
	kernelISA = "avx2"
	specs := []kernelSpec{
		{Q8_0, Q8_0, kernQ8_0AVX2, finish8},
		{Q4_0, Q8_0, kernQ4_0AVX2, finish8},
		{Q4_1, Q8_1, kernQ4_1AVX2, finishSum},
		{Q5_0, Q8_0, kernQ5_0AVX2, finish8},
		{Q5_1, Q8_1, kernQ5_1AVX2, finishSum},
		{Q2_K, Q8_K, kernQ2_KAVX2, finish8},
		{Q3_K, Q8_K, kernQ3_KAVX2, finish8},
		{Q4_K, Q8_K, kernQ4_KAVX2, finishMin},
		{Q5_K, Q8_K, kernQ5_KAVX2, finishSum},
		{Q6_K, Q8_K, kernQ6_KAVX2, finish8},
	}
	for _, s := range specs {
		accelerated[s.typ] = s.single()
		acceleratedMulti[s.typ] = s.multi()
	}
}

// Implemented in assembly.

func kernQ8_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ4_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ4_1AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ5_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ5_1AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ2_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ3_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ4_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ5_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ6_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
