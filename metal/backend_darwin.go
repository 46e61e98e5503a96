//go:build darwin

package metal

import (
	_ "embed"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego/objc"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/quant"
)

//go:embed kernels.metal
var kernelSource string

// Backend runs operations on the default Metal device. Like the CPU
// backend its methods must not be called concurrently.
//
// Operations are recorded and encoded into one command buffer, committed
// and waited for only when the host needs memory (Upload, Download, a CPU
// fallback, KV block copies): buffers use shared storage, so the host and
// the GPU see the same bytes and a fallback operates on them in place.
type Backend struct {
	rt       *rt
	dev      objc.ID
	queue    objc.ID
	lib      objc.ID
	pipes    map[string]objc.ID
	devName  string
	host     *cpu.Backend
	pageSize int

	pending []dispatch
	temps   []objc.ID // per-call buffers, released after the next flush
}

// dispatch is one recorded kernel launch.
type dispatch struct {
	pipe            objc.ID
	args            []arg
	groups, threads mtlSize
	keep            []*tensor // tensors the launch uses, alive until it ran
}

// arg is one kernel argument: a buffer at an offset, or inline bytes
// (setBytes, at most 4 KiB).
type arg struct {
	buf   objc.ID
	bytes []byte
}

// New opens the system default Metal device, compiles kernels.metal and
// builds one compute pipeline per kernel. It fails where no Metal device
// exists (for example in a virtual machine).
func New(o Options) (*Backend, error) {
	r, err := loadRuntime()
	if err != nil {
		return nil, fmt.Errorf("metal: %w", err)
	}
	b := &Backend{rt: r, pipes: map[string]objc.ID{}, pageSize: os.Getpagesize()}
	err = r.withPool(func() error {
		b.dev = r.createDevice()
		if b.dev == 0 {
			return ErrNoDevice
		}
		b.devName = r.goString(b.dev.Send(r.selName))
		if !objc.Send[bool](b.dev, r.selHasUnified) {
			return fmt.Errorf("device %s has no unified memory", b.devName)
		}
		b.queue = b.dev.Send(r.selNewQueue)
		if b.queue == 0 {
			return fmt.Errorf("device %s: no command queue", b.devName)
		}
		src := r.nsString(kernelSource)
		defer r.release(src)
		opts := objc.ID(r.clsCompileOptions).Send(r.selNew)
		defer r.release(opts)
		// Fast math would let the compiler assume no infinities; attention
		// starts its running maximum at -INFINITY.
		opts.Send(r.selSetFastMath, false)
		var errID objc.ID
		b.lib = b.dev.Send(r.selNewLibrary, src, opts, unsafe.Pointer(&errID))
		if b.lib == 0 {
			return fmt.Errorf("compile kernels.metal: %s", r.errorText(errID))
		}
		for _, name := range kernelNames {
			ns := r.nsString(name)
			fn := b.lib.Send(r.selNewFunction, ns)
			r.release(ns)
			if fn == 0 {
				return fmt.Errorf("kernel %s not found in kernels.metal", name)
			}
			var perr objc.ID
			p := b.dev.Send(r.selNewPipeline, fn, unsafe.Pointer(&perr))
			r.release(fn)
			if p == 0 {
				return fmt.Errorf("pipeline %s: %s", name, r.errorText(perr))
			}
			b.pipes[name] = p
			if w := objc.Send[uint](p, r.selExecWidth); w != 32 {
				return fmt.Errorf("pipeline %s: SIMD width %d, kernels need 32", name, w)
			}
			if m := objc.Send[uint](p, r.selMaxThreads); m < 256 {
				return fmt.Errorf("pipeline %s: at most %d threads per threadgroup, kernels need 256", name, m)
			}
		}
		return nil
	})
	if err != nil {
		b.releaseDevice()
		return nil, fmt.Errorf("metal: %w", err)
	}
	b.host = cpu.New(cpu.Options{Threads: o.Threads})
	return b, nil
}

func (b *Backend) releaseDevice() {
	for _, p := range b.pipes {
		b.rt.release(p)
	}
	b.pipes = nil
	b.rt.release(b.lib)
	b.rt.release(b.queue)
	b.rt.release(b.dev)
	b.lib, b.queue, b.dev = 0, 0, 0
}

// Close waits for outstanding work and releases the device, its pipelines
// and the CPU fallback's workers. Tensors release their buffers when they
// are garbage collected.
func (b *Backend) Close() {
	b.flush()
	b.releaseDevice()
	b.host.Close()
}

