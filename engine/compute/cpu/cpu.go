// Package cpu is the reference compute backend: every operation the model
// families need, on the CPU, multi-threaded over a persistent worker pool,
// with the hot dot products delegated to engine/quant's kernels.
package cpu

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/hostmem"
)

// Backend runs operations on the CPU. Its methods must not be called
// concurrently: one forward pass at a time (batching puts many sequences in
// one pass instead). The Backend owns the parameters and scratch memory of
// every parallel loop, so a forward pass of an unchanged batch shape
// allocates nothing.
type Backend struct {
	w       *workers
	scratch []byte
	amx     bool // matrices sum in llama.cpp's AMX kernels' order (Options.AMX)
	tiles   bool // default mode: BF16 and Q8_0 matrices may take AMX tiles (Options.AMX)
	onTiles bool // ... and a weight took them (the CPU and OS allow it: quant.AMXTiles)
	exact   bool // llama.cpp's arithmetic (Options.Exact)
	batched bool // ... with llama.cpp's attention path by batch size (Options.LlamaBatching)
	fp16    bool // ... of a native AVX512-FP16 build (Options.Build)
	streams bool // decode reads a share through the stream kernels (Options.DecodeStreams)
	// noCompress keeps weights out of compressed layouts (Options.NoCompression).
	noCompress bool

	// weights holds the repacked matrices: outside the Go heap (hundreds
	// of MiB of long-lived data would raise the garbage collector's target
	// by as much) and in huge pages, the small ones side by side in shared
	// chunks (decode streams them; one TLB entry per 2 MiB).
	weights hostmem.Arena

	quantize quantizeJob
	matmul   matmulJob
	f16mm    f16Job
	packed   packedJob
	rowOut   [][]float32  // packedJob.out
	expanded [][]byte     // packedJob.expanded
	chain    decodeChain  // what a decode step's helpers prefetch (runPacked)
	parts    []packedPart // the weights of packed
	aux      []uint32     // aux words of the activations, for packed
	rms      rmsNormJob
	glu      gluJob
	add      addJob
	rope     ropeJob
	attend   attendJob
}

// Options configures the CPU backend.
type Options struct {
	// Threads is the number of worker threads; 0 means all cores.
	Threads int
	// AMX selects whether matrix products follow the order of llama.cpp's
	// AMX kernels (exact mode only).
	AMX AMXMode
	// Exact computes what llama.cpp's CPU backend computes, rounding for
	// rounding (docs/DESIGN.md, Numerics): greedy tokens equal llama.cpp's,
	// which the golden tests check. Off (the default), matrix products and
	// attention take the fastest arithmetic this backend has, whose
	// distance from llama.cpp's is bounded by tolerance instead
	// (engine/llm's TestDefaultModeAccuracy). Either way a sequence's
	// results do not depend on batching, chunking or the prefix cache.
	Exact bool
	// LlamaBatching, in the exact mode, follows llama.cpp's choice of
	// attention path by batch size: a call of 64 query tokens or more
	// (llama.cpp's ubatch) takes the tiled float32 flash attention
	// (quant.FlashTile, the default mode's), smaller ones and decode the
	// per-key f16 path; and its choice of IQ4_XS matrix path: calls of
	// eight tokens or more take its prompt order (quant.IQ4XSPanel, the
	// default mode's for every call), smaller ones the vector dot product.
	// Logits then equal llama.cpp's for the same batches
	// (llama-perplexity's, teacher-forced sequences), at the price of
	// depending on how a sequence is batched. Off, the exact mode takes the
	// per-key path for every call.
	LlamaBatching bool
	// Build, in the exact mode, picks which llama.cpp build's arithmetic
	// it reproduces where builds for x86-64 differ (BuildPrebuilt, the
	// default, or BuildNativeFP16).
	Build LlamaBuild
	// DecodeStreams says how decode (one activation row) reads each
	// worker's share of a matrix product: as quant.DecodeStreams streams
	// far apart at once, where the layout has a stream kernel, or as one.
	// Both give the same bits; only the speed differs by CPU.
	DecodeStreams StreamsMode
	// NoCompression keeps the default mode's weights out of its compressed
	// layouts: BF16 matrices then stay BF16x16 instead of BF16x16Z, which
	// holds the same values in three quarters of the bytes (quant). Both
	// give the same bits; only the memory read by decode differs.
	NoCompression bool
}

// StreamsMode says how decode reads a worker's share of a matrix product
// (Options.DecodeStreams).
type StreamsMode uint8

const (
	// StreamsAuto takes the streams where quant.StreamsPay says they read
	// faster on this CPU.
	StreamsAuto StreamsMode = iota
	// StreamsOn reads a share as quant.DecodeStreams streams.
	StreamsOn
	// StreamsOff reads a share as one stream.
	StreamsOff
)

// LlamaBuild names a llama.cpp CPU build whose arithmetic the exact mode
// reproduces where x86-64 builds differ from one another.
type LlamaBuild uint8

const (
	// BuildPrebuilt is the arithmetic of llama.cpp's released x86-64 CPU
	// backends (the AVX-512 and AVX2 variants ggml loads by the CPU's
	// features, which made the golden files), with Options.AMX choosing
	// the AMX kernels' order.
	BuildPrebuilt LlamaBuild = iota
	// BuildNativeFP16 is a llama.cpp built from source with -march=native
	// on a CPU with AVX512-FP16 (Sapphire Rapids and later) and without
	// its AMX kernels: ggml's F16 vector code computes in half precision
	// there (quant.DotHalfFP16: F16 matrices times one token, flash
	// attention's query·key and f16 accumulator), F16 matrices times two
	// or more tokens take llamafile's tinyBLAS (quant.DotF16TinyBLAS),
	// and the AMX order is off. The F16 products then depend on the
	// number of tokens in a pass, as they do in that build.
	BuildNativeFP16
)

// AMXMode says whether the backend sums Q8_0 and F16 matrix products as
// llama.cpp's CPU backend does on CPUs with AMX-INT8, which it chooses by
// the CPU it runs on; following the same choice is what makes greedy
// tokens equal to its own. (Q4_0 sums the same way either way: llama.cpp's
// repacked kernels, used without AMX, share the AMX kernels' order.) In
// the default mode it says whether BF16 and Q8_0 matrices may take their
// AMX layouts: BF16 on TDPBF16PS for every batch size, where the CPU has
// AMX-BF16; Q8_0 on TDPBSUD for two or more rows (a verification, a
// prompt) and on an AVX-512 VNNI kernel of the same sums for decode,
// where it has AMX-INT8, in the order of llama.cpp's AMX kernels (as the
// exact mode: quant.Q8x16AMXReference). AMXAuto and AMXOn use them where
// the OS grants the tile state too; AMXOff keeps BF16 on the AVX512-BF16
// kernels and Q8_0 in the order of llama.cpp without AMX.
type AMXMode uint8

