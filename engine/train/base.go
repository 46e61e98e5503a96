package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// ErrUnsupported is returned for a base model the trainer cannot run
// (an architecture without a backward pass here, YaRN-scaled rotary
// embeddings).
var ErrUnsupported = errors.New("not supported by the trainer")

// family describes what distinguishes an architecture's decoder block
// from the llama block the trainer differentiates. A family that needs
// more (fused projections, post-norms, GeGLU, soft-capping) adds a field
// here and its forward and backward steps in block.go.
type family struct {
	qkvBias bool // q, k and v projections carry biases (qwen2)
}

// families are the architectures the trainer supports.
var families = map[string]family{
	"llama": {},
	"qwen2": {qkvBias: true},
}

// Architectures lists the supported general.architecture values.
func Architectures() []string { return []string{"llama", "qwen2"} }

// BaseOptions configures NewBase.
type BaseOptions struct {
	// DenseBytes bounds the memory spent on float32 copies of the weight
	// matrices (default 1 GiB). Matrices that fit are dequantized once;
	// the rest are dequantized on the fly at every use, which costs time
	// but no memory.
	DenseBytes int64
}

// Base is a frozen base model prepared for training: its configuration,
// its weight matrices in their file format (any type engine/quant
// dequantizes) with float32 copies of those that fit the budget, and its
// norms and biases as float32. It is read-only once built and may be
// shared by any number of trainers. The file must stay open while the
// Base is used.
type Base struct {
	cfg    model.Config
	fam    family
	f      *gguf.File
	embd   *matrix
	output *matrix
	norm   []float32 // output norm
	layers []baseLayer
	// cos and sin hold the rotary angles of every position, Dims/2 per
	// position, in float64 (the float32 net rounds them).
	cos, sin []float64
	// ident fingerprints the base for adapters' validation.
	ident string
}

type baseLayer struct {
	attnNorm, ffnNorm []float32
	bq, bk, bv        []float32
	// w holds the seven adaptable projections, indexed like lora.Kinds.
	w [nKinds]*matrix
}

// The adaptable projections, in lora.Kinds order.
const (
	kQ = iota
	kK
	kV
	kO
	kGate
	kUp
	kDown
	nKinds
)

// matrix is a weight of rows×cols (rows = output features) in its file
// type, with a float32 copy when the budget allowed one.
type matrix struct {
	rows, cols int
	typ        quant.Type
	data       []byte
	rowBytes   int
	dense      []float32
}

// NewBase prepares the model in f for training.
func NewBase(f *gguf.File, o BaseOptions) (_ *Base, err error) {
	defer mapfault.Catch(&err, mapfault.Arm())
	if o.DenseBytes == 0 {
		o.DenseBytes = 1 << 30
	}
	arch := f.Architecture()
	fam, ok := families[arch]
	if !ok {
		return nil, fmt.Errorf("%w: architecture %q (supported: %v)", ErrUnsupported, arch, Architectures())
	}
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	if cfg.RoPE.ExtFactor != 0 {
		return nil, fmt.Errorf("%w: YaRN rotary scaling", ErrUnsupported)
	}
	if cfg.Window != 0 || cfg.AttnSoftcap != 0 || cfg.FinalSoftcap != 0 {
		return nil, fmt.Errorf("%w: sliding windows or soft-capping", ErrUnsupported)
	}
	b := &Base{cfg: cfg, fam: fam, f: f, layers: make([]baseLayer, cfg.Layers)}
	budget := o.DenseBytes
	ld := &baseLoader{f: f, budget: &budget}
	qd, kvd := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	shapes := [nKinds][2]int{
		kQ: {qd, cfg.Dim}, kK: {kvd, cfg.Dim}, kV: {kvd, cfg.Dim}, kO: {cfg.Dim, qd},
		kGate: {cfg.FF, cfg.Dim}, kUp: {cfg.FF, cfg.Dim}, kDown: {cfg.Dim, cfg.FF},
	}
	for i := range b.layers {
		L := &b.layers[i]
		for k, kind := range lora.Kinds {
			if L.w[k], err = ld.matrix(lora.Key(i, kind)+".weight", shapes[k][0], shapes[k][1]); err != nil {
				return nil, err
			}
		}
		if L.attnNorm, err = ld.vector(fmt.Sprintf("blk.%d.attn_norm.weight", i), cfg.Dim); err != nil {
			return nil, err
		}
		if L.ffnNorm, err = ld.vector(fmt.Sprintf("blk.%d.ffn_norm.weight", i), cfg.Dim); err != nil {
			return nil, err
		}
		if fam.qkvBias {
			for _, v := range []struct {
				dst  *[]float32
				name string
				n    int
			}{{&L.bq, "attn_q.bias", qd}, {&L.bk, "attn_k.bias", kvd}, {&L.bv, "attn_v.bias", kvd}} {
				if *v.dst, err = ld.vector(fmt.Sprintf("blk.%d.%s", i, v.name), v.n); err != nil {
					return nil, err
				}
			}
		}
	}
	if b.norm, err = ld.vector("output_norm.weight", cfg.Dim); err != nil {
		return nil, err
	}
	outName := "output.weight"
	if _, ok := f.Tensor(outName); !ok {
		outName = "token_embd.weight" // tied
	}
	if b.output, err = ld.matrix(outName, cfg.Vocab, cfg.Dim); err != nil {
		return nil, err
	}
	// The embedding is read a row per token: no dense copy.
	noBudget := int64(0)
	if b.embd, err = (&baseLoader{f: f, budget: &noBudget}).matrix("token_embd.weight", cfg.Vocab, cfg.Dim); err != nil {
		return nil, err
	}
	var factors []float32
	if _, ok := f.Tensor("rope_freqs.weight"); ok {
		if factors, err = ld.vector("rope_freqs.weight", cfg.RoPE.Dims/2); err != nil {
			return nil, err
		}
	}
	b.ropeTables(factors)
	b.ident = fmt.Sprintf("%s/%d/%d/%d", arch, cfg.Layers, cfg.Dim, cfg.Vocab)
	return b, nil
}

