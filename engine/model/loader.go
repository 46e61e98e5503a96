package model

import (
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// loader reads hyperparameters and weights from a GGUF file onto a backend.
type loader struct {
	f    *gguf.File
	b    compute.Backend
	arch string
	// released are the file data of repacked weights, released once
	// loaded and again when loading ends: reading the next tensor maps
	// the pages around it back in (the kernel's fault-around), a
	// released neighbour's tail among them.
	released [][]byte
}

// releaseAgain drops the repacked weights' file pages that loading the
// tensors after them mapped back in.
func (l *loader) releaseAgain() error {
	for _, data := range l.released {
		if err := l.f.ReleaseData(data); err != nil {
			return err
		}
	}
	l.released = nil
	return nil
}

// uintKey reads the integer <arch>.<suffix>: def when the file has no
// such key (an error when required). A key of another type, or a negative
// one, is an error naming it: it was taken for a missing one, so a
// head_count_kv written as a string became head_count, and a
// context_length of -1 the default.
func (l *loader) uintKey(suffix string, def int, required bool) (int, error) {
	v, ok := l.f.ArchUint(suffix)
	if !ok {
		if raw, present := l.f.Get(l.arch + "." + suffix); present {
			return 0, fmt.Errorf("metadata %s.%s = %s (%s) is not a non-negative integer", l.arch, suffix, raw.Format(4), raw.Type())
		}
		if required {
			return 0, fmt.Errorf("missing metadata %s.%s", l.arch, suffix)
		}
		return def, nil
	}
	if v > math.MaxInt32 {
		return 0, fmt.Errorf("metadata %s.%s = %d is out of range [0, %d]", l.arch, suffix, v, math.MaxInt32)
	}
	return int(v), nil
}

// floatKey reads the number <arch>.<suffix> (a float or an integer): def
// when the file has no such key. A key of another type is an error naming
// it: a rope.freq_base written as a string was replaced by the default.
func (l *loader) floatKey(suffix string, def float32) (float32, error) {
	if v, ok := l.f.ArchFloat(suffix); ok {
		return float32(v), nil
	}
	if raw, present := l.f.Get(l.arch + "." + suffix); present {
		return 0, fmt.Errorf("metadata %s.%s = %s (%s) is not a number", l.arch, suffix, raw.Format(4), raw.Type())
	}
	return def, nil
}

// config reads the hyperparameters common to all families.
func (l *loader) config(mode compute.RoPEMode) (Config, error) {
	c := Config{Arch: l.arch}
	var err error
	for _, k := range []struct {
		dst      *int
		key      string
		def      int
		required bool
	}{
		{&c.Layers, "block_count", 0, true},
		{&c.Dim, "embedding_length", 0, true},
		{&c.Heads, "attention.head_count", 0, true},
		{&c.FF, "feed_forward_length", 0, true},
		{&c.ContextLength, "context_length", 2048, false},
		{&c.Window, "attention.sliding_window", 0, false},
	} {
		if *k.dst, err = l.uintKey(k.key, k.def, k.required); err != nil {
			return c, err
		}
	}
	if c.KVHeads, err = l.uintKey("attention.head_count_kv", c.Heads, false); err != nil {
		return c, err
	}
	if c.Heads <= 0 || c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("metadata %s.attention.head_count = %d and %s.attention.head_count_kv = %d: the heads must be a positive multiple of the kv heads",
			l.arch, c.Heads, l.arch, c.KVHeads)
	}
	if c.Dim%c.Heads != 0 {
		return c, fmt.Errorf("metadata %s.embedding_length = %d is not divisible by %s.attention.head_count = %d", l.arch, c.Dim, l.arch, c.Heads)
	}
	if c.HeadDim, err = l.uintKey("attention.key_length", c.Dim/c.Heads, false); err != nil {
		return c, err
	}
	if c.NormEps, err = l.floatKey("attention.layer_norm_rms_epsilon", 1e-5); err != nil {
		return c, err
	}
	rd, err := l.uintKey("rope.dimension_count", c.HeadDim, false)
	if err != nil {
		return c, err
	}
	c.RoPE = compute.RoPE{Mode: mode, Dims: rd}
	if err := l.ropeScaling(&c); err != nil {
		return c, err
	}
	if t, ok := l.f.Tensor("token_embd.weight"); ok && len(t.Shape) == 2 {
		if t.Shape[1] > MaxVocab {
			return c, fmt.Errorf("token_embd.weight has %d rows; at most %d are supported", t.Shape[1], MaxVocab)
		}
		c.Vocab = int(t.Shape[1])
	}
	if c.Vocab == 0 {
		return c, fmt.Errorf("missing token_embd.weight")
	}
	if err := l.checkConfig(c); err != nil {
		return c, err
	}
	return c, nil
}