// Name implements compute.Backend.
func (b *Backend) Name() string { return "metal" }

// Device is the Metal device's name, e.g. "Apple M2".
func (b *Backend) Device() string { return b.devName }

// Threads is the number of threads of the CPU fallback backend.
func (b *Backend) Threads() int { return b.host.Threads() }

// tensor is a Metal buffer in shared storage. mem is its contents as seen
// by the host; host is a CPU-backend tensor over the same bytes, through
// which fallback operations read and write it in place.
type tensor struct {
	rows, cols int
	typ        quant.Type
	buf        objc.ID
	mem        []byte
	rowBytes   int
	host       compute.Tensor
	data       []byte // wrapped host memory (no-copy weights), kept alive
}

func (t *tensor) Rows() int        { return t.rows }
func (t *tensor) Cols() int        { return t.cols }
func (t *tensor) Type() quant.Type { return t.typ }

func mt(t compute.Tensor) *tensor { return t.(*tensor) }

func (t *tensor) f32() []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(t.mem))), t.rows*t.cols)
}

// newBuffer allocates a zeroed shared buffer of n bytes (at least 16, as
// Metal refuses empty buffers) and returns it with its host view.
func (b *Backend) newBuffer(n int) (objc.ID, []byte, error) {
	size := max(n, 16)
	buf := b.dev.Send(b.rt.selNewBuffer, uint(size), uint(0)) // MTLResourceStorageModeShared
	if buf == 0 {
		return 0, nil, fmt.Errorf("metal: allocate %d bytes: %w", size, ErrOutOfMemory)
	}
	mem := unsafe.Slice((*byte)(objc.Send[unsafe.Pointer](buf, b.rt.selContents)), size)[:n]
	clear(mem)
	return buf, mem, nil
}

// wrap makes a tensor of buf and attaches a cleanup releasing it.
func (b *Backend) wrap(t *tensor) (*tensor, error) {
	var err error
	if t.host, err = b.host.Weight(t.typ, t.rows, t.cols, t.mem); err != nil {
		b.rt.release(t.buf)
		return nil, err
	}
	r := b.rt
	runtime.AddCleanup(t, func(buf objc.ID) { r.release(buf) }, t.buf)
	return t, nil
}

// Weight implements compute.Backend. Page-aligned data whose size is a
// whole number of pages (a memory-mapped file's pages) is wrapped without
// copying; anything else is copied into a new shared buffer.
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
	t := &tensor{rows: rows, cols: cols, typ: typ, rowBytes: rb}
	ptr := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	if len(data) > 0 && ptr%uintptr(b.pageSize) == 0 && len(data)%b.pageSize == 0 {
		t.buf = b.dev.Send(b.rt.selNewBufferNoCopy, unsafe.Pointer(unsafe.SliceData(data)), uint(len(data)), uint(0), objc.ID(0))
		t.mem, t.data = data, data
	}
	if t.buf == 0 {
		var mem []byte
		if t.buf, mem, err = b.newBuffer(len(data)); err != nil {
			return nil, err
		}
		copy(mem, data)
		t.mem = mem
	}
	return b.wrap(t)
}

// New implements compute.Backend.
func (b *Backend) New(rows, cols int) compute.Tensor {
	buf, mem, err := b.newBuffer(4 * rows * cols)
	if err != nil {
		panic(err) // as make() would on exhaustion: no error return here
	}
	t, err := b.wrap(&tensor{rows: rows, cols: cols, typ: quant.F32, buf: buf, mem: mem, rowBytes: 4 * cols})
	if err != nil {
		panic(err)
	}
	return t
}

// Upload implements compute.Backend.
func (b *Backend) Upload(dst compute.Tensor, src []float32) {
	b.flush()
	copy(mt(dst).f32(), src)
}

// Download implements compute.Backend.
func (b *Backend) Download(src compute.Tensor, dst []float32) {
	b.flush()
	copy(dst, mt(src).f32())
}

// temp copies data into a buffer released after the next flush, for
// arguments too large for setBytes (index lists, block tables, tables).
func (b *Backend) temp(data []byte) objc.ID {
	if len(data) == 0 {
		data = make([]byte, 16)
	}
	buf := b.dev.Send(b.rt.selNewBufferBytes, unsafe.Pointer(unsafe.SliceData(data)), uint(len(data)), uint(0))
	runtime.KeepAlive(data)
	if buf == 0 {
		panic(fmt.Errorf("metal: allocate %d bytes: %w", len(data), ErrOutOfMemory))
	}
	b.temps = append(b.temps, buf)
	return buf
}

