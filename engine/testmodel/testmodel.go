// Package testmodel generates deterministic random-weight GGUF models
// (llama, qwen2, phi3, gemma2) with llama.cpp's tensor names and metadata
// keys, for tests and benchmarks that need a model of a given shape without
// a model hub. Weights are streamed into the file tensor by tensor, so
// models of several GB never need to be held in memory.
package testmodel

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// Options describe the model to generate. Zero fields take the values of
// DefaultOptions.
type Options struct {
	Arch          string // llama, qwen2, phi3 or gemma2
	Layers        int
	Dim           int // embedding size
	Heads         int
	KVHeads       int // 0: same as Heads
	FF            int // feed-forward size
	ContextLength int
	// SlidingWindow is gemma2's local attention window (0: ContextLength/2).
	SlidingWindow int
	// Type is the element type of 2-D weight matrices (token embedding
	// included); 1-D norms and biases are always F32.
	Type quant.Type
	Seed uint64
	// VocabFrom copies every tokenizer.* key from this GGUF file; empty
	// selects the built-in byte-level BPE vocabulary (gpt2 model, 256 byte
	// tokens, a few merges, ChatML specials).
	VocabFrom string
	// Name is general.name (default "ruvllm-testmodel-<arch>").
	Name string
}

// DefaultOptions is the shape of a tiny llama model that builds in
// milliseconds. (Type F32 is the zero quant.Type; Seed 0 is a valid seed.)
func DefaultOptions() Options {
	return Options{
		Arch: "llama", Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, FF: 128,
		ContextLength: 512, Type: quant.F32,
	}
}

// Arches lists the supported architectures.
func Arches() []string { return []string{"llama", "qwen2", "phi3", "gemma2"} }

