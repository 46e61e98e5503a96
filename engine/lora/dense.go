package lora

import (
	"fmt"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// Dense is one adapted weight as float32 values held in memory (what a
// trainer produces): A is Rank×In and B is Out×Rank, row-major.
type Dense struct {
	In, Out, Rank int
	A, B          []float32
}

// FromDense builds an adapter from float32 matrices, checked like a
// loaded file and, when base is non-nil, validated against it. The
// values are copied. Like any adapter it is placed on a backend with
// Upload before use.
func FromDense(name, arch string, alpha float32, targets map[string]Dense, base *gguf.File) (*Adapter, error) {
	a := &Adapter{Name: name, Arch: arch, Alpha: alpha, Targets: map[string]*Pair{}, Format: "gguf"}
	for key, d := range targets {
		if d.Rank <= 0 || d.In <= 0 || d.Out <= 0 || len(d.A) != d.Rank*d.In || len(d.B) != d.Out*d.Rank {
			return nil, fmt.Errorf("%w: %s: %d and %d values for rank %d, %d×%d", ErrMalformed, key, len(d.A), len(d.B), d.Rank, d.Out, d.In)
		}
		a.Targets[key] = &Pair{
			In: d.In, Out: d.Out,
			HostA: f32Matrix(d.Rank, d.In, d.A),
			HostB: f32Matrix(d.Out, d.Rank, d.B),
		}
	}
	return a.complete(base, nil)
}

// GGUF returns a writer of a as a llama.cpp GGUF LoRA file
// (general.type "adapter", adapter.type "lora", adapter.lora.alpha, and
// "<weight>.weight.lora_a" [in, rank] / ".lora_b" [rank, out] tensors in
// the matrices' own types), the format LoadGGUF reads and llama.cpp's
// --lora loads.
func (a *Adapter) GGUF() (*gguf.Writer, error) {
	w := gguf.NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", a.Arch},
		{"general.type", "adapter"},
		{"general.name", a.Name},
		{"adapter.type", "lora"},
		{"adapter.lora.alpha", a.Alpha},
	} {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			return nil, fmt.Errorf("write adapter %s: %w", a.Name, err)
		}
	}
	for _, name := range a.Names() {
		p := a.Targets[name]
		for _, m := range []struct {
			suffix string
			m      Matrix
		}{{".weight.lora_a", p.HostA}, {".weight.lora_b", p.HostB}} {
			shape := []uint64{uint64(m.m.Cols), uint64(m.m.Rows)}
			if err := w.AddTensor(name+m.suffix, m.m.Type, shape, m.m.Data); err != nil {
				return nil, fmt.Errorf("write adapter %s: %w", a.Name, err)
			}
		}
	}
	return w, nil
}
