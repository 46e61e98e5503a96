// Package cpu is the reference compute backend: every operation the model
// families need, on the CPU, multi-threaded over a persistent worker pool,
// with the hot dot products delegated to engine/quant's kernels.
package cpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// Backend runs operations on the CPU. Its methods must not be called
// concurrently: one forward pass at a time (batching puts many sequences in
// one pass instead).
type Backend struct {
	w       *workers
	scratch []byte
}

// Options configures the CPU backend.
type Options struct {
	// Threads is the number of worker threads; 0 means all cores.
	Threads int
}

// New returns a CPU backend. Call Close to stop its workers.
func New(o Options) *Backend { return &Backend{w: newWorkers(o.Threads)} }

// Close stops the worker goroutines.
func (b *Backend) Close() { b.w.close() }

// Threads is the number of worker threads.
func (b *Backend) Threads() int { return b.w.n }

// Name implements compute.Backend.
func (b *Backend) Name() string { return "cpu" }

type tensor struct {
	rows, cols int
	typ        quant.Type
	f32        []float32 // F32 activations
	raw        []byte    // weights, in their GGUF layout
	rowBytes   int
}

func (t *tensor) Rows() int        { return t.rows }
func (t *tensor) Cols() int        { return t.cols }
func (t *tensor) Type() quant.Type { return t.typ }

func ct(t compute.Tensor) *tensor { return t.(*tensor) }

// Weight implements compute.Backend.
func (b *Backend) Weight(typ quant.Type, rows, cols int, data []byte) (compute.Tensor, error) {
	rb, err := typ.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	if len(data) != rb*rows {
		return nil, fmt.Errorf("weight %s %dx%d: have %d bytes, want %d", typ, rows, cols, len(data), rb*rows)
	}
	if _, err := quant.DotFor(typ); err != nil {
		return nil, fmt.Errorf("weight type %s: %w", typ, compute.ErrUnsupported)
	}
	t := &tensor{rows: rows, cols: cols, typ: typ, raw: data, rowBytes: rb}
	if typ == quant.F32 {
		t.f32 = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(data))), rows*cols)
	}
	return t, nil
}

// New implements compute.Backend.
func (b *Backend) New(rows, cols int) compute.Tensor {
	f := make([]float32, rows*cols)
	return &tensor{rows: rows, cols: cols, typ: quant.F32, f32: f, raw: f32Bytes(f), rowBytes: 4 * cols}
}

// Upload implements compute.Backend.
func (b *Backend) Upload(dst compute.Tensor, src []float32) { copy(ct(dst).f32, src) }

// Download implements compute.Backend.
func (b *Backend) Download(src compute.Tensor, dst []float32) { copy(dst, ct(src).f32) }

// F32 exposes the memory of an F32 tensor of this backend, for tests and
// the engine's host-side steps (logits). It panics on other tensors.
func F32(t compute.Tensor) []float32 {
	c := ct(t)
	if c.typ != quant.F32 {
		panic("cpu.F32 of a non-F32 tensor")
	}
	return c.f32
}

func (b *Backend) buf(n int) []byte {
	if cap(b.scratch) < n {
		b.scratch = make([]byte, n)
	}
	return b.scratch[:n]
}

// GetRows implements compute.Backend.
func (b *Backend) GetRows(dst, table compute.Tensor, ids []int32) {
	d, t := ct(dst), ct(table)
	if d.cols != t.cols || d.rows < len(ids) {
		panic(fmt.Sprintf("GetRows: dst %dx%d, table %dx%d, %d ids", d.rows, d.cols, t.rows, t.cols, len(ids)))
	}
	for i, id := range ids {
		if id < 0 || int(id) >= t.rows {
			panic(fmt.Sprintf("GetRows: id %d out of range [0,%d)", id, t.rows))
		}
		row := t.raw[int(id)*t.rowBytes : (int(id)+1)*t.rowBytes]
		if err := quant.Dequantize(t.typ, row, d.f32[i*d.cols:(i+1)*d.cols]); err != nil {
			panic(err)
		}
	}
}

// MatMul implements compute.Backend. Activations are quantized once to the
// weight type's dot-product format, then output rows are split across the
// workers so each weight row is read once for all rows of x.
func (b *Backend) MatMul(dst, x, w compute.Tensor) {
	d, xs, ws := ct(dst), ct(x), ct(w)
	if xs.cols != ws.cols || d.rows != xs.rows || d.cols != ws.rows {
		panic(fmt.Sprintf("MatMul: dst %dx%d, x %dx%d, w %dx%d", d.rows, d.cols, xs.rows, xs.cols, ws.rows, ws.cols))
	}
	vt := quant.VecDotType(ws.typ)
	dot, err := quant.DotFor(ws.typ)
	if err != nil {
		panic(err)
	}
	n, in, out := xs.rows, xs.cols, ws.rows
	var act []byte
	qrow, _ := vt.RowBytes(in)
	if vt == quant.F32 {
		act = xs.raw
	} else {
		quantize, err := quant.QuantizeRowFor(vt)
		if err != nil {
			panic(err)
		}
		act = b.buf(n * qrow)
		b.w.run(n, 1, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				quantize(act[r*qrow:(r+1)*qrow], xs.f32[r*in:(r+1)*in])
			}
		})
	}
	wrb := ws.rowBytes
	b.w.run(out, 16, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			wrow := ws.raw[o*wrb : (o+1)*wrb]
			for r := 0; r < n; r++ {
				d.f32[r*out+o] = dot(in, wrow, act[r*qrow:(r+1)*qrow])
			}
		}
	})
}