const (
	// AMXAuto follows llama.cpp on this CPU: AMXOn where it has AMX-INT8.
	AMXAuto AMXMode = iota
	// AMXOff sums Q8_0 in ggml_vec_dot_q8_0_q8_0's eight float lanes and
	// F16 with f16-rounded activations in ggml_vec_dot_f16's order.
	AMXOff
	// AMXOn sums the Q8_0 and F16 matrices llama.cpp gives its AMX
	// buffer (rows a multiple of 32, only multiplying matrices) as its AMX
	// kernels do: Q8_0 block by block (each block's integer sum fused-
	// multiply-added into one float per output), F16 against float32
	// activations in 16 lanes. Without AVX-512 VNNI the Q8_0 order runs
	// the slow Go reference.
	AMXOn
)

// New returns a CPU backend. Call Close to stop its workers.
func New(o Options) *Backend {
	b := &Backend{w: newWorkers(o.Threads), exact: o.Exact, batched: o.Exact && o.LlamaBatching, noCompress: o.NoCompression}
	b.amx = o.Exact && (o.AMX == AMXOn || o.AMX == AMXAuto && hasAMXInt8)
	b.tiles = !o.Exact && o.AMX != AMXOff
	b.streams = o.DecodeStreams == StreamsOn || o.DecodeStreams == StreamsAuto && quant.StreamsPay()
	if o.Exact && o.Build == BuildNativeFP16 {
		b.fp16, b.amx = true, false
	}
	n := b.w.n
	b.matmul.out4 = make([]workerResults, n)
	b.expanded = make([][]byte, n)
	b.rowOut = make([][]float32, n)
	for i := range b.rowOut {
		b.rowOut[i] = make([]float32, rowOutGroups*quant.Q4x16Rows)
	}
	b.attend.scores, b.attend.qh, b.attend.acc = make([][]float32, n), make([][]float32, n), make([][]float32, n)
	b.attend.kt, b.attend.vf = make([][]float32, n), make([][]float32, n)
	b.attend.q16, b.attend.acc16 = make([][]uint16, n), make([][]uint16, n)
	b.attend.heads = make([]quant.FlashHeads, n)
	b.attend.tile = make([]tileState, n)
	// Per-worker scratch is sized here, never grown by the workers
	// themselves (they run at once).
	b.attend.cold = make([]coldScratch, n)
	b.attend.runs = make([][]keyRun, n)
	return b
}

// Exact reports whether the backend computes llama.cpp's arithmetic
// (Options.Exact).
func (b *Backend) Exact() bool { return b.exact }

// Arithmetic names the backend's arithmetic, and with it the layout of
// its KV cache: keys and values computed under one name are not those of
// another, so a prefix cache (and its snapshots on disk) keeps them apart.
// The default mode's name carries a version, raised whenever its results
// or its cache layout change, and says whether a weight took a layout
// with AMX tiles (BF16 and Q8_0 matrices, whose sums then differ): ask
// after the weights are loaded.
func (b *Backend) Arithmetic() string {
	switch {
	case b.batched:
		return "exact-batched"
	case b.fp16:
		return "exact-native-fp16"
	case b.exact && b.amx:
		return "exact-amx"
	case b.exact:
		return "exact"
	case b.onTiles:
		return "default-2-amx" // BF16 and Q8_0 products sum in their AMX layouts' orders
	}
	return "default-2"
}

// FollowsOutputRows implements compute.OutputRowsFollower: with
// BuildNativeFP16, F16 products depend on the number of rows in a call.
func (b *Backend) FollowsOutputRows() bool { return b.fp16 }

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

	// Kernels of a weight, looked up once instead of on every MatMul.
	dot   quant.DotFunc
	multi quant.MultiDotFunc
	tile  quant.TileDotFunc // nil where the CPU has no tile kernel for typ
	// interleaved is set when tile sums in llama.cpp's repacked order
	// (MatMulWeight): every output element must then come from tile.
	interleaved bool
	// actF32 keeps the activations in float32 for tile (AMX F16 order).
	actF32 bool
	// deq is a quantized single-row tensor (a bias) decoded once, for AddRow.
	deq []float32
	// packed holds a matrix that MatMulWeight repacked into the layout
	// pk (Q4_0x16, Q4_Kx16), outside the Go heap (raw is then nil): MatMul
	// runs pk's kernel on it.
	packed []byte
	pk     *quant.Packed
	// gemvRaw keeps the file's layout of a repacked Q4_K matrix with
	// BuildNativeFP16, for the rows llama.cpp's GEMV computes
	// (matmulQ4KGEMVRows).
	gemvRaw []byte
	// panel, in the exact mode with llama.cpp's batching, is a repacked
	// copy of an IQ4_XS weight that MatMul takes for calls of
	// iqPanelMinBatch tokens or more, as llama.cpp switches to its prompt
	// path (quant.IQ4XSPanel). Such a weight is in memory twice (the
	// file's pages and the copy): the mode is for scoring, not serving.
	panel *tensor
}

// iqPanelMinBatch is the fewest tokens for which llama.cpp's CPU backend
// multiplies an IQ4_XS weight with its prompt path (GGML_IQP_MIN_BATCH).
const iqPanelMinBatch = 8

// Repacked implements compute.Repacked: a repacked tensor no longer reads
// the file data it was made from.
func (t *tensor) Repacked() bool { return t.packed != nil }

func (t *tensor) Rows() int        { return t.rows }
func (t *tensor) Cols() int        { return t.cols }
func (t *tensor) Type() quant.Type { return t.typ }

func ct(t compute.Tensor) *tensor { return t.(*tensor) }

// kernels returns the dot-product kernels of t's type, caching them in t.
func (t *tensor) kernels() (quant.DotFunc, quant.MultiDotFunc) {
	if t.dot == nil {
		dot, err := quant.DotFor(t.typ)
		if err != nil {
			panic(err)
		}
		multi, err := quant.MultiDotFor(t.typ)
		if err != nil {
			panic(err)
		}
		t.dot, t.multi = dot, multi
		if !t.interleaved {
			t.tile = quant.TileDotFor(t.typ)
		}
	}
	return t.dot, t.multi
}

// Weight implements compute.Backend.
func (b *Backend) Weight(typ quant.Type, rows, cols int, data []byte) (compute.Tensor, error) {
	rb, err := typ.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	if len(data) != rb*rows {
		return nil, fmt.Errorf("weight %s %dx%d: have %d bytes, want %d", typ, rows, cols, len(data), rb*rows)
	}
	dot, err := quant.DotFor(typ)
	if err != nil {
		return nil, fmt.Errorf("weight type %s: %w", typ, compute.ErrUnsupported)
	}
	multi, err := quant.MultiDotFor(typ)
	if err != nil {
		return nil, fmt.Errorf("weight type %s: %w", typ, compute.ErrUnsupported)
	}
	t := &tensor{rows: rows, cols: cols, typ: typ, raw: data, rowBytes: rb, dot: dot, multi: multi, tile: quant.TileDotFor(typ)}
	if typ == quant.F32 {
		t.f32 = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(data))), rows*cols)
	}
	return t, nil
}