// enqueue records a launch of kernel over groups×threads. Arguments bind
// to buffer indices in order: a *tensor binds its buffer, an objc.ID a
// temp buffer, a []byte inline bytes.
func (b *Backend) enqueue(kernel string, groups, threads mtlSize, args ...any) {
	p, ok := b.pipes[kernel]
	if !ok {
		panic("metal: no pipeline " + kernel)
	}
	d := dispatch{pipe: p, groups: groups, threads: threads}
	for _, a := range args {
		switch x := a.(type) {
		case *tensor:
			d.args = append(d.args, arg{buf: x.buf})
			d.keep = append(d.keep, x)
		case objc.ID:
			d.args = append(d.args, arg{buf: x})
		case []byte:
			if len(x) > 4096 {
				panic("metal: inline argument over 4 KiB")
			}
			d.args = append(d.args, arg{bytes: x})
		default:
			panic(fmt.Sprintf("metal: kernel argument of type %T", a))
		}
	}
	b.pending = append(b.pending, d)
}

// flush encodes every recorded launch into one command buffer (a serial
// compute encoder, so each launch sees the previous one's writes),
// commits it and waits. A GPU failure panics: the compute interface has
// no error path, and continuing would return wrong results.
func (b *Backend) flush() {
	if len(b.pending) == 0 {
		return
	}
	r := b.rt
	err := r.withPool(func() error {
		cb := b.queue.Send(r.selCommandBuffer)
		enc := cb.Send(r.selComputeEncoder)
		for _, d := range b.pending {
			enc.Send(r.selSetPipeline, d.pipe)
			for i, a := range d.args {
				if a.bytes != nil {
					enc.Send(r.selSetBytes, unsafe.Pointer(unsafe.SliceData(a.bytes)), uint(len(a.bytes)), uint(i))
				} else {
					enc.Send(r.selSetBuffer, a.buf, uint(0), uint(i))
				}
			}
			enc.Send(r.selDispatch, d.groups, d.threads)
		}
		enc.Send(r.selEndEncoding)
		cb.Send(r.selCommit)
		cb.Send(r.selWait)
		if objc.Send[uint](cb, r.selStatus) == statusError {
			return fmt.Errorf("command buffer failed: %s", r.errorText(cb.Send(r.selError)))
		}
		return nil
	})
	runtime.KeepAlive(b.pending)
	clear(b.pending)
	b.pending = b.pending[:0]
	for _, t := range b.temps {
		r.release(t)
	}
	b.temps = b.temps[:0]
	if err != nil {
		panic(fmt.Errorf("metal: %w", err))
	}
}

func ceilDiv(a, b int) uint { return uint((a + b - 1) / b) }

// elementwise launches a one-thread-per-element kernel over n elements.
func (b *Backend) elementwise(kernel string, n int, args ...any) {
	if n == 0 {
		return
	}
	b.enqueue(kernel, mtlSize{ceilDiv(n, 256), 1, 1}, mtlSize{256, 1, 1}, args...)
}

// GetRows implements compute.Backend: on the GPU for the types of
// kernelSuffix, on the CPU otherwise.
func (b *Backend) GetRows(dst, table compute.Tensor, ids []int32) {
	d, t := mt(dst), mt(table)
	if d.cols != t.cols || d.rows < len(ids) {
		panic(fmt.Sprintf("GetRows: dst %dx%d, table %dx%d, %d ids", d.rows, d.cols, t.rows, t.cols, len(ids)))
	}
	for _, id := range ids {
		if id < 0 || int(id) >= t.rows {
			panic(fmt.Sprintf("GetRows: id %d out of range [0,%d)", id, t.rows))
		}
	}
	suffix, ok := kernelSuffix[t.typ]
	if !ok {
		b.flush()
		b.host.GetRows(d.host, t.host, ids)
		return
	}
	if len(ids) == 0 {
		return
	}
	b.enqueue("get_rows_"+suffix, mtlSize{ceilDiv(d.cols, 64), uint(len(ids)), 1}, mtlSize{64, 1, 1},
		t, b.temp(int32Bytes(ids)), d, params(d.cols, t.rowBytes, len(ids)))
}

