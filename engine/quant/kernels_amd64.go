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

// The instruction sets of the kernels, from the baseline up. Every level
// runs the AVX2 kernels; the VNNI levels replace those of Q8_0 and Q4_0.
const (
	isaAVX2       = "avx2"
	isaAVXVNNI    = "avx-vnni"
	isaAVX512VNNI = "avx512-vnni"
)

// cpuISAs lists the kernel instruction sets this CPU runs, best last; none
// without AVX2, FMA and F16C.
func cpuISAs() []string {
	x := cpu.X86
	if !(x.HasAVX2 && x.HasFMA && x.HasF16C) {
		return nil
	}
	isas := []string{isaAVX2}
	if x.HasAVXVNNI {
		isas = append(isas, isaAVXVNNI)
	}
	if x.HasAVX512F && x.HasAVX512VL && x.HasAVX512VNNI {
		isas = append(isas, isaAVX512VNNI)
	}
	return isas
}

// useISA fills the kernel tables with the kernels of isa, one of
// cpuISAs. Tests call it to run every level this CPU has.
func useISA(isa string) {
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
	switch isa {
	case isaAVXVNNI:
		specs[0].k, specs[1].k = kernQ8_0AVXVNNI, kernQ4_0AVXVNNI
	case isaAVX512VNNI:
		specs[0].k, specs[1].k = kernQ8_0AVX512VNNI, kernQ4_0AVX512VNNI
	}
	clear(accelerated)
	clear(acceleratedMulti)
	for _, s := range specs {
		accelerated[s.typ] = s.single()
		acceleratedMulti[s.typ] = s.multi()
	}
	for typ, m := range map[Type]MultiDotFunc{
		F32:  multiF32,
		F16:  multiHalf(kernF16AVX2, sumF16),
		BF16: multiHalf(kernBF16AVX2, sumBF16),
	} {
		accelerated[typ] = singleOf(m)
		acceleratedMulti[typ] = m
	}
	kernelISA = isa
}

func init() {
	if isas := cpuISAs(); len(isas) > 0 {
		useISA(isas[len(isas)-1])
	}
}

// singleOf returns the DotFunc of multi-row kernel m on one row.
func singleOf(m MultiDotFunc) DotFunc {
	return func(n int, w, a []byte) float32 {
		var d [1]float32
		m(n, w, a, 0, d[:])
		return d[0]
	}
}

// checkRows panics unless dst has at most MaxMultiRows rows and w and a
// hold n elements of size bytes (a in len(dst) rows stride bytes apart),
// as the references' indexing would on short buffers.
func checkRows(n, size int, w, a []byte, stride int, dst []float32) {
	if len(dst) > MaxMultiRows {
		panic("quant: multi-row dot of more than MaxMultiRows rows")
	}
	if n > 0 && len(dst) > 0 {
		_ = w[n*size-1]
		_ = a[(len(dst)-1)*stride+n*size-1]
	}
}

// multiHalf returns the multi-row dot product of a 16-bit float format:
// kern on whole groups of 8 elements, sum (the reference's loop) on the
// rest.
func multiHalf(kern func(n int, w, a *byte, stride, rows int, acc *[MaxMultiRows]float64),
	sum func(s float64, i int, x, y []uint16) float32) MultiDotFunc {
	return func(n int, w, a []byte, stride int, dst []float32) {
		checkRows(n, 2, w, a, stride, dst)
		var acc [MaxMultiRows]float64
		ng := n / 8
		if ng > 0 && len(dst) > 0 {
			kern(ng, &w[0], &a[0], stride, len(dst), &acc)
		}
		x := u16View(w)[:n]
		for r := range dst {
			dst[r] = sum(acc[r], 8*ng, x, u16View(a[r*stride:])[:n])
		}
	}
}

// multiF32 is the multi-row F32 dot product: kernF32AVX2 on whole groups
// of 4 elements, sumF32 on the rest.
func multiF32(n int, w, a []byte, stride int, dst []float32) {
	checkRows(n, 4, w, a, stride, dst)
	var acc [MaxMultiRows][4]float32
	ng := n / 4
	if ng > 0 && len(dst) > 0 {
		kernF32AVX2(ng, &w[0], &a[0], stride, len(dst), &acc)
	}
	x := f32View(w)[:n]
	for r := range dst {
		s := &acc[r]
		dst[r] = sumF32(s[0], s[1], s[2], s[3], 4*ng, x, f32View(a[r*stride:])[:n])
	}
}

// Implemented in assembly.

func kernQ8_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ4_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ8_0AVXVNNI(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ4_0AVXVNNI(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ8_0AVX512VNNI(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ4_0AVX512VNNI(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ4_1AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ5_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ5_1AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ2_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ3_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ4_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ5_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernQ6_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)
func kernF16AVX2(n int, w, a *byte, stride, rows int, acc *[MaxMultiRows]float64)
func kernBF16AVX2(n int, w, a *byte, stride, rows int, acc *[MaxMultiRows]float64)
func kernF32AVX2(n int, w, a *byte, stride, rows int, acc *[MaxMultiRows][4]float32)