// MatMulWeight implements compute.MatMulWeighter: a Q4_0 or IQ4_NL weight
// of a multiple of 8 rows takes the interleaved-order tile kernel, where
// this CPU has it (llama.cpp repacks such weights on every AVX2 machine), and
// with AMX on, Q8_0 and F16 weights of a multiple of 32 rows take the
// order of llama.cpp's AMX kernels. Where the CPU has a kernel for a
// repacked layout (quant.PackedFor: Q4_0, Q8_0, Q4_K with AVX-512 VNNI),
// weights of a multiple of 16 rows are copied into it, keeping their
// order.
func (b *Backend) MatMulWeight(typ quant.Type, rows, cols int, data []byte) (compute.Tensor, error) {
	w, err := b.Weight(typ, rows, cols, data)
	if err != nil {
		return nil, err
	}
	if t := ct(w); b.amx && rows%32 == 0 {
		switch {
		case typ == quant.Q8_0:
			t.tile = quant.InterleavedTileFor(typ)
			if t.tile == nil {
				t.tile = quant.InterleavedTileReference(typ)
			}
			t.interleaved = true
		case typ == quant.F16 && cols%16 == 0:
			t.tile, t.interleaved, t.actF32 = quant.TileF16AMX, true, true
		}
	}
	t := ct(w)
	// A weight already in the AMX order keeps it: the repacked Q8_0
	// layout sums in the vector order. The default mode takes the layouts
	// whose order is chosen for speed too (quant.FastPackedFor).
	p := quant.PackedFor(typ)
	if !b.exact {
		p = quant.FastPackedFor(typ, b.tiles)
	}
	if b.fp16 && typ == quant.Q4_K {
		t.gemvRaw = t.raw
	}
	if b.fp16 && typ == quant.Q2_K {
		// That build repacks Q2_K in an order of its own
		// (matmulQ2KNative), not the vector order of Q2_Kx16.
		p = nil
	}
	if p != nil && p.Expanded != nil && (b.noCompress || cols%p.BlockSize != 0) {
		p = p.Expanded // a compressed layout's blocks do not fit the matrix
	}
	if p != nil && !t.interleaved && rows%quant.Q4x16Rows == 0 && cols > 0 && cols%p.BlockSize == 0 {
		err := t.repack(&b.weights, p, b.w)
		if errors.Is(err, quant.ErrIncompressible) { // a few matrices of unusual weights
			p = p.Expanded
			err = t.repack(&b.weights, p, b.w)
		}
		if err != nil {
			return nil, err
		}
		b.onTiles = b.onTiles || p.AMX
	} else if (typ == quant.Q4_0 || typ == quant.IQ4_NL) && rows%8 == 0 {
		if k := quant.InterleavedTileFor(typ); k != nil {
			t.tile, t.interleaved = k, true
		}
	}
	if b.batched && typ == quant.IQ4_XS && rows%quant.Q4x16Rows == 0 && cols > 0 && cols%quant.QKK == 0 {
		// llama.cpp's prompt path needs rows of a multiple of 8; this
		// layout 16, which every model's matrices have.
		p := &tensor{rows: rows, cols: cols, typ: typ, raw: data, rowBytes: t.rowBytes}
		if err := p.repack(&b.weights, quant.IQ4XSPanel(), b.w); err != nil {
			return nil, err
		}
		t.panel = p
	}
	return w, nil
}

// TiedOutputWeight implements compute.TiedOutputWeighter. The exact mode
// reads the embedding table's own layout, as llama.cpp does (it never
// repacks the table, even where the output projection shares it); the
// default mode repacks a copy as any other matrix (F16 and BF16 into
// F16x16/BF16x16: the vocabulary's projection is a fifth to a third of a
// small model's weights, and the file's layout takes the exact F16 kernel).
func (b *Backend) TiedOutputWeight(typ quant.Type, rows, cols int, data []byte) (compute.Tensor, error) {
	if b.exact {
		return b.Weight(typ, rows, cols, data)
	}
	return b.MatMulWeight(typ, rows, cols, data)
}

// repack copies matrix t into layout p, in memory carved from arena and
// released when t is collected. Groups of 16 rows are repacked
// independently, so the workers split them: a model's load is mostly
// this copy (the 1B shape's Q4_0 file: 0.8 GB), and its writes fault in
// the arena's pages.
func (t *tensor) repack(arena *hostmem.Arena, p *quant.Packed, w *workers) error {
	if p.Repack == nil { // the layout is the GGUF layout (quant.IQGridPacked)
		t.packed, t.pk, t.raw, t.interleaved = t.raw, p, nil, true
		return nil
	}
	buf, release, err := arena.Alloc(p.Bytes(t.rows, t.cols))
	if err != nil {
		return fmt.Errorf("repacked weights: %w", err)
	}
	var mu sync.Mutex
	var firstErr error
	groups := t.rows / quant.Q4x16Rows
	w.run(groups, repackGrain, funcJob(func(lo, hi int) {
		r0, r1 := lo*quant.Q4x16Rows, hi*quant.Q4x16Rows
		dst := buf[p.Bytes(r0, t.cols):p.Bytes(r1, t.cols)]
		if err := p.Repack(dst, t.raw[r0*t.rowBytes:r1*t.rowBytes], r1-r0, t.cols); err != nil {
			mu.Lock()
			firstErr = cmp.Or(firstErr, err)
			mu.Unlock()
		}
	}))
	if firstErr != nil {
		release()
		return firstErr
	}
	t.packed, t.pk, t.raw, t.interleaved = buf, p, nil, true
	runtime.AddCleanup(t, func(release func()) { release() }, release)
	return nil
}

// repackGrain is the fewest groups of 16 rows a worker repacks at a time.
const repackGrain = 16

