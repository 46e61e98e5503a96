package lora

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestNonFiniteValuesRefused: an adapter holding a NaN or an infinity is
// malformed. Installed, it made every logit of a request that applied it
// NaN, and the request answered an empty text with finish_reason "stop"
// instead of an error.
func TestNonFiniteValuesRefused(t *testing.T) {
	base := tinyBase(t, "llama") // dim 64
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name   string
		typ    quant.Type
		tensor string // the tensor that holds the bad value
		v      float32
		msg    string
	}{
		{"nan in a", quant.F32, "lora_a", nan, "blk.0.attn_q lora_a"},
		{"inf in b", quant.F32, "lora_b", inf, "blk.0.attn_q lora_b"},
		{"-inf in a", quant.F32, "lora_a", -inf, "blk.0.attn_q lora_a"},
		{"f16 nan in b", quant.F16, "lora_b", nan, "blk.0.attn_q lora_b"},
		{"f16 overflow in a", quant.F16, "lora_a", 1e6, "blk.0.attn_q lora_a"}, // beyond f16's range: stored as +Inf
		{"finite", quant.F32, "lora_a", 0.5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := adapterWriter(t, goodKV, nil)
			for _, m := range []struct {
				suffix string
				shape  []uint64 // GGML order: [cols, rows]
			}{{"lora_a", []uint64{64, 4}}, {"lora_b", []uint64{4, 64}}} {
				v := make([]float32, m.shape[0]*m.shape[1])
				if m.suffix == tc.tensor {
					v[len(v)/2] = tc.v
				}
				data, err := encodeRows(tc.typ, v)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.AddTensor("blk.0.attn_q.weight."+m.suffix, tc.typ, m.shape, data); err != nil {
					t.Fatal(err)
				}
			}
			f, _ := writeParse(t, w)
			_, err := LoadGGUF(f, base, nil)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("finite adapter refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want ErrMalformed naming %q", err, tc.msg)
			}
		})
	}
}

// TestFromDenseRefusesNonFinite: a trainer's matrices are checked too, so
// a diverged run cannot publish a NaN adapter.
func TestFromDenseRefusesNonFinite(t *testing.T) {
	base := tinyBase(t, "llama")
	a, b := make([]float32, 4*64), make([]float32, 64*4)
	b[7] = float32(math.NaN())
	_, err := FromDense("x", "llama", 8, map[string]Dense{"blk.0.attn_q": {In: 64, Out: 64, Rank: 4, A: a, B: b}}, base)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
}