// Bounds on the hyperparameters a file may declare. They are far above
// any real model's and exist so that a malformed or hostile file is
// refused with the key named, before any of its numbers sizes memory.
const (
	MaxLayers        = 1024
	MaxDim           = 1 << 17
	MaxHeads         = 1024
	MaxHeadDim       = 1024
	MaxFF            = 1 << 20
	MaxContextLength = 1 << 24
	MaxVocab         = 1 << 22
)

// checkConfig refuses hyperparameters outside sane bounds or inconsistent
// with each other, naming the metadata key and its value.
func (l *loader) checkConfig(c Config) error {
	key := func(suffix string) string { return l.arch + "." + suffix }
	for _, k := range []struct {
		name   string
		v, max int
	}{
		{key("block_count"), c.Layers, MaxLayers},
		{key("embedding_length"), c.Dim, MaxDim},
		{key("attention.head_count"), c.Heads, MaxHeads},
		{key("attention.head_count_kv"), c.KVHeads, MaxHeads},
		{key("attention.key_length"), c.HeadDim, MaxHeadDim},
		{key("feed_forward_length"), c.FF, MaxFF},
		{key("context_length"), c.ContextLength, MaxContextLength},
	} {
		if k.v < 1 || k.v > k.max {
			return fmt.Errorf("metadata %s = %d is out of range [1, %d]", k.name, k.v, k.max)
		}
	}
	if c.Window < 0 || c.Window > MaxContextLength {
		return fmt.Errorf("metadata %s = %d is out of range [0, %d]", key("attention.sliding_window"), c.Window, MaxContextLength)
	}
	if c.RoPE.Dims < 0 || c.RoPE.Dims > c.HeadDim || c.RoPE.Dims%2 != 0 {
		return fmt.Errorf("metadata %s = %d must be even and at most the head size %d", key("rope.dimension_count"), c.RoPE.Dims, c.HeadDim)
	}
	finite := func(name string, v float32, positive bool) error {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) || (positive && f <= 0) {
			return fmt.Errorf("metadata %s = %g must be a finite positive number", name, v)
		}
		return nil
	}
	for _, err := range []error{
		finite(key("attention.layer_norm_rms_epsilon"), c.NormEps, true),
		finite(key("rope.freq_base"), c.RoPE.FreqBase, true),
		finite(key("rope.scaling.factor"), c.RoPE.FreqScale, true),
		finite(key("rope.scaling.attn_factor"), c.RoPE.AttnFactor, false),
	} {
		if err != nil {
			return err
		}
	}
	if c.RoPE.OrigCtx < 0 || c.RoPE.OrigCtx > MaxContextLength {
		return fmt.Errorf("metadata %s = %d is out of range [0, %d]", key("rope.scaling.original_context_length"), c.RoPE.OrigCtx, MaxContextLength)
	}
	return nil
}

// has reports whether the file has tensor name.
func (l *loader) has(name string) bool {
	_, ok := l.f.Tensor(name)
	return ok
}