// Config returns the base model's hyperparameters.
func (b *Base) Config() model.Config { return b.cfg }

// File returns the GGUF file the base reads its weights from.
func (b *Base) File() *gguf.File { return b.f }

// DenseBytes is the memory the float32 copies of weights take.
func (b *Base) DenseBytes() int64 {
	var n int64
	add := func(m *matrix) {
		n += 4 * int64(len(m.dense))
	}
	for i := range b.layers {
		for _, m := range b.layers[i].w {
			add(m)
		}
	}
	add(b.output)
	return n
}

// ropeTables fills the rotary angles of every position of the context,
// as the CPU backend computes them (θ_i = pos·base^(-2i/dims)·scale /
// factor_i), in float64.
func (b *Base) ropeTables(factors []float32) {
	c := b.cfg
	dims := c.RoPE.Dims
	if dims == 0 || dims > c.HeadDim {
		dims = c.HeadDim
	}
	b.cfg.RoPE.Dims = dims
	half := dims / 2
	scale := float64(c.RoPE.FreqScale)
	if scale == 0 {
		scale = 1
	}
	attn := float64(c.RoPE.AttnFactor)
	if attn == 0 {
		attn = 1
	}
	n := max(c.ContextLength, 1)
	b.cos, b.sin = make([]float64, n*half), make([]float64, n*half)
	for pos := range n {
		for i := range half {
			theta := float64(pos) * math.Pow(float64(c.RoPE.FreqBase), -2*float64(i)/float64(dims)) * scale
			if factors != nil {
				theta /= float64(factors[i])
			}
			s, co := math.Sincos(theta)
			b.cos[pos*half+i], b.sin[pos*half+i] = co*attn, s*attn
		}
	}
}

// baseLoader reads tensors for NewBase, charging dense copies to budget.
type baseLoader struct {
	f      *gguf.File
	budget *int64
}

func (l *baseLoader) matrix(name string, rows, cols int) (*matrix, error) {
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	if len(t.Shape) != 2 || int(t.Shape[0]) != cols || int(t.Shape[1]) != rows {
		return nil, fmt.Errorf("tensor %s has shape %v, want [%d %d]", name, t.Shape, cols, rows)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	rb, err := t.Type.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	if len(data) < rows*rb {
		return nil, fmt.Errorf("tensor %s: %d bytes for %d rows of %d", name, len(data), rows, rb)
	}
	m := &matrix{rows: rows, cols: cols, typ: t.Type, data: data, rowBytes: rb}
	if need := 4 * int64(rows) * int64(cols); need <= *l.budget {
		m.dense = make([]float32, rows*cols)
		if err := m.dequantize(0, rows, m.dense); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		*l.budget -= need
	} else if err := m.dequantize(0, 1, make([]float32, cols)); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	return m, nil
}

func (l *baseLoader) vector(name string, n int) ([]float32, error) {
	return l.f.Vector(name, n)
}

// dequantize writes rows [r0, r1) of m as float32 into dst.
func (m *matrix) dequantize(r0, r1 int, dst []float32) error {
	for r := r0; r < r1; r++ {
		if err := quant.Dequantize(m.typ, m.data[r*m.rowBytes:(r+1)*m.rowBytes], dst[(r-r0)*m.cols:(r-r0+1)*m.cols]); err != nil {
			return err
		}
	}
	return nil
}

// ropeMode is the rotary layout of the base.
func (b *Base) ropeMode() compute.RoPEMode { return b.cfg.RoPE.Mode }