// freeHost returns memory from hostmem.Alloc: the backend keeps KV caches
// outside the Go heap and in huge pages, as repacked weights (Backend's
// weights).
func freeHost(b []byte) { _ = hostmem.Free(b) }

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
	if t.packed != nil {
		panic("GetRows of a repacked matrix (only MatMul reads it)")
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

// Tiling of MatMul. A weight tile is tileBytes of consecutive weight rows;
// a worker takes one tile and runs every group of MaxMultiRows activation
// rows against it, so the tile is read from memory once and then served
// from the core's L2 for the other n/4 groups, while each weight block is
// unpacked once per group by the multi-row kernel. 128 KiB is a quarter of
// the smallest L2 we target (512 KiB per core on Zen 2/3, 1–2 MiB on Zen 4
// and recent Intel, 4 MiB shared per cluster on Apple M): the rest holds
// the current group's activation rows (4 × a quantized row, ≤ 60 KiB even
// for FF 14336 in Q8_K) and the output lines without evicting the tile.
// The activation rows stream from L3 once per tile, which costs n·rowBytes
// per tileBytes of weights: small next to the weights for every shape.
const tileBytes = 128 << 10

// decodeGrain is the smallest number of weight rows a worker takes when
// there is no reuse to tile for (fewer than MaxMultiRows activation rows).
const decodeGrain = 16

// MatMul implements compute.Backend. Activations are quantized once to the
// weight type's dot-product format; then weight rows are split into tiles
// across the workers (see tileBytes). Every output element is exactly one
// call of the weight type's dot kernel (or its bit-identical multi-row
// form) on the same two rows, so results do not depend on tiling or
// thread count.
func (b *Backend) MatMul(dst, x, w compute.Tensor) {
	d, xs, ws := ct(dst), ct(x), ct(w)
	if xs.cols != ws.cols || d.rows != xs.rows || d.cols != ws.rows {
		panic(fmt.Sprintf("MatMul: dst %dx%d, x %dx%d, w %dx%d", d.rows, d.cols, xs.rows, xs.cols, ws.rows, ws.cols))
	}
	if ws.packed != nil {
		b.matmulPacked(d, xs, ws)
		b.matmulQ4KGEMVRows(d, xs, ws)
		return
	}
	if b.fp16 && ws.typ == quant.F16 {
		b.matmulF16Native(d, xs, ws)
		return
	}
	if b.fp16 && ws.typ == quant.Q2_K && ws.rows%8 == 0 {
		b.matmulQ2KNative(d, xs, ws)
		return
	}
	if ws.panel != nil && xs.rows >= iqPanelMinBatch {
		b.matmulPacked(d, xs, ws.panel)
		return
	}
	dot, multi := ws.kernels()
	vt := quant.VecDotType(ws.typ)
	if ws.actF32 {
		vt = quant.F32
	}
	n, in, out := xs.rows, xs.cols, ws.rows
	qrow, err := vt.RowBytes(in)
	if err != nil {
		panic(fmt.Sprintf("MatMul: %v", err))
	}
	var act []byte
	if vt == quant.F32 {
		act = xs.raw
	} else {
		quantize, err := quant.QuantizeRowFor(vt)
		if err != nil {
			panic(err)
		}
		act = b.buf(n * qrow)
		b.quantize = quantizeJob{fn: quantize, dst: act, rowBytes: qrow, src: xs.f32, cols: in}
		b.w.run(n, rowGrain(in), &b.quantize)
	}
	j := &b.matmul
	j.d, j.w, j.act, j.dot, j.multi, j.tile = d.f32, ws, act, dot, multi, ws.tile
	j.n, j.in, j.out, j.qrow = n, in, out, qrow
	if n < quant.MaxMultiRows {
		j.tileRows = decodeGrain
	} else {
		// Tiles of tileBytes, but at least four per worker so that the
		// split stays even when another process takes a core for a while.
		j.tileRows = max(1, min(tileBytes/ws.rowBytes, (out+4*b.w.n-1)/(4*b.w.n)))
		if j.tile != nil && (j.tileRows > quant.TileRows || ws.interleaved) {
			// Whole groups of TileRows weight rows for the tile kernel.
			j.tileRows = (j.tileRows + quant.TileRows - 1) &^ (quant.TileRows - 1)
		}
	}
	tiles := (out + j.tileRows - 1) / j.tileRows
	b.w.run(tiles, 1, j)
	j.d, j.w, j.act = nil, nil, nil // do not keep the caller's memory alive
}

// matmulPacked is MatMul of a repacked weight.
func (b *Backend) matmulPacked(d, xs, ws *tensor) {
	b.parts = append(b.parts[:0], packedPart{d: d.f32, w: ws.packed, out: ws.rows})
	b.runPacked(xs, ws.pk)
	runtime.KeepAlive(ws)
}

// MatMulMulti implements compute.MultiMatMuler. The weights repacked into
// the same layout as the first repacked one share one quantization of x
// and one parallel loop over all their groups; every other weight takes
// MatMul. Each output element is the same kernel call on the same rows
// as in MatMul, so the results are identical.
func (b *Backend) MatMulMulti(dsts []compute.Tensor, x compute.Tensor, ws []compute.Tensor) {
	if len(dsts) != len(ws) {
		panic(fmt.Sprintf("MatMulMulti: %d outputs for %d weights", len(dsts), len(ws)))
	}
	xs := ct(x)
	var p *quant.Packed
	fused := func(t *tensor) bool { return t.packed != nil && t.pk.Name == p.Name }
	b.parts = b.parts[:0]
	for i, w := range ws {
		d, t := ct(dsts[i]), ct(w)
		if p == nil && t.packed != nil {
			p = t.pk
		}
		if p == nil || !fused(t) {
			continue
		}
		if xs.cols != t.cols || d.rows != xs.rows || d.cols != t.rows {
			panic(fmt.Sprintf("MatMulMulti: dst %dx%d, x %dx%d, w %dx%d", d.rows, d.cols, xs.rows, xs.cols, t.rows, t.cols))
		}
		b.parts = append(b.parts, packedPart{d: d.f32, w: t.packed, out: t.rows})
	}
	if len(b.parts) > 0 {
		b.runPacked(xs, p)
	}
	for i, w := range ws {
		if p == nil || !fused(ct(w)) {
			b.MatMul(dsts[i], x, w)
		} else {
			b.matmulQ4KGEMVRows(ct(dsts[i]), xs, ct(w))
		}
	}
	runtime.KeepAlive(ws)
}

// runPacked multiplies xs by the repacked weights of b.parts, all in
// layout p: activations are quantized to the layout's format with their
// aux words, then groups of 16 weight rows are split into tiles across
// the workers as in MatMul, and each group runs against four activation
// rows per kernel call.
func (b *Backend) runPacked(xs *tensor, p *quant.Packed) {
	n, in := xs.rows, xs.cols
	// A compressed layout's own kernels expand what they read at every
	// call: right for decode and for up to PackedRows rows (a
	// verification), which read each weight once, expanding it in
	// registers. A larger batch reads each group more than once, so its
	// groups are expanded a tile at a time into the worker's buffer, and
	// the expanded layout's kernels read them there (doExpanded).
	stored := p
	if p.Expand != nil && n > quant.PackedRows {
		p = p.Expanded
	}
	nb := in / p.BlockSize
	qrow, err := p.Act.RowBytes(in)
	if err != nil {
		panic(fmt.Sprintf("MatMul: %v", err))
	}
	actBlock := qrow / nb // bytes of an activation block
	auxRow := p.AuxWords * nb
	if cap(b.aux) < n*auxRow {
		b.aux = make([]uint32, n*auxRow)
	}
	aux := b.aux[:n*auxRow]
	var act []byte
	if p.Act == quant.F32 {
		act = xs.raw // the layout multiplies float32 activations as they are
	} else {
		quantize, err := quant.QuantizeRowFor(p.Act)
		if err != nil {
			panic(err)
		}
		act = b.buf(n * qrow)
		b.quantize = quantizeJob{fn: quantize, dst: act, rowBytes: qrow, src: xs.f32, cols: in, aux: aux, auxRow: auxRow, auxFn: p.Aux}
		b.w.run(n, rowGrain(in), &b.quantize)
		b.quantize.aux, b.quantize.auxFn = nil, nil
	}

	groupBytes, groups := nb*p.BlockBytes, 0
	for i := range b.parts {
		groups += b.parts[i].out / quant.Q4x16Rows
		b.parts[i].groupsEnd = groups
	}
	// Tiles of per groups, run against every activation row while they
	// sit in L2. The loop runs over groups, so that workers split the
	// products evenly whatever the parts' sizes (q beside a small k).
	per := 1 // decode: the weights stream from memory once, split finely
	multi := n > 1 && n < quant.PackedRows && p.DecodeMulti != nil
	if n == 1 && p.Decode != nil || multi {
		per = p.DecodeGroups // ... but in runs the decode kernel takes at once
	}
	if n >= quant.TileRows && !multi {
		per = max(1, min(tileBytes/groupBytes, (groups+4*b.w.n-1)/(4*b.w.n)))
	}
	// Blocks per kernel call: where the layout allows it, a long row is
	// split so that one call's activation rows stay in L1 beside the
	// streaming weights (eight rows of a 4864-wide Q4_0 product are 50 KiB).
	chunk := nb
	if p.Accumulate != nil {
		perBlock := min(n, quant.PackedRows) * (actBlock + 4*p.AuxWords)
		if nb*perBlock > chunkActBytes {
			calls := (nb*perBlock + chunkTargetBytes - 1) / chunkTargetBytes
			chunk = (nb + calls - 1) / calls
			if n <= quant.PackedRows {
				// Each call now reads a short stretch of each group: in
				// decode, where a tile is read once and needs no room in
				// L2, take more groups per tile, so that a pass over a
				// range of blocks reads longer runs.
				per = max(per, min(32, (groups+2*b.w.n-1)/(2*b.w.n)))
				if multi { // whole runs of the decode kernel
					per = (per + p.DecodeGroups - 1) / p.DecodeGroups * p.DecodeGroups
				}
			}
		}
	}
	var expandBytes int
	if stored != p {
		ratio := stored.BlockSize / p.BlockSize
		if chunk < nb { // whole stored blocks a call
			chunk = (chunk + ratio - 1) / ratio * ratio
		}
		// A tile's expanded blocks stay within expandTileBytes (in L2).
		fit := max(1, expandTileBytes/(chunk*p.BlockBytes))
		if multi {
			fit = max(p.DecodeGroups, fit/p.DecodeGroups*p.DecodeGroups)
		}
		per = min(per, fit)
		expandBytes = per * chunk * p.BlockBytes
		for i := range b.expanded {
			if len(b.expanded[i]) < expandBytes {
				b.expanded[i] = make([]byte, expandBytes)
			}
		}
	}
	var tile quant.TileKernel
	if p.TakesTile(n) {
		// The tile kernel takes the call: whole rows of blocks (its
		// accumulators are tiles, not memory) and groups in pairs.
		tile, chunk = p.Tile, nb
		per += per % 2
	}
	j := &b.packed
	*j = packedJob{kernel: p.Kernel, accumulate: p.Accumulate, parts: b.parts, act: act, aux: aux,
		decode: p.Decode, decodeGroups: p.DecodeGroups, tile: tile, tileRows: p.TileRows,
		n: n, nb: nb, chunk: chunk, qrow: qrow, auxRow: auxRow, actBlock: actBlock, auxBlock: p.AuxWords,
		blockBytes: p.BlockBytes, groupBytes: groupBytes, per: per, out: b.rowOut, pair: p.Pair}
	if b.streams {
		j.streams = p.Streams
	}
	if stored != p {
		j.expand, j.expanded = stored.Expand, b.expanded
		j.storedBlockBytes, j.storedGroupBytes = stored.BlockBytes, in/stored.BlockSize*stored.BlockBytes
		j.storedRatio = stored.BlockSize / p.BlockSize
	}
	if multi {
		j.decodeMulti, j.decodeRows = p.DecodeMulti, p.DecodeRows
	}
	var ahead []byte
	if n == 1 {
		ahead = b.chain.step(b.parts, groupBytes, groups, per, b.w)
	} else {
		b.chain.reset()
	}
	b.w.runAhead(groups, per, j, ahead)
	*j = packedJob{} // do not keep the caller's memory alive
	clear(b.parts)
	b.parts = b.parts[:0]
}

// packedPart is one weight of a packedJob: its output, its repacked
// groups, and where its groups end in the job's numbering (they start
// where the previous part's end).
type packedPart struct {
	d         []float32
	w         []byte
	out       int
	groupsEnd int
}

// packedJob computes groups of 16 output columns of dst = x·wᵀ for one
// or more repacked weights of the same layout, numbered one after the
// other, in tiles of per groups, chunk blocks per kernel call.
type packedJob struct {
	kernel, accumulate quant.PackedKernel
	// decode runs decodeGroups groups at once for one activation row
	// (quant.Packed.Decode), nil where the layout has no such kernel.
	decode       func(nb int, w []byte, groupBytes int, a []byte, dst []float32, accumulate bool)
	decodeGroups int
	// decodeMulti runs decodeGroups groups at once for up to decodeRows
	// activation rows (quant.Packed.DecodeMulti), set for batches of 2 to
	// PackedRows-1 rows: a verification pass of speculative decoding.
	decodeMulti        func(nb int, w []byte, groupBytes int, a []byte, astride, rows int, dst []float32, dstride int, accumulate bool)
	decodeRows         int
	parts              []packedPart
	act                []byte
	aux                []uint32
	n, nb, chunk       int
	qrow, auxRow       int
	actBlock, auxBlock int // bytes and aux words of an activation block
	blockBytes         int // bytes of a 16-row block
	groupBytes, per    int

	// out holds each worker's buffer for doRow's outputs.
	out [][]float32
	// streams is the layout's stream kernel for one row (doStreams).
	streams quant.StreamKernel
	// pair, where the layout has one (quant.Packed.Pair), takes full
	// runs of quant.PackedRows activation rows two groups at a time.
	pair quant.PairKernel

	// tile, where the layout has one (quant.Packed.Tile) and it takes a
	// product of n rows, takes the call instead of the kernels above,
	// tileRows activation rows at a time.
	tile     quant.TileKernel
	tileRows int

	// expand, for weights stored in a compressed layout (quant.Packed.Expand),
	// writes their blocks in the layout of the kernels above (doExpanded),
	// into each worker's expanded buffer; the stored layout's block and
	// group bytes, and its blocks' size in the kernels' blocks.
	expand                             func(dst, src []byte, nb int)
	expanded                           [][]byte
	storedBlockBytes, storedGroupBytes int
	storedRatio                        int
}

// chunkActBytes bounds the activation rows and aux words one packed
// kernel call reads, so that they stay in L1 (32 KiB or more) while the
// weights stream past them.
const chunkActBytes = 16 << 10

// chunkTargetBytes is the activation bytes of one call once a product is
// split: measured over 64 MiB of 4864-wide Q4_0x16 weights on two cores,
// eight rows took 4.4 ms unsplit, 3.4 ms in 32-block ranges and 2.9 ms in
// 16-block ranges (5.4 KiB).
const chunkTargetBytes = 6 << 10

func (j *packedJob) do(w, lo, hi int) {
	if j.expand != nil {
		j.doExpanded(j.expanded[w], lo, hi)
		return
	}
	if j.tile != nil {
		j.doTiles(lo, hi)
		return
	}
	if j.n == 1 && j.chunk == j.nb {
		j.doRow(j.out[w], lo, hi)
		return
	}
	for t0 := lo; t0 < hi; t0 += j.per {
		t1 := min(t0+j.per, hi)
		for r := 0; r < j.n; r += quant.PackedRows {
			rows := min(quant.PackedRows, j.n-r)
			for b0 := 0; b0 < j.nb; b0 += j.chunk {
				j.runGroups(t0, t1, r, rows, b0, min(j.chunk, j.nb-b0), nil, 0)
			}
		}
	}
}

// runGroups multiplies groups [t0, t1) by activation rows r..r+rows over
// blocks b0..b0+nb: runs of decodeGroups groups of one weight through the
// decode kernels, pairs through the pair kernel, the rest a group a call
// (kernel, or accumulate past the first range of blocks, adding to the
// previous ranges' sums). The weights are the parts' own, or with buf the
// tile's groups expanded there gb bytes apart from t0 (doExpanded).
func (j *packedJob) runGroups(t0, t1, r, rows, b0, nb int, buf []byte, gb int) {
	kernel := j.kernel
	if b0 > 0 {
		kernel = j.accumulate
	}
	a, aux := j.act[r*j.qrow+b0*j.actBlock:], j.aux[r*j.auxRow+b0*j.auxBlock:]
	var c partCursor
	for g := t0; g < t1; g++ {
		pt, k := c.at(j.parts, g)
		w, stride, size := buf, gb, gb
		if buf != nil {
			w = buf[(g-t0)*gb:]
		} else {
			w, stride, size = pt.w[k*j.groupBytes+b0*j.blockBytes:], j.groupBytes, j.groupBytes-b0*j.blockBytes
		}
		d, end := pt.d[r*pt.out+k*quant.Q4x16Rows:], min(t1, pt.groupsEnd)
		switch {
		case rows == 1 && j.decode != nil && g+j.decodeGroups <= end:
			// Consecutive groups of one weight, side by side.
			j.decode(nb, w, stride, a, d, b0 > 0)
			g += j.decodeGroups - 1
		case j.decodeMulti != nil && g+j.decodeGroups <= end:
			// ... for a few activation rows, up to decodeRows at once.
			for r2 := 0; r2 < rows; r2 += j.decodeRows {
				m := min(j.decodeRows, rows-r2)
				j.decodeMulti(nb, w, stride, a[r2*j.qrow:], j.qrow, m, d[r2*pt.out:], pt.out, b0 > 0)
			}
			g += j.decodeGroups - 1
		case rows == quant.PackedRows && j.pair != nil && g+2 <= end:
			// ... two groups at once, for more independent chains.
			j.pair(nb, w, stride, a, j.qrow, d, pt.out, b0 > 0)
			g++
		default:
			kernel(nb, w[:size], a, j.qrow, aux, j.auxRow, rows, d, pt.out)
		}
	}
}

// partCursor finds the part of each group as a loop goes up the job's
// groups.
type partCursor struct{ pi, first int }

// at returns the part that holds group g and g's index in it; g is never
// below the previous call's.
func (c *partCursor) at(parts []packedPart, g int) (*packedPart, int) {
	for g >= parts[c.pi].groupsEnd {
		c.first = parts[c.pi].groupsEnd
		c.pi++
	}
	return &parts[c.pi], g - c.first
}

// doExpanded is do for weights in a compressed layout: per tile of
// groups and range of blocks, the groups' stored blocks are expanded into
// buf (the worker's), and every run of activation rows takes the expanded
// layout's kernels there. Each output still takes the ranges of blocks in
// order, so the results are those of the expanded layout's weights.
func (j *packedJob) doExpanded(buf []byte, lo, hi int) {
	for t0 := lo; t0 < hi; t0 += j.per {
		t1 := min(t0+j.per, hi)
		for b0 := 0; b0 < j.nb; b0 += j.chunk {
			nb := min(j.chunk, j.nb-b0)
			gb := nb * j.blockBytes // an expanded group's bytes in buf
			var c partCursor
			for g := t0; g < t1; g++ {
				pt, k := c.at(j.parts, g)
				j.expand(buf[(g-t0)*gb:], pt.w[j.storedOffset(k, b0):], nb/j.storedRatio)
			}
			// The next tile's stored blocks load while this one's rows run.
			j.prefetchStored(t1, min(t1+j.per, hi), b0, nb)
			for r := 0; r < j.n; r += quant.PackedRows {
				j.runGroups(t0, t1, r, min(quant.PackedRows, j.n-r), b0, nb, buf, gb)
			}
		}
	}
}

// storedOffset is where the stored blocks from block b0 (in the expanded
// layout's blocks) of a part's group k start.
func (j *packedJob) storedOffset(k, b0 int) int {
	return k*j.storedGroupBytes + b0/j.storedRatio*j.storedBlockBytes
}

// prefetchStored prefetches the stored blocks b0..b0+nb (in the
// expanded layout's blocks) of groups [g0, g1).
func (j *packedJob) prefetchStored(g0, g1, b0, nb int) {
	var c partCursor
	for g := g0; g < g1; g++ {
		pt, k := c.at(j.parts, g)
		o := j.storedOffset(k, b0)
		quant.Prefetch(pt.w[o : o+nb/j.storedRatio*j.storedBlockBytes])
	}
}

// expandTileBytes bounds the expanded blocks of one tile of doExpanded.
const expandTileBytes = 256 << 10

// doRow is do for one activation row (decode): long runs of a weight's
// groups go to the layout's stream kernel (doStreams), the rest take one
// kernel call a group, or a decode call per decodeGroups. The kernels
// write to out, a worker's own buffer of rowOutGroups groups that stays in
// L1, and each run of groups is copied to the destination at once. Written
// group by group, the destination's lines (one per group) missed L1
// between the weight loads, and a stream of 1B-shape Q4_0x16 products on
// two cores read 5 % slower (33.2 against 34.8 GB/s).
func (j *packedJob) doRow(out []float32, lo, hi int) {
	var c partCursor
	for g0 := lo; g0 < hi; {
		pt, _ := c.at(j.parts, g0)
		first := c.first
		if end := min(hi, pt.groupsEnd); j.streams != nil && end-g0 >= quant.DecodeStreams*minStreamGroups {
			g0 = j.doStreams(out, pt, first, g0, end)
			continue
		}
		g1 := min(hi, pt.groupsEnd, g0+rowOutGroups)
		for g := g0; g < g1; {
			k, o := g-first, out[(g-g0)*quant.Q4x16Rows:]
			if j.decode != nil && g+j.decodeGroups <= g1 {
				j.decode(j.nb, pt.w[k*j.groupBytes:], j.groupBytes, j.act, o, false)
				g += j.decodeGroups
				continue
			}
			j.kernel(j.nb, pt.w[k*j.groupBytes:(k+1)*j.groupBytes], j.act, j.qrow, j.aux, j.auxRow, 1, o, quant.Q4x16Rows)
			g++
		}
		copy(pt.d[(g0-first)*quant.Q4x16Rows:(g1-first)*quant.Q4x16Rows], out)
		g0 = g1
	}
}

// rowOutGroups is the number of groups whose outputs doRow keeps in a
// worker's buffer before it copies them out (4 KiB).
const rowOutGroups = 64

// doStreams is doRow's loop over groups [g0, end) of part pt (whose groups
// the job numbers from first) with the layout's stream kernel: the range
// is read as quant.DecodeStreams streams of q groups, one after the other
// in memory, a group of each at a time. It returns where it stopped, at
// most DecodeStreams-1 groups before end. On two cores of a VM whose plain
// read stream gets 37 GB/s, Q4_0x16 groups read as one stream a core came
// to 35, as four streams 64 KiB or more apart to 38-39 (a C probe of the
// same loads and arithmetic): each stream's misses overlap the others'.
// Elsewhere one stream a core reads faster (Zen 5), so it runs only where
// the backend takes the streams (Options.DecodeStreams).
func (j *packedJob) doStreams(out []float32, pt *packedPart, first, g0, end int) int {
	const streams = quant.DecodeStreams
	const per = rowOutGroups / streams // outputs of each stream buffered
	q := (end - g0) / streams
	stride := q * j.groupBytes
	for i0 := 0; i0 < q; i0 += per {
		i1 := min(q, i0+per)
		for i := i0; i < i1; i++ {
			k := g0 - first + i
			j.streams(j.nb, pt.w[k*j.groupBytes:], stride, j.act, j.aux, out[(i-i0)*quant.Q4x16Rows:], per*quant.Q4x16Rows)
		}
		for s := range streams {
			d := (g0 - first + s*q) * quant.Q4x16Rows
			copy(pt.d[d+i0*quant.Q4x16Rows:d+i1*quant.Q4x16Rows], out[s*per*quant.Q4x16Rows:])
		}
	}
	return g0 + streams*q
}

// minStreamGroups is the fewest groups a stream of doStreams takes: the
// streams are then 72 KiB apart or more (Q4_0x16 at 2048 columns), where
// four streams a quarter of that apart read no faster than one.
const minStreamGroups = 4

// doTiles is do with the layout's tile kernel, whole rows of blocks per
// call: per tile of groups (a prompt's runs of tileRows activation rows
// take turns on each tile while it sits in L2), one call per weight and
// run of rows. A call loads the tile configuration, so in decode and small
// batches, which read each weight once, a call takes the whole range.
func (j *packedJob) doTiles(lo, hi int) {
	step := j.per
	if j.n <= j.tileRows {
		step = hi - lo
	}
	for t0 := lo; t0 < hi; t0 += step {
		t1 := min(t0+step, hi)
		for r := 0; r < j.n; r += j.tileRows {
			rows, a, aux := min(j.tileRows, j.n-r), j.act[r*j.qrow:], j.aux[r*j.auxRow:]
			var c partCursor
			for g := t0; g < t1; {
				pt, k := c.at(j.parts, g)
				groups := min(t1, pt.groupsEnd) - g
				j.tile(j.nb, pt.w[k*j.groupBytes:], j.groupBytes, groups, a, j.qrow, aux, j.auxRow, rows, pt.d[r*pt.out+k*quant.Q4x16Rows:], pt.out, false)
				g += groups
			}
		}
	}
}

// quantizeJob encodes activation rows into the dot-product format, and,
// when auxFn is set, writes each row's aux words (auxRow per row) for a
// repacked weight's kernel.
type quantizeJob struct {
	fn       quant.RowFunc
	dst      []byte
	rowBytes int
	src      []float32
	cols     int
	aux      []uint32
	auxRow   int
	auxFn    func(aux []uint32, a []byte)
}

func (j *quantizeJob) do(_, lo, hi int) {
	for r := lo; r < hi; r++ {
		row := j.dst[r*j.rowBytes : (r+1)*j.rowBytes]
		j.fn(row, j.src[r*j.cols:(r+1)*j.cols])
		if j.auxFn != nil {
			j.auxFn(j.aux[r*j.auxRow:(r+1)*j.auxRow], row)
		}
	}
}

// matmulJob computes tiles of output columns of dst = x·wᵀ.
type matmulJob struct {
	d              []float32
	w              *tensor
	act            []byte
	dot            quant.DotFunc
	multi          quant.MultiDotFunc
	tile           quant.TileDotFunc
	n, in, out     int
	qrow, tileRows int
	out4           []workerResults // per-worker multi-row results
}

// workerResults holds one worker's multi-row dot products, padded to two
// cache lines: packed next to each other, the workers' result arrays
// shared a line, and every dot product's four stores bounced it between
// the cores (half the time of a prefill went there).
type workerResults struct {
	v [quant.MaxMultiRows]float32
	_ [128 - 4*quant.MaxMultiRows]byte
}

func (j *matmulJob) do(wk, lo, hi int) {
	wrb, in, out, qrow := j.w.rowBytes, j.in, j.out, j.qrow
	raw, d, act := j.w.raw, j.d, j.act
	res := &j.out4[wk].v
	for t := lo; t < hi; t++ {
		o0, o1 := t*j.tileRows, min((t+1)*j.tileRows, out)
		r := 0
		for ; r+quant.MaxMultiRows <= j.n; r += quant.MaxMultiRows {
			a := act[r*qrow:]
			o := o0
			if j.tile != nil {
				for ; o+quant.TileRows <= o1; o += quant.TileRows {
					j.tile(in, raw[o*wrb:], wrb, a, qrow, quant.TileRows, d[r*out+o:], out)
				}
			}
			for ; o < o1; o++ {
				j.multi(in, raw[o*wrb:(o+1)*wrb], a, qrow, res[:])
				for k, v := range res {
					d[(r+k)*out+o] = v
				}
			}
		}
		rest := j.n - r
		if rest == 0 {
			continue
		}
		a := act[r*qrow:]
		o := o0
		if j.tile != nil && (j.n >= quant.TileRows || j.w.interleaved) {
			// Four weight rows per pass over the last 1 to 3 activation
			// rows. Not in decode of fewer than four rows, where the weights
			// stream from memory once: the dot kernels' single stream
			// reads faster there than the tile's four interleaved ones.
			for ; o+quant.TileRows <= o1; o += quant.TileRows {
				j.tile(in, raw[o*wrb:], wrb, a, qrow, rest, d[r*out+o:], out)
			}
		}
		if rest > 1 {
			for ; o < o1; o++ {
				j.multi(in, raw[o*wrb:(o+1)*wrb], a, qrow, res[:rest])
				for k, v := range res[:rest] {
					d[(r+k)*out+o] = v
				}
			}
		} else {
			a := act[r*qrow : (r+1)*qrow]
			dr := d[r*out : (r+1)*out]
			for ; o < o1; o++ {
				dr[o] = j.dot(in, raw[o*wrb:(o+1)*wrb], a)
			}
		}
	}
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
		out = out[:len(in)]
		for j, v := range in {
			out[j] += s * v
		}
	}
}

