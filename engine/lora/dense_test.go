package lora

import (
	"errors"
	"slices"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestDenseGGUFRoundTrip: an adapter built from float32 values, written
// as a GGUF LoRA file and loaded back, has the same targets, values,
// alpha and checksum.
func TestDenseGGUFRoundTrip(t *testing.T) {
	base := tinyBase(t, "llama")
	q, _ := base.Tensor("blk.0.attn_q.weight")
	down, _ := base.Tensor("blk.1.ffn_down.weight")
	mk := func(in, out, rank int, seed float32) Dense {
		d := Dense{In: in, Out: out, Rank: rank, A: make([]float32, rank*in), B: make([]float32, out*rank)}
		for i := range d.A {
			d.A[i] = seed + float32(i)*1e-3
		}
		for i := range d.B {
			d.B[i] = -seed + float32(i)*1e-4
		}
		return d
	}
	targets := map[string]Dense{
		"blk.0.attn_q":   mk(int(q.Shape[0]), int(q.Shape[1]), 2, 0.5),
		"blk.1.ffn_down": mk(int(down.Shape[0]), int(down.Shape[1]), 2, 0.25),
	}
	a, err := FromDense("learned", "llama", 4, targets, base)
	if err != nil {
		t.Fatal(err)
	}
	if a.Rank != 2 || a.Targets["blk.0.attn_q"].Scale != 2 {
		t.Fatalf("rank %d scale %v, want 2 and alpha/rank = 2", a.Rank, a.Targets["blk.0.attn_q"].Scale)
	}
	w, err := a.GGUF()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := writeParse(t, w)
	b, err := LoadGGUF(f, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Checksum != a.Checksum || b.Alpha != 4 || b.Name != "learned" || len(b.Targets) != 2 {
		t.Fatalf("loaded %+v, want the written adapter", b)
	}
	for name, d := range targets {
		p := b.Targets[name]
		fa, _ := p.HostA.Floats()
		fb, _ := p.HostB.Floats()
		if p.HostA.Type != quant.F32 || !slices.Equal(fa, d.A) || !slices.Equal(fb, d.B) {
			t.Fatalf("%s: values changed on the round trip", name)
		}
	}
}

func TestFromDenseErrors(t *testing.T) {
	base := tinyBase(t, "llama")
	q, _ := base.Tensor("blk.0.attn_q.weight")
	in, out := int(q.Shape[0]), int(q.Shape[1])
	for _, tc := range []struct {
		name    string
		targets map[string]Dense
		want    error
	}{
		{"short A", map[string]Dense{"blk.0.attn_q": {In: in, Out: out, Rank: 1, A: make([]float32, in-1), B: make([]float32, out)}}, ErrMalformed},
		{"zero rank", map[string]Dense{"blk.0.attn_q": {In: in, Out: out}}, ErrMalformed},
		{"wrong shape", map[string]Dense{"blk.0.attn_q": {In: in + 1, Out: out, Rank: 1, A: make([]float32, in+1), B: make([]float32, out)}}, ErrMismatch},
		{"no such weight", map[string]Dense{"blk.9.attn_q": {In: in, Out: out, Rank: 1, A: make([]float32, in), B: make([]float32, out)}}, ErrMismatch},
		{"empty", map[string]Dense{}, ErrNotAdapter},
	} {
		if _, err := FromDense("x", "llama", 0, tc.targets, base); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