// MatMul implements compute.Backend: on the GPU for the weight types of
// kernelSuffix (activations stay f32, where the CPU backend quantizes them
// to the weight's dot-product type), on the CPU otherwise.
func (b *Backend) MatMul(dst, x, w compute.Tensor) {
	d, xs, ws := mt(dst), mt(x), mt(w)
	if xs.cols != ws.cols || d.rows != xs.rows || d.cols != ws.rows {
		panic(fmt.Sprintf("MatMul: dst %dx%d, x %dx%d, w %dx%d", d.rows, d.cols, xs.rows, xs.cols, ws.rows, ws.cols))
	}
	suffix, ok := kernelSuffix[ws.typ]
	if !ok {
		b.flush()
		b.host.MatMul(d.host, xs.host, ws.host)
		return
	}
	if xs.rows == 0 || ws.rows == 0 {
		return
	}
	b.enqueue("matmul_"+suffix, mtlSize{ceilDiv(ws.rows, 4), uint(xs.rows), 1}, mtlSize{128, 1, 1},
		ws, xs, d, params(xs.cols, ws.rows, xs.rows, ws.rowBytes))
}

// AddRowsScaled implements compute.Backend on the CPU (LoRA deltas of a
// few rows; not worth a kernel yet).
func (b *Backend) AddRowsScaled(dst, src compute.Tensor, rows []int32, scales []float32) {
	b.flush()
	b.host.AddRowsScaled(mt(dst).host, mt(src).host, rows, scales)
}

// AddRow implements compute.Backend: on the GPU for an F32 bias, on the
// CPU for other bias types.
func (b *Backend) AddRow(dst, bias compute.Tensor) {
	d, r := mt(dst), mt(bias)
	if r.typ != quant.F32 {
		b.flush()
		b.host.AddRow(d.host, r.host)
		return
	}
	if r.rows*r.cols != d.cols {
		panic(fmt.Sprintf("AddRow: dst cols %d, bias %d", d.cols, r.rows*r.cols))
	}
	b.elementwise("add_row_f32", d.rows*d.cols, d, r, params(d.rows*d.cols), params(d.cols))
}

func sameSize(op string, ts ...*tensor) int {
	n := ts[0].rows * ts[0].cols
	for _, t := range ts {
		if t.typ != quant.F32 || t.rows*t.cols != n {
			panic(op + ": shape mismatch")
		}
	}
	return n
}

// Add implements compute.Backend.
func (b *Backend) Add(dst, a, c compute.Tensor) {
	d, x, y := mt(dst), mt(a), mt(c)
	n := sameSize("Add", d, x, y)
	b.elementwise("add_f32", n, x, y, d, params(n))
}

// Scale implements compute.Backend.
func (b *Backend) Scale(x compute.Tensor, s float32) {
	t := mt(x)
	n := sameSize("Scale", t)
	b.elementwise("scale_f32", n, t, params(s), params(n))
}

// Softcap implements compute.Backend.
func (b *Backend) Softcap(x compute.Tensor, c float32) {
	t := mt(x)
	n := sameSize("Softcap", t)
	b.elementwise("softcap_f32", n, t, params(c), params(n))
}

// SwiGLU implements compute.Backend.
func (b *Backend) SwiGLU(dst, gate, up compute.Tensor) {
	d, g, u := mt(dst), mt(gate), mt(up)
	n := sameSize("SwiGLU", d, g, u)
	b.elementwise("swiglu_f32", n, g, u, d, params(n))
}

// GeGLU implements compute.Backend.
func (b *Backend) GeGLU(dst, gate, up compute.Tensor) {
	d, g, u := mt(dst), mt(gate), mt(up)
	n := sameSize("GeGLU", d, g, u)
	b.elementwise("geglu_f32", n, g, u, d, params(n))
}

// RMSNorm implements compute.Backend. The sum of squares is accumulated in
// float32 (Metal has no float64), where the CPU backend uses float64.
func (b *Backend) RMSNorm(dst, x, w compute.Tensor, eps float32) {
	d, xs, ws := mt(dst), mt(x), mt(w)
	if ws.typ != quant.F32 || ws.cols != xs.cols || d.cols != xs.cols || d.rows != xs.rows {
		panic("RMSNorm: shape or type mismatch")
	}
	if xs.rows == 0 {
		return
	}
	b.enqueue("rms_norm_f32", mtlSize{uint(xs.rows), 1, 1}, mtlSize{32, 1, 1},
		xs, ws, d, params(xs.cols), params(eps))
}