// AddRow implements compute.Backend. A quantized bias is decoded on first
// use and kept with its tensor.
func (b *Backend) AddRow(dst, bias compute.Tensor) {
	d, r := ct(dst), ct(bias)
	br := r.f32
	if r.typ != quant.F32 {
		if r.deq == nil {
			deq := make([]float32, r.cols)
			if err := quant.Dequantize(r.typ, r.raw, deq); err != nil {
				panic(err)
			}
			r.deq = deq
		}
		br = r.deq
	}
	if len(br) != d.cols {
		panic(fmt.Sprintf("AddRow: dst cols %d, bias %d", d.cols, len(br)))
	}
	for i := 0; i < d.rows; i++ {
		row := d.f32[i*d.cols : (i+1)*d.cols]
		row = row[:len(br)]
		for j, v := range br {
			row[j] += v
		}
	}
}

// elementGrain is the smallest piece of an elementwise loop worth handing
// to another worker: below it the hand-off costs more than the work.
const elementGrain = 1 << 14

// rowGrain is the grain of a loop over rows of cols elements whose work
// per element is a few nanoseconds (a norm, a rotation, a quantization):
// rows enough for rowWork elements, so that a verification pass of a few
// tokens on a small model does not pay a hand-off to another worker for
// each of them (the hand-off costs more than a short row's work), while
// a prompt's rows still spread over every worker.
func rowGrain(cols int) int { return max(1, rowWork/max(cols, 1)) }

