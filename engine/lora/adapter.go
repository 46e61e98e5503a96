// Package lora loads LoRA adapters — llama.cpp's GGUF LoRA files and PEFT
// directories (adapter_config.json + adapter_model.safetensors) — validates
// them against a base model, and merges them into a base model's weights.
//
// A LoRA adapter replaces a weight W (out×in) by W + scale·B·A with A
// rank×in and B out×rank; the engine applies B·(A·x) at run time per
// sequence (engine/model), or Merge folds it into a new GGUF file.
package lora

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNotAdapter: the file is not a LoRA adapter (wrong general.type or
	// adapter.type, no adapter_config.json, no lora tensors).
	ErrNotAdapter = errors.New("not a LoRA adapter")
	// ErrMismatch: the adapter does not fit the base model (architecture,
	// a target missing from the base, or shapes that disagree).
	ErrMismatch = errors.New("adapter does not match the base model")
	// ErrUnsupportedTarget: the adapter targets a weight the engine cannot
	// adapt (embeddings, the output head, fused projections).
	ErrUnsupportedTarget = errors.New("unsupported LoRA target")
	// ErrMalformed: inconsistent adapter contents (a half pair, ranks that
	// disagree between A and B, bad alpha).
	ErrMalformed = errors.New("malformed LoRA adapter")
)

// Kinds lists the per-layer weights an adapter may target, by their GGUF
// names (the key of a target is "blk.<layer>.<kind>").
var Kinds = []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}

// Key names the target for weight kind of a layer, e.g. Key(3, "attn_q")
// is "blk.3.attn_q".
func Key(layer int, kind string) string { return fmt.Sprintf("blk.%d.%s", layer, kind) }

// Matrix is a host-side matrix: Rows rows of Cols elements of Type, row-major
// in GGUF's block layout.
type Matrix struct {
	Type       quant.Type
	Rows, Cols int
	Data       []byte
}

// Floats decodes the matrix to float32.
func (m Matrix) Floats() ([]float32, error) {
	out := make([]float32, m.Rows*m.Cols)
	rb, err := m.Type.RowBytes(m.Cols)
	if err != nil {
		return nil, err
	}
	for r := 0; r < m.Rows; r++ {
		if err := quant.Dequantize(m.Type, m.Data[r*rb:(r+1)*rb], out[r*m.Cols:(r+1)*m.Cols]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkFinite reports the first NaN or infinite element of m: such a
// value turns every logit of a request that applies the adapter into NaN,
// which decodes as an empty answer rather than an error. It decodes one
// row at a time, so a large adapter needs no second copy.
func (m Matrix) checkFinite() error {
	rb, err := m.Type.RowBytes(m.Cols)
	if err != nil {
		return err
	}
	if len(m.Data) < m.Rows*rb {
		return fmt.Errorf("%d bytes for %d rows of %d bytes", len(m.Data), m.Rows, rb)
	}
	row := make([]float32, m.Cols)
	for r := 0; r < m.Rows; r++ {
		if err := quant.Dequantize(m.Type, m.Data[r*rb:(r+1)*rb], row); err != nil {
			return err
		}
		for c, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("element [%d,%d] is %v", r, c, v)
			}
		}
	}
	return nil
}

// f32Matrix wraps float32 values as an F32 Matrix.
func f32Matrix(rows, cols int, v []float32) Matrix {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Matrix{Type: quant.F32, Rows: rows, Cols: cols, Data: b}
}

// Pair is one adapted weight: W (Out×In) becomes W + Scale·B·A.
type Pair struct {
	// A (Rank×In) and B (Out×Rank) on the backend the adapter was loaded
	// with; nil when it was loaded without one (merge only).
	A, B          compute.Tensor
	In, Out, Rank int
	// Scale is alpha/rank, or 1 when the adapter has no alpha (llama.cpp's
	// rule). The user's scale multiplies it.
	Scale float32
	// HostA and HostB are the matrices as loaded, kept for Merge and for
	// moving the adapter to another backend.
	HostA, HostB Matrix
}

// Adapter is a loaded LoRA adapter. It is immutable once loaded, so any
// number of sequences may use it at once, and a newer version loaded under
// the same name never disturbs sequences holding this one.
type Adapter struct {
	Name string
	// Arch is the base architecture it was made for ("" when unknown, PEFT).
	Arch string
	// Rank is the largest rank of its pairs (usually all equal).
	Rank int
	// Alpha is the LoRA alpha (0: none; the scale is then 1).
	Alpha float32
	// Targets maps a base weight name without ".weight" ("blk.3.attn_q")
	// to its pair.
	Targets map[string]*Pair
	// Checksum is the hex SHA-256 of the adapter's content (names, shapes,
	// types, data and alpha), its identity for caches.
	Checksum string
	// Format is "gguf" or "peft".
	Format string
	// Base identifies the model whose backend holds the matrices; set by
	// the loader's caller (engine/llm) before the adapter is shared.
	Base string
}

// Applied is an adapter used by a sequence with a user scale (1 = as trained).
type Applied struct {
	Adapter *Adapter
	Scale   float32
}

// Bytes is the memory the adapter's matrices take.
func (a *Adapter) Bytes() int64 {
	var n int64
	for _, p := range a.Targets {
		n += int64(len(p.HostA.Data) + len(p.HostB.Data))
	}
	return n
}

// Names returns the target names in a stable order.
func (a *Adapter) Names() []string {
	names := make([]string, 0, len(a.Targets))
	for n := range a.Targets {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return lessTarget(names[i], names[j]) })
	return names
}

