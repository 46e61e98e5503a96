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

func (l *loader) uintKey(suffix string, def int, required bool) (int, error) {
	v, ok := l.f.ArchUint(suffix)
	if !ok {
		if required {
			return 0, fmt.Errorf("missing metadata %s.%s", l.arch, suffix)
		}
		return def, nil
	}
	if v > math.MaxInt32 {
		return 0, fmt.Errorf("metadata %s.%s = %d is out of range", l.arch, suffix, v)
	}
	return int(v), nil
}

func (l *loader) floatKey(suffix string, def float32) float32 {
	if v, ok := l.f.ArchFloat(suffix); ok {
		return float32(v)
	}
	return def
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
		return c, fmt.Errorf("bad head counts: %d heads, %d kv heads", c.Heads, c.KVHeads)
	}
	if c.Dim%c.Heads != 0 {
		return c, fmt.Errorf("embedding size %d is not divisible by %d heads", c.Dim, c.Heads)
	}
	if c.HeadDim, err = l.uintKey("attention.key_length", c.Dim/c.Heads, false); err != nil {
		return c, err
	}
	c.NormEps = l.floatKey("attention.layer_norm_rms_epsilon", 1e-5)
	rd, err := l.uintKey("rope.dimension_count", c.HeadDim, false)
	if err != nil {
		return c, err
	}
	c.RoPE = compute.RoPE{Mode: mode, Dims: rd}
	if err := l.ropeScaling(&c); err != nil {
		return c, err
	}
	if t, ok := l.f.Tensor("token_embd.weight"); ok && len(t.Shape) == 2 {
		c.Vocab = int(t.Shape[1])
	}
	if c.Vocab == 0 {
		return c, fmt.Errorf("missing token_embd.weight")
	}
	return c, nil
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
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", name)
	}
	if len(t.Shape) != 1 || int(t.Shape[0]) != n {
		return nil, fmt.Errorf("tensor %s has shape %v, want [%d]", name, t.Shape, n)
	}
	data, err := l.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	v := make([]float32, n)
	if err := quant.Dequantize(t.Type, data, v); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
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
	return l.matrix("token_embd.weight", c.Vocab, c.Dim)
}
