// Package compute defines the device-neutral interface that model code is
// written against: tensors that live on a device and the operations a
// decoder-only transformer needs. The CPU backend (compute/cpu) is the
// reference; accelerator backends (metal, coreml) implement the same
// interface so model code never changes.
package compute

import (
	"errors"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// ErrUnsupported is returned by backends for an operation or type they do
// not implement.
var ErrUnsupported = errors.New("not supported by this backend")

// Tensor is a 2-D matrix owned by a Backend: Rows rows of Cols elements,
// row-major. Activations are F32; weights keep their GGUF type. Model code
// never touches a tensor's memory directly.
type Tensor interface {
	Rows() int
	Cols() int
	Type() quant.Type
}

// RoPEMode says which elements of a head are rotated together.
type RoPEMode int

const (
	// RoPENormal rotates adjacent pairs (x[2i], x[2i+1]) — llama.
	RoPENormal RoPEMode = iota
	// RoPENeox rotates halves (x[i], x[i+d/2]) — qwen2, phi3, gemma2.
	RoPENeox
)

// RoPE holds the rotary embedding parameters of a model, read from GGUF
// metadata. The YaRN fields follow ggml's rope_yarn.
type RoPE struct {
	Mode     RoPEMode
	Dims     int     // rotated dimensions per head (≤ head size)
	FreqBase float32 // θ base, e.g. 10000
	// FreqScale is 1/scaling factor for linear and YaRN scaling (1 = none).
	FreqScale float32
	// YaRN: ExtFactor > 0 enables the ramp between interpolation and
	// extrapolation; AttnFactor scales the magnitude; BetaFast/BetaSlow
	// bound the ramp; OrigCtx is the training context.
	ExtFactor  float32
	AttnFactor float32
	BetaFast   float32
	BetaSlow   float32
	OrigCtx    int
	// Factors, when non-nil, divides each frequency (llama3 rope_freqs,
	// phi3 long/short factors); length Dims/2.
	Factors Tensor
}

// Span is the part of a batch that belongs to one sequence: rows
// [Row, Row+N) of the batch are that sequence's tokens at positions
// [Pos, Pos+N). Blocks is the sequence's KV block table, covering at least
// Pos+N positions.
type Span struct {
	Row, N int
	Pos    int
	Blocks []int32
	// Tree, when non-nil (N entries), makes the span a tree of candidate
	// tokens verified in one pass (speculative decoding): Tree[i] is the
	// span row of token i's parent, lower than i, or -1 when token i
	// follows position Pos-1 directly. Token i is rotated as position
	// Pos+depth(i) (depth 0 for a -1 parent), its keys and values are
	// stored at position Pos+i, and it attends to the positions before
	// Pos and to its ancestors and itself, so its output is what it would
	// be at position Pos+depth(i) of a sequence holding its path. Only
	// backends that implement TreeAttender accept it.
	Tree []int32
}

// TreeDepths writes the depth of each of tree's tokens into dst (grown as
// needed) and returns it; tree must be a valid Span.Tree.
func TreeDepths(dst []int32, tree []int32) []int32 {
	dst = append(dst[:0], tree...)
	for i, p := range tree {
		if p < 0 {
			dst[i] = 0
		} else {
			dst[i] = dst[p] + 1
		}
	}
	return dst
}

// ValidTree reports whether tree is a valid Span.Tree of n tokens: n
// entries, each -1 or the row of an earlier token.
func ValidTree(tree []int32, n int) bool {
	if len(tree) != n {
		return false
	}
	for i, p := range tree {
		if p < -1 || int(p) >= i {
			return false
		}
	}
	return true
}

// TreeAttender is implemented by backends whose RoPE and Attend honour
// Span.Tree, with key/value stores that can move positions (RowMover).
type TreeAttender interface {
	TreeSpans() bool
}

// OutputRowsFollower is implemented by backends whose matrix products
// depend on the number of rows in a call (the CPU backend's exact mode for
// a native AVX512-FP16 llama.cpp build). llama.cpp computes the last
// layer's feed-forward network only for the rows whose outputs a pass
// wants; with such a backend the callers say which rows those are
// (model.Batch.Outputs), so that models do the same.
type OutputRowsFollower interface {
	FollowsOutputRows() bool
}

// RowMover is implemented by KV stores that can copy single positions:
// after a tree is verified, the accepted path's keys and values move from
// their tree rows to consecutive positions.
type RowMover interface {
	// MoveRows copies, in order, the keys and values of every layer at
	// position src[i] to position dst[i] of the sequence whose block table
	// is blocks.
	MoveRows(blocks []int32, dst, src []int)
}

// Attention describes one attention call.
type Attention struct {
	Layer   int
	Heads   int     // query heads
	KVHeads int     // key/value heads (GQA when fewer than Heads)
	HeadDim int     // key/value head size
	Scale   float32 // multiplies q·k, usually 1/sqrt(HeadDim)
	// Softcap, when > 0, caps scores as Softcap·tanh(s/Softcap) (gemma2).
	Softcap float32
	// Window, when > 0, limits each query to the last Window positions
	// (sliding-window attention).
	Window int
}

// KVConfig sizes a KV store: Blocks blocks of BlockSize token positions,
// each holding keys and values of every layer.
type KVConfig struct {
	Layers    int
	Blocks    int
	BlockSize int
	KVHeads   int
	HeadDim   int
	// Type is the element type of stored keys and values (F16 or F32).
	Type quant.Type
	// ColdType, when set (Q8_0 or Q4_0), adds ColdBlocks cold blocks
	// after the Blocks hot ones (ids Blocks to Blocks+ColdBlocks-1) that
	// hold keys and values quantized to that type (TieredKV): positions
	// are written hot only, and full blocks move to the cold tier once
	// they are old (kv.Sequence.Demote).
	ColdType   quant.Type
	ColdBlocks int
}

// TieredKV is implemented by KV stores with a cold tier (KVConfig.
// ColdType). Attention reads cold blocks as they are; ReadBlock and
// WriteBlock move a cold block's ColdBlockBytes bytes, its quantized form.
type TieredKV interface {
	// DemoteBlock quantizes the keys and values of hot block src into
	// cold block dst.
	DemoteBlock(dst, src int32)
	ColdBlockBytes() int
}

// KVStore is device memory for keys and values, addressed by block. Which
// blocks belong to which sequence is decided outside (engine/kv); the
// store only holds the data.
type KVStore interface {
	Config() KVConfig
	// CopyBlock copies every layer of block src into block dst (copy-on-write).
	CopyBlock(dst, src int32)
	// ReadBlock and WriteBlock move one block's raw bytes (all layers) to and
	// from host memory, for saving and restoring cached prefixes.
	ReadBlock(b int32, dst []byte) error
	WriteBlock(b int32, src []byte) error
	// BlockBytes is the size of one block's raw bytes.
	BlockBytes() int
}

// Backend executes tensor operations on one device. Operations are eager:
// when a call returns, its result is visible to the next call. Shapes are
// checked by the backend and mismatches panic, because they are programming
// errors in model code, never a consequence of input.
type Backend interface {
	// Name identifies the backend in logs and `ruvllm inspect`.
	Name() string
	// Weight wraps GGUF weight data of a rows×cols matrix (rows = output
	// features). The data may be memory-mapped and must outlive the tensor.
	Weight(t quant.Type, rows, cols int, data []byte) (Tensor, error)
	// New returns an F32 tensor of the given shape, zeroed. Tensors are
	// reclaimed when unreferenced; hot loops reuse them instead.
	New(rows, cols int) Tensor
	// Upload copies host data into an F32 tensor; Download copies it back.
	Upload(dst Tensor, src []float32)
	Download(src Tensor, dst []float32)

	// GetRows writes row ids[i] of table (any weight type) into dst row i.
	GetRows(dst, table Tensor, ids []int32)
	// MatMul sets dst = x · wᵀ: dst[r] = w · x[r] for each row r of x. w is a
	// weight (any supported type) of shape out×in; x is N×in, dst N×out.
	MatMul(dst, x, w Tensor)
	// AddRowsScaled adds scales[i]·(row i of src) into row rows[i] of dst
	// (a scatter-add), so a delta computed for a few rows of a batch — a
	// LoRA adapter used by some of its sequences — lands on those rows only.
	AddRowsScaled(dst, src Tensor, rows []int32, scales []float32)
	// AddRow adds the single-row tensor b to every row of dst (bias).
	AddRow(dst, b Tensor)
	// Add sets dst = a + b elementwise (dst may alias a or b).
	Add(dst, a, b Tensor)
	// Scale multiplies x in place by s.
	Scale(x Tensor, s float32)
	// RMSNorm normalises each row of x by its RMS, times weight w (one row),
	// into dst (may alias x).
	RMSNorm(dst, x, w Tensor, eps float32)
	// RoPE rotates the heads of x (rows laid out as heads×headDim) in place
	// at the positions of each span.
	RoPE(x Tensor, spans []Span, heads, headDim int, p RoPE)
	// SwiGLU sets dst = silu(gate) * up; GeGLU uses tanh-approximated gelu.
	SwiGLU(dst, gate, up Tensor)
	GeGLU(dst, gate, up Tensor)
	// Softcap sets x = c·tanh(x/c) in place.
	Softcap(x Tensor, c float32)

	// NewKVStore allocates key/value memory.
	NewKVStore(cfg KVConfig) (KVStore, error)
	// Attend stores k and v (rows per token, KVHeads×HeadDim) into kv at
	// each span's positions, then writes causal attention of q
	// (Heads×HeadDim per row) over each span's keys into dst.
	Attend(dst, q, k, v Tensor, kv KVStore, spans []Span, a Attention)
}

// MatMulWeighter is implemented by backends that treat a weight used only
// as the right-hand side of MatMul (not an embedding table read by rows)
// differently: the CPU backend sums such Q4_0 weights in the order of
// llama.cpp's repacked kernels, because llama.cpp repacks exactly those.
// Model loaders call MatMulWeight for them when the backend has it.
type MatMulWeighter interface {
	MatMulWeight(t quant.Type, rows, cols int, data []byte) (Tensor, error)
}

// TiedOutputWeighter is implemented by backends that may lay out the
// output projection in a layout of their own when it shares its data with
// the token embedding table (which keeps reading the file's rows). Model
// loaders call TiedOutputWeight for such an output projection.
type TiedOutputWeighter interface {
	TiedOutputWeight(t quant.Type, rows, cols int, data []byte) (Tensor, error)
}

// MultiMatMuler is implemented by backends that multiply one input by
// several weights at once (a layer's q, k and v projections, or gate and
// up): the input is prepared once and the products share one parallel
// loop, which on small models costs less than the products themselves.
// Every dsts[i] must come out exactly as MatMul(dsts[i], x, ws[i]) would
// write it.
type MultiMatMuler interface {
	MatMulMulti(dsts []Tensor, x Tensor, ws []Tensor)
}

// Repacked is implemented by tensors that MatMulWeight may have copied
// into a layout of the backend's own (the CPU backend interleaves Q4_0
// matrices 16 rows at a time, as llama.cpp repacks them). When Repacked
// reports true the tensor never reads the data it was given again, and
// the caller may release that memory: the model loader drops the file's
// mapped pages, so the weights are not resident twice.
type Repacked interface {
	Repacked() bool
}

// Viewer is implemented by backends whose F32 tensors can be viewed with
// another shape without copying: View returns a rows×cols tensor over the
// elements [off, off+rows·cols) of t, sharing its memory (writes through
// either are seen by both). Families use it to run a row operation on
// each head of a row (Qwen3's and Gemma 3's per-head q/k norms) and to
// give each expert of a mixture-of-experts layer its slice of one batch
// buffer. Model code falls back to copies where a backend lacks it.
type Viewer interface {
	View(t Tensor, off, rows, cols int) Tensor
}
