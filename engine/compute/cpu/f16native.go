package cpu

import (
	"unsafe"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// matmulF16Native is MatMul of an F16 weight in the arithmetic of a
// native AVX512-FP16 llama.cpp build (Options.Build): the activations
// rounded to f16, then one activation row in half precision
// (quant.DotHalfFP16, ggml_vec_dot_f16) and two or more in tinyBLAS's
// float32 order (quant.DotF16TinyBLAS), where that build sends them.
func (b *Backend) matmulF16Native(d, xs, ws *tensor) {
	n, in := xs.rows, xs.cols
	if cap(b.f16mm.act) < n*in {
		b.f16mm.act = make([]uint16, n*in)
	}
	act := b.f16mm.act[:n*in]
	quant.FloatToHalf(act, xs.f32[:n*in])
	j := &b.f16mm
	j.d, j.w, j.a, j.n, j.in, j.out = d.f32, ws.raw, act, n, in, ws.rows
	j.rowBytes = ws.rowBytes
	b.w.run(ws.rows, decodeGrain, j)
	j.d, j.w = nil, nil
}

// f16Job computes output columns [lo, hi) of matmulF16Native.
type f16Job struct {
	d          []float32
	w          []byte
	act, a     []uint16 // act: the job's buffer; a: this call's rows of it
	n, in, out int
	rowBytes   int
}

func (j *f16Job) do(_, lo, hi int) {
	for r := lo; r < hi; r++ {
		wr := halves(j.w[r*j.rowBytes : r*j.rowBytes+2*j.in])
		for i := range j.n {
			a := j.a[i*j.in : (i+1)*j.in]
			if j.n == 1 {
				j.d[r] = quant.DotHalfFP16(wr, a)
			} else {
				j.d[i*j.out+r] = quant.DotF16TinyBLAS(wr, a)
			}
		}
	}
}

// halves views little-endian f16 bytes as their uint16 values.
func halves(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

// matmulQ4KGEMVRows recomputes, for a repacked Q4_K weight with
// BuildNativeFP16, the activation rows that llama.cpp sends to its
// repacked GEMV rather than its GEMM: every row of a pass of fewer than
// four, else those past the last multiple of four (quant.DotQ4_KGEMV).
// Other weights and arithmetics return at once.
func (b *Backend) matmulQ4KGEMVRows(d, xs, ws *tensor) {
	if ws.gemvRaw == nil || !b.fp16 {
		return
	}
	n, in := xs.rows, xs.cols
	first := n - n%4
	if n < 4 {
		first = 0
	}
	if first == n {
		return
	}
	quantize, err := quant.QuantizeRowFor(quant.Q8_K)
	if err != nil {
		panic(err)
	}
	qrow, err := quant.Q8_K.RowBytes(in)
	if err != nil {
		panic(err)
	}
	act := make([]byte, qrow)
	for i := first; i < n; i++ {
		quantize(act, xs.f32[i*in:(i+1)*in])
		for r := range ws.rows {
			d.f32[i*ws.rows+r] = quant.DotQ4_KGEMV(in, ws.gemvRaw[r*ws.rowBytes:(r+1)*ws.rowBytes], act)
		}
	}
}

// matmulQ2KNative is MatMul of a Q2_K weight of a multiple of 8 rows with
// BuildNativeFP16, which llama.cpp repacks on AVX-512 CPUs: activation
// rows in groups of four take its GEMM's order, the rest its GEMV's
// (quant.DotQ2_KRepacked). Pure Go, one output row at a time: these
// matrices are rare (the K mixes' fallbacks) and this is a reference path.
func (b *Backend) matmulQ2KNative(d, xs, ws *tensor) {
	n, in := xs.rows, xs.cols
	quantize, err := quant.QuantizeRowFor(quant.Q8_K)
	if err != nil {
		panic(err)
	}
	qrow, err := quant.Q8_K.RowBytes(in)
	if err != nil {
		panic(err)
	}
	act := make([]byte, qrow)
	for i := range n {
		quantize(act, xs.f32[i*in:(i+1)*in])
		gemm := i < n-n%4
		for r := range ws.rows {
			d.f32[i*ws.rows+r] = quant.DotQ2_KRepacked(in, ws.raw[r*ws.rowBytes:(r+1)*ws.rowBytes], act, gemm)
		}
	}
}
