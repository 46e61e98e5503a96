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
// use the sign trick of llama.cpp (|w|·(y·sign w) with VPMADDUBSW or
// VPDPBUSD), which is exact while the activation quants stay in
// -127..127, as every activation quantizer of this package produces.
//
// The kernels are called statically (runKernel's switch), never through
// function values, so that the accumulators they fill stay on the
// caller's stack: a call through a function value makes its pointer
// arguments escape, which cost an allocation per dot product.

// kernelID names one assembly kernel of the block formats. Each
// accumulates nb blocks of a weight row against 1 to 4 activation rows
// into acc[r] (lanes 0-7 the main sum, 8-11 the minimum term of the
// formats that have one).
type kernelID uint8

const (
	kQ8_0AVX2 kernelID = iota
	kQ4_0AVX2
	kQ4_1AVX2
	kQ5_0AVX2
	kQ5_1AVX2
	kQ2_KAVX2
	kQ3_KAVX2
	kQ4_KAVX2
	kQ5_KAVX2
	kQ6_KAVX2
	kQ8_0AVXVNNI
	kQ4_0AVXVNNI
	kQ8_0AVX512VNNI
	kQ4_0AVX512VNNI
	kQ4_KAVX512
)

func runKernel(id kernelID, nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32) {
	switch id {
	case kQ8_0AVX2:
		kernQ8_0AVX2(nb, w, a, stride, rows, acc)
	case kQ4_0AVX2:
		kernQ4_0AVX2(nb, w, a, stride, rows, acc)
	case kQ4_1AVX2:
		kernQ4_1AVX2(nb, w, a, stride, rows, acc)
	case kQ5_0AVX2:
		kernQ5_0AVX2(nb, w, a, stride, rows, acc)
	case kQ5_1AVX2:
		kernQ5_1AVX2(nb, w, a, stride, rows, acc)
	case kQ2_KAVX2:
		kernQ2_KAVX2(nb, w, a, stride, rows, acc)
	case kQ3_KAVX2:
		kernQ3_KAVX2(nb, w, a, stride, rows, acc)
	case kQ4_KAVX2:
		kernQ4_KAVX2(nb, w, a, stride, rows, acc)
	case kQ5_KAVX2:
		kernQ5_KAVX2(nb, w, a, stride, rows, acc)
	case kQ6_KAVX2:
		kernQ6_KAVX2(nb, w, a, stride, rows, acc)
	case kQ8_0AVXVNNI:
		kernQ8_0AVXVNNI(nb, w, a, stride, rows, acc)
	case kQ4_0AVXVNNI:
		kernQ4_0AVXVNNI(nb, w, a, stride, rows, acc)
	case kQ8_0AVX512VNNI:
		kernQ8_0AVX512VNNI(nb, w, a, stride, rows, acc)
	case kQ4_0AVX512VNNI:
		kernQ4_0AVX512VNNI(nb, w, a, stride, rows, acc)
	case kQ4_KAVX512:
		kernQ4_KAVX512(nb, w, a, stride, rows, acc)
	default:
		panic("quant: unknown kernel")
	}
}

// How a row's lanes finish into a float.
const (
	finish8   = iota // hsum8 of lanes 0-7
	finishSum        // plus the scalar minimum term in lane 8 (Q4_1, Q5_1, Q5_K)
	finishMin        // plus lanes 8-11 as (8+10)+(9+11), as the Q4_K reference
)

// kernelSpec describes one weight type's kernel: the weight and
// activation formats and how the lanes finish.
type kernelSpec struct {
	typ    Type
	act    Type // the activation format, VecDotType(typ)
	k      kernelID
	finish uint8
}