// rowWork is the number of elements rowGrain gives a chunk at least.
const rowWork = 4096

// Add implements compute.Backend.
func (b *Backend) Add(dst, a, c compute.Tensor) {
	d, x, y := ct(dst).f32, ct(a).f32, ct(c).f32
	if len(d) != len(x) || len(d) != len(y) {
		panic("Add: shape mismatch")
	}
	b.add = addJob{d: d, x: x, y: y}
	b.w.run(len(d), elementGrain, &b.add)
	b.add = addJob{}
}

// addJob sets d = x + y, or d *= s when y is nil.
type addJob struct {
	d, x, y []float32
	s       float32
}

func (j *addJob) do(_, lo, hi int) {
	d := j.d[lo:hi]
	if j.y == nil {
		for i := range d {
			d[i] *= j.s
		}
		return
	}
	quant.Add(d, j.x[lo:hi], j.y[lo:hi])
}

// Scale implements compute.Backend.
func (b *Backend) Scale(x compute.Tensor, s float32) {
	v := ct(x).f32
	b.add = addJob{d: v, s: s}
	b.w.run(len(v), elementGrain, &b.add)
	b.add = addJob{}
}

// RMSNorm implements compute.Backend. The sum of squares is accumulated in
// float64, as ggml does, so results match llama.cpp closely.
func (b *Backend) RMSNorm(dst, x, w compute.Tensor, eps float32) {
	d, xs, ws := ct(dst), ct(x), ct(w)
	if ws.typ != quant.F32 || ws.cols != xs.cols || d.cols != xs.cols || d.rows != xs.rows {
		panic("RMSNorm: shape or type mismatch")
	}
	b.rms = rmsNormJob{d: d.f32, x: xs.f32, w: ws.f32[:xs.cols], eps: eps, exact: b.exact}
	b.w.run(xs.rows, rowGrain(xs.cols), &b.rms)
	b.rms = rmsNormJob{}
}

