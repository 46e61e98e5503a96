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