// run is the multi-row dot product of s. It checks the buffers' lengths
// before handing their addresses to assembly.
func (s kernelSpec) run(n int, w, a []byte, stride int, dst []float32) {
	rows := len(dst)
	if rows > MaxMultiRows {
		panic("quant: multi-row dot of more than MaxMultiRows rows")
	}
	nb := n / s.typ.BlockSize()
	if nb == 0 || rows == 0 {
		clear(dst)
		return
	}
	// Slicing panics like the references' indexing would on short
	// buffers.
	_ = w[nb*s.typ.BlockBytes()-1]
	_ = a[(rows-1)*stride+nb*s.act.BlockBytes()-1]
	var acc [MaxMultiRows][16]float32
	runKernel(s.k, nb, &w[0], &a[0], stride, rows, &acc)
	for r := range dst {
		l := &acc[r]
		v := hsum8((*[8]float32)(l[:8]))
		switch s.finish {
		case finishSum:
			v += l[8]
		case finishMin:
			v += (l[8] + l[10]) + (l[9] + l[11])
		}
		dst[r] = v
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
		{Q8_0, Q8_0, kQ8_0AVX2, finish8},
		{Q4_0, Q8_0, kQ4_0AVX2, finish8},
		{Q4_1, Q8_1, kQ4_1AVX2, finishSum},
		{Q5_0, Q8_0, kQ5_0AVX2, finish8},
		{Q5_1, Q8_1, kQ5_1AVX2, finishSum},
		{Q2_K, Q8_K, kQ2_KAVX2, finish8},
		{Q3_K, Q8_K, kQ3_KAVX2, finish8},
		{Q4_K, Q8_K, kQ4_KAVX2, finishMin},
		{Q5_K, Q8_K, kQ5_KAVX2, finishSum},
		{Q6_K, Q8_K, kQ6_KAVX2, finish8},
	}
	switch isa {
	case isaAVXVNNI:
		specs[0].k, specs[1].k = kQ8_0AVXVNNI, kQ4_0AVXVNNI
	case isaAVX512VNNI:
		specs[0].k, specs[1].k = kQ8_0AVX512VNNI, kQ4_0AVX512VNNI
		if hasTileISA { // VPERMW, VPMADDUBSW on ZMM: AVX512BW too
			specs[7].k = kQ4_KAVX512
		}
	}
	clear(accelerated)
	clear(acceleratedMulti)
	for _, s := range specs {
		accelerated[s.typ] = func(n int, w, a []byte) float32 {
			var d [1]float32
			s.run(n, w, a, 0, d[:])
			return d[0]
		}
		acceleratedMulti[s.typ] = s.run
	}
	accelerated[F32] = func(n int, w, a []byte) float32 {
		var d [1]float32
		multiF32(n, w, a, 0, d[:])
		return d[0]
	}
	acceleratedMulti[F32] = multiF32
	for _, typ := range []Type{F16, BF16} {
		bf := typ == BF16
		accelerated[typ] = func(n int, w, a []byte) float32 {
			var d [1]float32
			multiHalf(bf, n, w, a, 0, d[:])
			return d[0]
		}
		acceleratedMulti[typ] = func(n int, w, a []byte, stride int, dst []float32) {
			multiHalf(bf, n, w, a, stride, dst)
		}
	}
	useTiles(isa)
	useQ4x16(isa)
	useIQ4x16(isa)
	useQ2Kx16(isa)
	useQ3Kx16(isa)
	useIQPanel(isa)
	useHalf16(isa)
	useBF16Z()
	useIQ(isa)
	kernelISA = isa
}

func init() {
	if isas := cpuISAs(); len(isas) > 0 {
		useISA(isas[len(isas)-1])
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

// multiHalf is the multi-row dot product of F16 (BF16 if bf): the kernel
// on whole groups of 8 elements, the reference's loop on the rest.
func multiHalf(bf bool, n int, w, a []byte, stride int, dst []float32) {
	checkRows(n, 2, w, a, stride, dst)
	var acc [MaxMultiRows]float64
	ng := n / 8
	if ng > 0 && len(dst) > 0 {
		if bf {
			kernBF16AVX2(ng, &w[0], &a[0], stride, len(dst), &acc)
		} else {
			kernF16AVX2(ng, &w[0], &a[0], stride, len(dst), &acc)
		}
	}
	x := u16View(w)[:n]
	for r := range dst {
		y := u16View(a[r*stride:])[:n]
		if bf {
			dst[r] = sumBF16(acc[r], 8*ng, x, y)
		} else {
			dst[r] = sumF16(acc[r], 8*ng, x, y)
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

// Implemented in assembly. None keeps a pointer.

//go:noescape
func kernQ8_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ4_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ8_0AVXVNNI(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ4_0AVXVNNI(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ8_0AVX512VNNI(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ4_0AVX512VNNI(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ4_KAVX512(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ4_1AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ5_0AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ5_1AVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ2_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ3_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ4_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ5_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernQ6_KAVX2(nb int, w, a *byte, stride, rows int, acc *[MaxMultiRows][16]float32)

//go:noescape
func kernF16AVX2(n int, w, a *byte, stride, rows int, acc *[MaxMultiRows]float64)

//go:noescape
func kernBF16AVX2(n int, w, a *byte, stride, rows int, acc *[MaxMultiRows]float64)

//go:noescape
func kernF32AVX2(n int, w, a *byte, stride, rows int, acc *[MaxMultiRows][4]float32)