type rmsNormJob struct {
	d, x, w []float32
	eps     float32
	exact   bool // sum the squares in order, as ggml
}

// sumSquaresInOrder is Σ v² over in with one float64 accumulator, in
// order: the same sum as ggml's plain loop.
func sumSquaresInOrder(in []float32) float64 {
	var sum float64
	i := 0
	for ; i+4 <= len(in); i += 4 {
		v := in[i : i+4 : i+4]
		sum += float64(v[0] * v[0])
		sum += float64(v[1] * v[1])
		sum += float64(v[2] * v[2])
		sum += float64(v[3] * v[3])
	}
	for ; i < len(in); i++ {
		sum += float64(in[i] * in[i])
	}
	return sum
}

// sumSquares is Σ v² over in in eight float64 partial sums, the default
// mode's: one accumulator is a chain of dependent additions, four cycles
// each, and a 2048-wide normalization of one row took 3.6 µs, 33 times a
// decode step of a 16-layer model.
func sumSquares(in []float32) float64 {
	s, i := quant.SquareSums8(in)
	for ; i < len(in); i++ {
		s[0] += float64(in[i] * in[i])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

func (j *rmsNormJob) do(_, lo, hi int) {
	n := len(j.w)
	for r := lo; r < hi; r++ {
		in := j.x[r*n : (r+1)*n]
		out := j.d[r*n : (r+1)*n]
		out, w := out[:len(in)], j.w[:len(in)]
		var sum float64
		if j.exact {
			sum = sumSquaresInOrder(in)
		} else {
			sum = sumSquares(in)
		}
		// float32 sqrt then float32 division, like sqrtf in ggml.
		scale := 1 / float32(math.Sqrt(float64(float32(sum/float64(n))+j.eps)))
		quant.ScaleMul(out, in, w, scale)
	}
}

// SwiGLU implements compute.Backend.
func (b *Backend) SwiGLU(dst, gate, up compute.Tensor) {
	dt := ct(dst)
	d, g, u := dt.f32, ct(gate).f32, ct(up).f32
	if len(d) != len(g) || len(d) != len(u) {
		panic("SwiGLU: shape mismatch")
	}
	b.glu = gluJob{d: d, g: g, u: u, cols: dt.cols}
	b.w.run(len(d)/dt.cols, max(1, 4096/dt.cols), &b.glu)
	b.glu = gluJob{}
}

// GeGLU implements compute.Backend with the tanh approximation of gelu.
func (b *Backend) GeGLU(dst, gate, up compute.Tensor) {
	d, g, u := ct(dst).f32, ct(gate).f32, ct(up).f32
	if len(d) != len(g) || len(d) != len(u) {
		panic("GeGLU: shape mismatch")
	}
	b.glu = gluJob{d: d, g: g, u: u, gelu: true, cols: ct(dst).cols}
	b.w.run(len(d)/b.glu.cols, max(1, 4096/b.glu.cols), &b.glu)
	b.glu = gluJob{}
}

// gluJob sets d = act(g)·u, row by row (cols elements each), with act
// silu, or gelu when gelu is set.
type gluJob struct {
	d, g, u []float32
	cols    int
	gelu    bool
}

func (j *gluJob) do(_, lo, hi int) {
	d := j.d[lo*j.cols : hi*j.cols]
	g, u := j.g[lo*j.cols:hi*j.cols], j.u[lo*j.cols:hi*j.cols]
	if j.gelu {
		const c = 0.7978845608028654 // sqrt(2/pi)
		for i := range d {
			x := float64(g[i])
			d[i] = float32(0.5*x*(1+math.Tanh(c*(x+0.044715*x*x*x)))) * u[i]
		}
		return
	}
	// Row by row: llama.cpp's vector blocks start again at each row.
	for r := 0; r < len(d); r += j.cols {
		quant.SwiGLU(d[r:r+j.cols], g[r:r+j.cols], u[r:r+j.cols])
	}
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