// AddRowsScaled implements compute.Backend.
func (b *Backend) AddRowsScaled(dst, src compute.Tensor, rows []int32, scales []float32) {
	d, x := ct(dst), ct(src)
	if d.cols != x.cols || x.rows < len(rows) || len(scales) != len(rows) || x.typ != quant.F32 {
		panic(fmt.Sprintf("AddRowsScaled: dst %dx%d, src %dx%d %s, %d rows, %d scales",
			d.rows, d.cols, x.rows, x.cols, x.typ, len(rows), len(scales)))
	}
	n := d.cols
	for i, r := range rows {
		if r < 0 || int(r) >= d.rows {
			panic(fmt.Sprintf("AddRowsScaled: row %d out of range [0,%d)", r, d.rows))
		}
		out, in, s := d.f32[int(r)*n:(int(r)+1)*n], x.f32[i*n:(i+1)*n], scales[i]
		for j, v := range in {
			out[j] += s * v
		}
	}
}

// AddRow implements compute.Backend.
func (b *Backend) AddRow(dst, bias compute.Tensor) {
	d, r := ct(dst), ct(bias)
	br := r.f32
	if r.typ != quant.F32 {
		br = make([]float32, r.cols)
		if err := quant.Dequantize(r.typ, r.raw, br); err != nil {
			panic(err)
		}
	}
	if len(br) != d.cols {
		panic(fmt.Sprintf("AddRow: dst cols %d, bias %d", d.cols, len(br)))
	}
	for i := 0; i < d.rows; i++ {
		row := d.f32[i*d.cols : (i+1)*d.cols]
		for j, v := range br {
			row[j] += v
		}
	}
}

// Add implements compute.Backend.
func (b *Backend) Add(dst, a, c compute.Tensor) {
	d, x, y := ct(dst).f32, ct(a).f32, ct(c).f32
	if len(d) != len(x) || len(d) != len(y) {
		panic("Add: shape mismatch")
	}
	for i := range d {
		d[i] = x[i] + y[i]
	}
}

// Scale implements compute.Backend.
func (b *Backend) Scale(x compute.Tensor, s float32) {
	v := ct(x).f32
	for i := range v {
		v[i] *= s
	}
}

// RMSNorm implements compute.Backend. The sum of squares is accumulated in
// float64, as ggml does, so results match llama.cpp closely.
func (b *Backend) RMSNorm(dst, x, w compute.Tensor, eps float32) {
	d, xs, ws := ct(dst), ct(x), ct(w)
	if ws.typ != quant.F32 || ws.cols != xs.cols || d.cols != xs.cols || d.rows != xs.rows {
		panic("RMSNorm: shape or type mismatch")
	}
	n := xs.cols
	b.w.run(xs.rows, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			in, out := xs.f32[r*n:(r+1)*n], d.f32[r*n:(r+1)*n]
			var sum float64
			for _, v := range in {
				sum += float64(v * v)
			}
			// float32 sqrt then float32 division, like sqrtf in ggml.
			scale := 1 / float32(math.Sqrt(float64(float32(sum/float64(n))+eps)))
			for i, v := range in {
				out[i] = v * scale * ws.f32[i]
			}
		}
	})
}

// SwiGLU implements compute.Backend.
func (b *Backend) SwiGLU(dst, gate, up compute.Tensor) {
	d, g, u := ct(dst).f32, ct(gate).f32, ct(up).f32
	if len(d) != len(g) || len(d) != len(u) {
		panic("SwiGLU: shape mismatch")
	}
	b.w.run(len(d), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := g[i]
			d[i] = x / (1 + float32(math.Exp(float64(-x)))) * u[i]
		}
	})
}

// GeGLU implements compute.Backend with the tanh approximation of gelu.
func (b *Backend) GeGLU(dst, gate, up compute.Tensor) {
	d, g, u := ct(dst).f32, ct(gate).f32, ct(up).f32
	if len(d) != len(g) || len(d) != len(u) {
		panic("GeGLU: shape mismatch")
	}
	const c = 0.7978845608028654 // sqrt(2/pi)
	b.w.run(len(d), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := float64(g[i])
			d[i] = float32(0.5*x*(1+math.Tanh(c*(x+0.044715*x*x*x)))) * u[i]
		}
	})
}

// Softcap implements compute.Backend.
func (b *Backend) Softcap(x compute.Tensor, c float32) {
	v := ct(x).f32
	for i := range v {
		v[i] = c * float32(math.Tanh(float64(v[i]/c)))
	}
}

// f32Bytes views a float32 slice as its little-endian bytes (all supported
// CPUs are little-endian).
func f32Bytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}
