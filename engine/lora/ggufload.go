package lora

import (
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/gguf"
)

// LoadGGUF reads a llama.cpp GGUF LoRA adapter (general.type = "adapter",
// adapter.type = "lora", adapter.lora.alpha, tensors "<weight>.lora_a" with
// GGML shape [in, rank] and "<weight>.lora_b" with [rank, out], any dtype
// the backend multiplies). Tensor data is copied, so f may be closed
// afterwards. When base is non-nil the adapter is validated against it;
// when b is non-nil its matrices are placed on b.
func LoadGGUF(f *gguf.File, base *gguf.File, b compute.Backend) (*Adapter, error) {
	if t, _ := f.String("general.type"); t != "adapter" {
		return nil, fmt.Errorf("%w: general.type is %q, want \"adapter\"", ErrNotAdapter, t)
	}
	if t, _ := f.String("adapter.type"); t != "lora" {
		return nil, fmt.Errorf("%w: adapter.type is %q, want \"lora\"", ErrNotAdapter, t)
	}
	a := &Adapter{Arch: f.Architecture(), Targets: map[string]*Pair{}, Format: "gguf"}
	a.Name, _ = f.String("general.name")
	// An alpha of another type than a number is refused: it was taken for
	// no alpha, which scales the pairs by 1 instead of alpha/rank.
	if v, present := f.Get("adapter.lora.alpha"); present {
		alpha, ok := v.Float()
		if !ok {
			return nil, fmt.Errorf("%w: adapter.lora.alpha = %s (%s) is not a number", ErrMalformed, v.Format(4), v.Type())
		}
		a.Alpha = float32(alpha)
	}
	for _, t := range f.Tensors {
		var isA bool
		var weight string
		switch {
		case strings.HasSuffix(t.Name, ".lora_a"):
			weight, isA = strings.TrimSuffix(t.Name, ".lora_a"), true
		case strings.HasSuffix(t.Name, ".lora_b"):
			weight = strings.TrimSuffix(t.Name, ".lora_b")
		default:
			return nil, fmt.Errorf("%w: tensor %q is neither .lora_a nor .lora_b", ErrMalformed, t.Name)
		}
		if len(t.Shape) != 2 {
			return nil, fmt.Errorf("%w: tensor %s has %d dimensions, want 2", ErrMalformed, t.Name, len(t.Shape))
		}
		data, err := f.TensorData(t.Name)
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		key := strings.TrimSuffix(weight, ".weight")
		p := a.Targets[key]
		if p == nil {
			p = &Pair{}
			a.Targets[key] = p
		}
		// GGML shape [cols, rows]: lora_a is rank rows of in, lora_b out rows of rank.
		m := Matrix{Type: t.Type, Rows: int(t.Shape[1]), Cols: int(t.Shape[0]), Data: append([]byte(nil), data...)}
		if isA {
			if p.HostA.Data != nil {
				return nil, fmt.Errorf("%w: %s: two lora_a tensors", ErrMalformed, key)
			}
			p.HostA, p.In = m, m.Cols
		} else {
			if p.HostB.Data != nil {
				return nil, fmt.Errorf("%w: %s: two lora_b tensors", ErrMalformed, key)
			}
			p.HostB, p.Out = m, m.Rows
		}
	}
	for _, name := range a.Names() {
		p := a.Targets[name]
		if p.HostA.Data == nil || p.HostB.Data == nil {
			return nil, fmt.Errorf("%w: %s is missing its lora_a or lora_b", ErrMalformed, name)
		}
	}
	return a.complete(base, b)
}