// matrix loads a 2-D weight of out×in (GGUF shape [in, out]).
func (l *loader) matrix(name string, out, in int) (compute.Tensor, error) {
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	if len(t.Shape) != 2 || int(t.Shape[0]) != in || int(t.Shape[1]) != out {
		return nil, fmt.Errorf("tensor %s has shape %v, want [%d %d]", name, t.Shape, in, out)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	w, err := l.weight(name, t.Type, out, in, data)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	return w, nil
}

// weight wraps tensor name's data, through compute.MatMulWeighter when
// the backend has it and the tensor is not the embedding table (which is
// read by rows, and which llama.cpp therefore never repacks, even where
// the output projection shares it).
//
// A weight the backend repacked into a layout of its own (compute.Repacked)
// no longer reads data, so its pages of the file mapping are released: the
// matrix is then resident once, in the backend's copy.
func (l *loader) weight(name string, typ quant.Type, rows, cols int, data []byte) (compute.Tensor, error) {
	mw, ok := l.b.(compute.MatMulWeighter)
	if !ok || name == "token_embd.weight" {
		return l.b.Weight(typ, rows, cols, data)
	}
	w, err := mw.MatMulWeight(typ, rows, cols, data)
	if err != nil {
		return nil, err
	}
	if r, ok := w.(compute.Repacked); ok && r.Repacked() {
		if err := l.f.ReleaseData(data); err != nil {
			return nil, err
		}
		l.released = append(l.released, data)
	}
	return w, nil
}

// rows loads a 2-D weight of out×in and splits it into consecutive row
// ranges (fused qkv or gate+up); the parts share the file's memory.
func (l *loader) rows(name string, in int, parts ...int) ([]compute.Tensor, error) {
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	total := 0
	for _, p := range parts {
		total += p
	}
	if len(t.Shape) != 2 || int(t.Shape[0]) != in || int(t.Shape[1]) != total {
		return nil, fmt.Errorf("tensor %s has shape %v, want [%d %d]", name, t.Shape, in, total)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	rb, err := t.Type.RowBytes(in)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	var out []compute.Tensor
	off := 0
	for _, p := range parts {
		w, err := l.weight(name, t.Type, p, in, data[off*rb:(off+p)*rb])
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		out = append(out, w)
		off += p
	}
	return out, nil
}

// vector loads a 1-D tensor of n elements as an F32 row (norms, biases).
func (l *loader) vector(name string, n int) (compute.Tensor, error) {
	v, err := l.f.Vector(name, n)
	if err != nil {
		return nil, err
	}
	dst := l.b.New(1, n)
	l.b.Upload(dst, v)
	return dst, nil
}

// optionalVector loads a 1-D tensor if present.
func (l *loader) optionalVector(name string, n int) (compute.Tensor, error) {
	if !l.has(name) {
		return nil, nil
	}
	return l.vector(name, n)
}

// blk names a per-layer tensor.
func blk(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }

// output loads the output projection, falling back to the tied token
// embedding when the file has no separate one.
func (l *loader) output(c Config) (compute.Tensor, error) {
	if l.has("output.weight") {
		return l.matrix("output.weight", c.Vocab, c.Dim)
	}
	return l.tiedOutput(c)
}

// tiedOutput loads the token embedding table as the output projection,
// through compute.TiedOutputWeighter where the backend has it. A copy the
// backend repacked leaves the table's pages to the embedding's row reads,
// so they are released (they fault back in from the file row by row).
func (l *loader) tiedOutput(c Config) (compute.Tensor, error) {
	const name = "token_embd.weight"
	tw, ok := l.b.(compute.TiedOutputWeighter)
	if !ok {
		return l.matrix(name, c.Vocab, c.Dim)
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	if len(t.Shape) != 2 || int(t.Shape[0]) != c.Dim || int(t.Shape[1]) != c.Vocab {
		return nil, fmt.Errorf("tensor %s has shape %v, want [%d %d]", name, t.Shape, c.Dim, c.Vocab)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	w, err := tw.TiedOutputWeight(t.Type, c.Vocab, c.Dim, data)
	if err != nil {
		return nil, fmt.Errorf("tensor %s as the output: %w", name, err)
	}
	if r, ok := w.(compute.Repacked); ok && r.Repacked() {
		if err := l.f.ReleaseData(data); err != nil {
			return nil, err
		}
		l.released = append(l.released, data)
	}
	return w, nil
}
