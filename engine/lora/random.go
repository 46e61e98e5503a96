package lora

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// RandomOptions describes a synthetic adapter made by Random.
type RandomOptions struct {
	Rank  int     // default 8
	Alpha float32 // 0: no alpha (scale 1)
	// Kinds are the weight kinds to target (default: every adaptable kind
	// the base has).
	Kinds []string
	Seed  uint64
	// Type of the lora tensors: F32 (default), F16 or BF16.
	Type quant.Type
	Name string
}

// Random builds a GGUF LoRA adapter with random matrices for base, for
// tests and benchmarks: A ~ N(0, 1/in) and B ~ N(0, 1/rank), so B·A is of
// the order of a base weight. Targets that Validate would refuse are
// skipped.
func Random(base *gguf.File, o RandomOptions) (*gguf.Writer, error) {
	if o.Rank <= 0 {
		o.Rank = 8
	}
	if o.Kinds == nil {
		o.Kinds = Kinds
	}
	switch o.Type {
	case quant.F32, quant.F16, quant.BF16:
	default:
		return nil, fmt.Errorf("random adapter: type %s not supported", o.Type)
	}
	w := gguf.NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", base.Architecture()},
		{"general.type", "adapter"},
		{"general.name", o.Name},
		{"adapter.type", "lora"},
		{"adapter.lora.alpha", o.Alpha},
	} {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x10ba))
	n := 0
	for _, t := range base.Tensors {
		layer, kind := splitKey(t.Name)
		kind, ok := cutSuffix(kind, ".weight")
		if layer < 0 || !ok || !slices.Contains(o.Kinds, kind) || len(t.Shape) != 2 {
			continue
		}
		in, out := int(t.Shape[0]), int(t.Shape[1])
		p := &Pair{In: in, Out: out}
		a := &Adapter{Arch: base.Architecture(), Targets: map[string]*Pair{Key(layer, kind): p}}
		p.HostA, p.HostB = Matrix{Rows: o.Rank, Cols: in}, Matrix{Rows: out, Cols: o.Rank}
		if Validate(a, base) != nil {
			continue
		}
		for _, m := range []struct {
			suffix     string
			rows, cols int
			std        float64
		}{
			{".lora_a", o.Rank, in, 1 / math.Sqrt(float64(in))},
			{".lora_b", out, o.Rank, 1 / math.Sqrt(float64(o.Rank))},
		} {
			v := make([]float32, m.rows*m.cols)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * m.std)
			}
			data, err := encodeRows(o.Type, v)
			if err != nil {
				return nil, err
			}
			if err := w.AddTensor(t.Name+m.suffix, o.Type, []uint64{uint64(m.cols), uint64(m.rows)}, data); err != nil {
				return nil, err
			}
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("random adapter: base has no adaptable weight of kinds %v", o.Kinds)
	}
	return w, nil
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || s[len(s)-len(suffix):] != suffix {
		return s, false
	}
	return s[:len(s)-len(suffix)], true
}

// encodeRows encodes float32 values as t (F32, F16 or BF16).
func encodeRows(t quant.Type, v []float32) ([]byte, error) {
	if t == quant.F32 {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b, nil
	}
	n, err := t.RowBytes(len(v))
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	return b, quant.Quantize(t, b, v)
}