// RoPE implements compute.Backend. The angles are computed on the host as
// the CPU backend computes them (ropeTable); the GPU rotates.
func (b *Backend) RoPE(x compute.Tensor, spans []compute.Span, heads, headDim int, p compute.RoPE) {
	xs := mt(x)
	if xs.cols != heads*headDim {
		panic("RoPE: row is not heads×headDim")
	}
	var factors []float32
	if p.Factors != nil {
		f := mt(p.Factors)
		if f.typ != quant.F32 {
			panic("RoPE: frequency factors must be F32")
		}
		b.flush() // factors could have been written by a pending launch
		factors = f.f32()
	}
	rows, cs, half := ropeTable(spans, headDim, p, factors)
	if len(rows) == 0 || half == 0 {
		return
	}
	for _, r := range rows {
		if int(r) >= xs.rows {
			panic(fmt.Sprintf("RoPE: row %d out of range [0,%d)", r, xs.rows))
		}
	}
	rowBytes := make([]byte, 0, 4*len(rows))
	for _, r := range rows {
		rowBytes = append(rowBytes, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
	}
	csBytes := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(cs))), 4*len(cs))
	neox := p.Mode == compute.RoPENeox
	b.enqueue("rope_f32", mtlSize{ceilDiv(half, 32), uint(heads), uint(len(rows))}, mtlSize{32, 1, 1},
		xs, b.temp(csBytes), b.temp(rowBytes), params(heads, headDim, half, xs.cols, neox, len(rows)))
	runtime.KeepAlive(cs)
}

// Attend implements compute.Backend on the GPU over the paged KV layout
// of the CPU backend: kv_store writes the new keys and values, attend
// computes each (row, head) with a two-pass softmax.
func (b *Backend) Attend(dst, q, k, v compute.Tensor, store compute.KVStore, spans []compute.Span, a compute.Attention) {
	s := store.(*kvStore)
	d, qs, ks, vs := mt(dst), mt(q), mt(k), mt(v)
	hd, kvh := a.HeadDim, a.KVHeads
	if qs.cols != a.Heads*hd || ks.cols != kvh*hd || vs.cols != kvh*hd || d.cols != qs.cols || s.rowElems != kvh*hd || kvh == 0 || a.Heads%kvh != 0 {
		panic(fmt.Sprintf("Attend: q %d, k %d, v %d, dst %d cols for %d/%d heads of %d", qs.cols, ks.cols, vs.cols, d.cols, a.Heads, kvh, hd))
	}
	if a.Layer < 0 || a.Layer >= s.cfg.Layers {
		panic(fmt.Sprintf("Attend: layer %d out of range [0,%d)", a.Layer, s.cfg.Layers))
	}
	plan := planAttention(spans, s.cfg.BlockSize, s.cfg.Blocks)
	if plan.count == 0 {
		return
	}
	if d == qs {
		// attend zeroes each output head before its second pass reads the
		// query, so an aliased query is copied first.
		b.flush()
		qs = &tensor{rows: qs.rows, cols: qs.cols, typ: quant.F32, buf: b.temp(qs.mem), mem: qs.mem}
	}
	suffix := "f32"
	if s.cfg.Type == quant.F16 {
		suffix = "f16"
	}
	blocks, rows := b.temp(int32Bytes(plan.blocks)), b.temp(int32Bytes(plan.rows))
	args := params(a.Heads, kvh, hd, qs.cols, s.rowElems, s.cfg.BlockSize, s.perLayer, s.perBlock,
		a.Layer, max(a.Window, 0), plan.count, a.Scale, max(a.Softcap, 0))
	b.enqueue("kv_store_"+suffix, mtlSize{ceilDiv(s.rowElems, 64), uint(plan.count), 1}, mtlSize{64, 1, 1},
		s.t, ks, vs, blocks, rows, args)
	b.enqueue("attend_"+suffix, mtlSize{ceilDiv(plan.count, 32), uint(a.Heads), 1}, mtlSize{32, 1, 1},
		d, qs, s.t, blocks, rows, args)
}

// Probe returns the name of the system default Metal device without
// compiling the kernels (for `ruvllm backends`); ErrNoDevice where there
// is none.
func Probe() (string, error) {
	r, err := loadRuntime()
	if err != nil {
		return "", fmt.Errorf("metal: %w", err)
	}
	var name string
	err = r.withPool(func() error {
		dev := r.createDevice() // a +1 reference (Create rule)
		if dev == 0 {
			return ErrNoDevice
		}
		defer r.release(dev)
		name = r.goString(dev.Send(r.selName))
		return nil
	})
	return name, err
}

// Open is New returning the compute.Backend interface, the form binaries
// wire in (it exists on every platform; elsewhere it returns
// ErrUnavailable).
func Open(o Options) (compute.Backend, error) {
	b, err := New(o)
	if err != nil {
		return nil, err
	}
	return b, nil
}