// normalize fills defaults and checks the shape is consistent.
func (o Options) normalize() (Options, error) {
	d := DefaultOptions()
	if o.Arch == "" {
		o.Arch = d.Arch
	}
	for _, f := range []struct{ v, def *int }{
		{&o.Layers, &d.Layers}, {&o.Dim, &d.Dim}, {&o.Heads, &d.Heads}, {&o.FF, &d.FF},
		{&o.ContextLength, &d.ContextLength},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if o.KVHeads == 0 {
		o.KVHeads = o.Heads
	}
	if o.Name == "" {
		o.Name = "ruvllm-testmodel-" + o.Arch
	}
	if o.SlidingWindow == 0 {
		o.SlidingWindow = max(o.ContextLength/2, 1)
	}
	switch o.Arch {
	case "llama", "qwen2", "phi3", "gemma2":
	default:
		return o, fmt.Errorf("testmodel: unknown architecture %q (want one of %v)", o.Arch, Arches())
	}
	if o.Layers < 1 || o.Dim < 1 || o.Heads < 1 || o.KVHeads < 1 || o.FF < 1 || o.ContextLength < 1 {
		return o, fmt.Errorf("testmodel: sizes must be positive: %+v", o)
	}
	if o.Dim%o.Heads != 0 || o.Heads%o.KVHeads != 0 {
		return o, fmt.Errorf("testmodel: dim %d must divide by heads %d, and heads by kv heads %d", o.Dim, o.Heads, o.KVHeads)
	}
	if (o.Dim/o.Heads)%2 != 0 {
		return o, fmt.Errorf("testmodel: head size %d must be even for RoPE", o.Dim/o.Heads)
	}
	if !supported(o.Type) {
		return o, fmt.Errorf("%w %s: engine/quant has no quantizer or no dot product for it", ErrType, o.Type)
	}
	// Every matrix's row length (Dim or FF) must be whole blocks of the
	// type it gets.
	for _, n := range []int{o.Dim, o.FF} {
		if t := matrixType(o.Type, n); n%t.BlockSize() != 0 {
			return o, fmt.Errorf("testmodel: %s needs dim (%d) and ff (%d) to be multiples of %d", t, o.Dim, o.FF, t.BlockSize())
		}
	}
	return o, nil
}

// tensor is one tensor to generate: GGML shape and value distribution.
type tensor struct {
	name  string
	shape []uint64 // GGML order: shape[0] is the row length
	typ   quant.Type
	std   float64 // N(mean, std)
	mean  float64
}

// plan lists the model's tensors in llama.cpp's order and names.
func plan(o Options, vocab int) []tensor {
	hd := o.Dim / o.Heads
	qd, kvd := o.Heads*hd, o.KVHeads*hd
	// Residual-branch outputs are scaled down with depth (GPT-2 style) so
	// activations stay O(1) however many layers there are.
	resid := 1 / math.Sqrt(float64(2*o.Layers))
	mat := func(name string, in, out int, scale float64) tensor {
		return tensor{name: name, shape: []uint64{uint64(in), uint64(out)}, typ: matrixType(o.Type, in), std: scale / math.Sqrt(float64(in))}
	}
	norm := func(name string) tensor {
		return tensor{name: name, shape: []uint64{uint64(o.Dim)}, typ: quant.F32, mean: 1, std: 0.05}
	}
	bias := func(name string, n int) tensor {
		return tensor{name: name, shape: []uint64{uint64(n)}, typ: quant.F32, std: 0.02}
	}
	ts := []tensor{mat("token_embd.weight", o.Dim, vocab, 1)}
	for i := 0; i < o.Layers; i++ {
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		ts = append(ts, norm(b("attn_norm.weight")))
		if o.Arch == "phi3" {
			ts = append(ts, mat(b("attn_qkv.weight"), o.Dim, qd+2*kvd, 1))
		} else {
			ts = append(ts,
				mat(b("attn_q.weight"), o.Dim, qd, 1),
				mat(b("attn_k.weight"), o.Dim, kvd, 1),
				mat(b("attn_v.weight"), o.Dim, kvd, 1))
			if o.Arch == "qwen2" {
				ts = append(ts, bias(b("attn_q.bias"), qd), bias(b("attn_k.bias"), kvd), bias(b("attn_v.bias"), kvd))
			}
		}
		ts = append(ts, mat(b("attn_output.weight"), qd, o.Dim, resid))
		if o.Arch == "gemma2" {
			ts = append(ts, norm(b("post_attention_norm.weight")))
		}
		ts = append(ts, norm(b("ffn_norm.weight")))
		if o.Arch == "phi3" {
			// Gate and up fused: rows [0, FF) gate, [FF, 2FF) up.
			ts = append(ts, mat(b("ffn_up.weight"), o.Dim, 2*o.FF, 1))
		} else {
			ts = append(ts, mat(b("ffn_gate.weight"), o.Dim, o.FF, 1), mat(b("ffn_up.weight"), o.Dim, o.FF, 1))
		}
		ts = append(ts, mat(b("ffn_down.weight"), o.FF, o.Dim, resid))
		if o.Arch == "gemma2" {
			ts = append(ts, norm(b("post_ffw_norm.weight")))
		}
	}
	ts = append(ts, norm("output_norm.weight"))
	// qwen2 and gemma2 tie the output projection to the token embedding.
	if o.Arch == "llama" || o.Arch == "phi3" {
		ts = append(ts, mat("output.weight", o.Dim, vocab, 1))
	}
	return ts
}

// matrixType is the type of a weight matrix with rows of n elements:
// t, or when t is a K-quant whose 256-element super-block does not divide
// n, the fallback llama.cpp's quantizer picks (Q4_K→Q5_0, Q5_K→Q5_1,
// Q6_K→Q8_0; Q2_K and Q3_K get Q4_0, where llama.cpp uses IQ4_NL, which
// engine/quant does not implement).
func matrixType(t quant.Type, n int) quant.Type {
	if t.BlockSize() != quant.QKK || n%quant.QKK == 0 {
		return t
	}
	switch t {
	case quant.Q4_K:
		return quant.Q5_0
	case quant.Q5_K:
		return quant.Q5_1
	case quant.Q6_K:
		return quant.Q8_0
	case quant.Q2_K, quant.Q3_K:
		return quant.Q4_0
	}
	return t
}

// fileType maps a weight type to llama.cpp's general.file_type (LLAMA_FTYPE).
func fileType(t quant.Type) (uint32, bool) {
	m := map[quant.Type]uint32{
		quant.F32: 0, quant.F16: 1, quant.Q4_0: 2, quant.Q4_1: 3, quant.Q8_0: 7, quant.Q5_0: 8,
		quant.Q5_1: 9, quant.Q2_K: 10, quant.Q3_K: 12, quant.Q4_K: 15, quant.Q5_K: 17, quant.Q6_K: 18,
		quant.BF16: 32,
	}
	v, ok := m[t]
	return v, ok
}

// metadata returns the general.* and <arch>.* keys.
func metadata(o Options, vocab int) []entry {
	a := o.Arch + "."
	hd := o.Dim / o.Heads
	eps := float32(1e-5)
	if o.Arch == "gemma2" {
		eps = 1e-6
	}
	es := []entry{
		{"general.architecture", o.Arch},
		{"general.name", o.Name},
		{a + "context_length", uint32(o.ContextLength)},
		{a + "embedding_length", uint32(o.Dim)},
		{a + "block_count", uint32(o.Layers)},
		{a + "feed_forward_length", uint32(o.FF)},
		{a + "attention.head_count", uint32(o.Heads)},
		{a + "attention.head_count_kv", uint32(o.KVHeads)},
		{a + "rope.dimension_count", uint32(hd)},
		{a + "rope.freq_base", float32(10000)},
		{a + "attention.layer_norm_rms_epsilon", eps},
		{a + "vocab_size", uint32(vocab)},
	}
	if o.Arch == "gemma2" {
		es = append(es,
			entry{a + "attention.key_length", uint32(hd)},
			entry{a + "attention.value_length", uint32(hd)},
			entry{a + "attn_logit_softcapping", float32(50)},
			entry{a + "final_logit_softcapping", float32(30)},
			entry{a + "attention.sliding_window", uint32(o.SlidingWindow)},
		)
	}
	if ft, ok := fileType(o.Type); ok {
		es = append(es, entry{"general.file_type", ft})
	}
	if o.Type.BlockSize() > 1 {
		es = append(es, entry{"general.quantization_version", uint32(2)})
	}
	return es
}

// New builds a Writer for the model described by o. Tensor data is
// generated while the Writer writes; generation checks ctx between chunks
// and fails the write when ctx is done.
func New(ctx context.Context, o Options) (*gguf.Writer, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	var vocab []entry
	if o.VocabFrom != "" {
		vocab, err = vocabFrom(o.VocabFrom)
	} else {
		vocab, err = byteVocab()
	}
	if err != nil {
		return nil, err
	}
	nVocab := 0
	for _, e := range vocab {
		if e.key == "tokenizer.ggml.tokens" {
			v, err := gguf.NewValue(e.val)
			if err != nil {
				return nil, err
			}
			nVocab = v.Len()
		}
	}
	if nVocab == 0 {
		return nil, fmt.Errorf("testmodel: empty vocabulary")
	}
	w := gguf.NewWriter()
	for _, e := range append(metadata(o, nVocab), vocab...) {
		if err := w.AddKV(e.key, e.val); err != nil {
			return nil, fmt.Errorf("testmodel: %w", err)
		}
	}
	for _, t := range plan(o, nVocab) {
		if err := w.AddTensorFunc(t.name, t.typ, t.shape, generator(ctx, o.Seed, t)); err != nil {
			return nil, fmt.Errorf("testmodel: %w", err)
		}
	}
	return w, nil
}

// Write generates the model described by o into path, atomically.
func Write(ctx context.Context, o Options, path string) error {
	w, err := New(ctx, o)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// chunkElems bounds the floats generated at once (4 MiB of float32).
const chunkElems = 1 << 20

// generator returns the streaming writer of one tensor. Each tensor has its
// own random stream, seeded from the model seed and the tensor name, so a
// tensor's values do not depend on which other tensors the model has.
func generator(ctx context.Context, seed uint64, t tensor) func(io.Writer) error {
	return func(w io.Writer) error {
		h := fnv.New64a()
		h.Write([]byte(t.name))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		row := int(t.shape[0])
		rows := 1
		for _, d := range t.shape[1:] {
			rows *= int(d)
		}
		per := max(1, chunkElems/row) // whole rows per chunk, so blocks never split
		rowBytes, err := t.typ.RowBytes(row)
		if err != nil {
			return err
		}
		src := make([]float32, min(per, rows)*row)
		dst := make([]byte, min(per, rows)*rowBytes)
		for done := 0; done < rows; done += per {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(per, rows-done)
			s, d := src[:n*row], dst[:n*rowBytes]
			for i := range s {
				s[i] = float32(t.mean + t.std*rng.NormFloat64())
			}
			if err := encode(t.typ, s, d); err != nil {
				return err
			}
			if _, err := w.Write(d); err != nil {
				return err
			}
		}
		return nil
	}
}

// ControlTokens returns the ids of the control tokens (token type 3) of the
// model at path: tests ban them to keep a random-weight model from ending
// its reply.
func ControlTokens(path string) ([]int32, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	types, ok := f.Int32s("tokenizer.ggml.token_type")
	if !ok {
		return nil, fmt.Errorf("%s has no token types", path)
	}
	var ids []int32
	for id, typ := range types {
		if typ == 3 {
			ids = append(ids, int32(id))
		}
	}
	return ids, nil
}