// lessTarget orders "blk.N.kind" names by layer number, then kind.
func lessTarget(x, y string) bool {
	lx, kx := splitKey(x)
	ly, ky := splitKey(y)
	if lx != ly {
		return lx < ly
	}
	return kx < ky
}

// splitKey parses "blk.N.kind"; layer is -1 when the name is not of that form.
func splitKey(name string) (layer int, kind string) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1, name
	}
	num, kind, ok := strings.Cut(rest, ".")
	if !ok || num == "" || len(num) > 6 {
		return -1, name
	}
	n := 0
	for _, c := range num {
		if c < '0' || c > '9' {
			return -1, name
		}
		n = n*10 + int(c-'0')
	}
	return n, kind
}

// Identity is what distinguishes a set of applied adapters for caching:
// each adapter's checksum with its scale, in order. Empty for none.
func Identity(as []Applied) string {
	var sb strings.Builder
	for _, a := range as {
		if a.Adapter == nil {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('+')
		}
		fmt.Fprintf(&sb, "%s*%08x", a.Adapter.Checksum, math.Float32bits(a.Scale))
	}
	return sb.String()
}

// prepare checks the pairs' internal consistency and computes the scale
// of each pair, the rank and the checksum.
func (a *Adapter) prepare() error {
	if len(a.Targets) == 0 {
		return fmt.Errorf("%w: no lora tensors", ErrNotAdapter)
	}
	if a.Alpha < 0 || math.IsNaN(float64(a.Alpha)) || math.IsInf(float64(a.Alpha), 0) {
		return fmt.Errorf("%w: alpha %v", ErrMalformed, a.Alpha)
	}
	h := sha256.New()
	fmt.Fprintf(h, "lora/%s/%08x;", a.Arch, math.Float32bits(a.Alpha))
	for _, name := range a.Names() {
		p := a.Targets[name]
		if p.HostA.Cols != p.In || p.HostB.Rows != p.Out || p.HostA.Rows != p.HostB.Cols {
			return fmt.Errorf("%w: %s: lora_a is %dx%d and lora_b %dx%d (want rank×in and out×rank)",
				ErrMalformed, name, p.HostA.Rows, p.HostA.Cols, p.HostB.Rows, p.HostB.Cols)
		}
		p.Rank = p.HostA.Rows
		if p.Rank <= 0 || p.In <= 0 || p.Out <= 0 {
			return fmt.Errorf("%w: %s: empty matrix (rank %d, %d×%d)", ErrMalformed, name, p.Rank, p.Out, p.In)
		}
		p.Scale = 1
		if a.Alpha != 0 {
			p.Scale = a.Alpha / float32(p.Rank)
		}
		a.Rank = max(a.Rank, p.Rank)
		for i, m := range []Matrix{p.HostA, p.HostB} {
			if err := m.checkFinite(); err != nil {
				return fmt.Errorf("%w: %s lora_%c: %w", ErrMalformed, name, "ab"[i], err)
			}
			fmt.Fprintf(h, "%s/%d/%d/%d;", name, m.Type, m.Rows, m.Cols)
			h.Write(m.Data)
		}
	}
	a.Checksum = hex.EncodeToString(h.Sum(nil))
	return nil
}

// complete prepares a, validates it against base when non-nil and places
// it on b when non-nil: the common tail of the loaders.
func (a *Adapter) complete(base *gguf.File, b compute.Backend) (*Adapter, error) {
	if err := a.prepare(); err != nil {
		return nil, err
	}
	if base != nil {
		if err := Validate(a, base); err != nil {
			return nil, err
		}
	}
	if b != nil {
		if err := a.Upload(b); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Upload creates the backend tensors of every pair, for an adapter loaded
// without a backend. Call it before sharing the adapter: afterwards the
// adapter must not change.
func (a *Adapter) Upload(b compute.Backend) error {
	for _, name := range a.Names() {
		p := a.Targets[name]
		var err error
		if p.A, err = b.Weight(p.HostA.Type, p.HostA.Rows, p.HostA.Cols, p.HostA.Data); err != nil {
			return fmt.Errorf("%s lora_a: %w", name, err)
		}
		if p.B, err = b.Weight(p.HostB.Type, p.HostB.Rows, p.HostB.Cols, p.HostB.Data); err != nil {
			return fmt.Errorf("%s lora_b: %w", name, err)
		}
	}
	return nil
}
