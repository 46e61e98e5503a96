package testmodel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

func build(t *testing.T, o Options) ([]byte, *gguf.File) {
	t.Helper()
	w, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), f
}

func TestArchitectures(t *testing.T) {
	const L, D, H, KV, FF = 2, 64, 4, 2, 96
	const hd = D / H
	tests := []struct {
		arch    string
		tensors int
		want    map[string][]uint64 // some tensors and their GGML shapes
		absent  []string
		keys    map[string]any
	}{
		{"llama", 1 + L*9 + 2, map[string][]uint64{
			"token_embd.weight": {D, 299}, "blk.1.attn_q.weight": {D, H * hd}, "blk.1.attn_k.weight": {D, KV * hd},
			"blk.0.attn_output.weight": {H * hd, D}, "blk.0.ffn_gate.weight": {D, FF}, "blk.0.ffn_down.weight": {FF, D},
			"blk.0.ffn_norm.weight": {D}, "output.weight": {D, 299},
		}, []string{"blk.0.attn_q.bias"}, map[string]any{"llama.block_count": uint64(L), "llama.attention.head_count_kv": uint64(KV)}},
		{"qwen2", 1 + L*12 + 1, map[string][]uint64{
			"blk.0.attn_q.bias": {H * hd}, "blk.0.attn_k.bias": {KV * hd}, "blk.1.attn_v.bias": {KV * hd},
		}, []string{"output.weight"}, map[string]any{"qwen2.feed_forward_length": uint64(FF)}},
		{"phi3", 1 + L*6 + 2, map[string][]uint64{
			"blk.0.attn_qkv.weight": {D, (H + 2*KV) * hd}, "blk.0.ffn_up.weight": {D, 2 * FF}, "output.weight": {D, 299},
		}, []string{"blk.0.attn_q.weight", "blk.0.ffn_gate.weight"}, map[string]any{"phi3.rope.dimension_count": uint64(hd)}},
		{"gemma2", 1 + L*11 + 1, map[string][]uint64{
			"blk.0.post_attention_norm.weight": {D}, "blk.1.post_ffw_norm.weight": {D},
		}, []string{"output.weight"}, map[string]any{
			"gemma2.attn_logit_softcapping": 50.0, "gemma2.final_logit_softcapping": 30.0,
			"gemma2.attention.sliding_window": uint64(128),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.arch, func(t *testing.T) {
			_, f := build(t, Options{Arch: tc.arch, Layers: L, Dim: D, Heads: H, KVHeads: KV, FF: FF, ContextLength: 256, Seed: 7})
			if len(f.Tensors) != tc.tensors {
				t.Errorf("%d tensors, want %d", len(f.Tensors), tc.tensors)
			}
			if f.Architecture() != tc.arch {
				t.Errorf("arch %q", f.Architecture())
			}
			for name, shape := range tc.want {
				ti, ok := f.Tensor(name)
				if !ok || !equal(ti.Shape, shape) {
					t.Errorf("%s: %v %v, want %v", name, ok, ti.Shape, shape)
				}
			}
			for _, name := range tc.absent {
				if _, ok := f.Tensor(name); ok {
					t.Errorf("unexpected tensor %s", name)
				}
			}
			for k, want := range tc.keys {
				v, ok := f.Get(k)
				var got any
				switch want.(type) {
				case uint64:
					got, _ = v.Uint()
				case float64:
					got, _ = v.Float()
				}
				if !ok || got != want {
					t.Errorf("%s = %v, want %v", k, v, want)
				}
			}
			for _, k := range []string{"context_length", "embedding_length", "attention.head_count", "rope.freq_base", "attention.layer_norm_rms_epsilon"} {
				if _, ok := f.Get(tc.arch + "." + k); !ok {
					t.Errorf("missing %s.%s", tc.arch, k)
				}
			}
			for _, ti := range f.Tensors {
				if len(ti.Shape) == 1 && ti.Type != quant.F32 {
					t.Errorf("1-D tensor %s is %s", ti.Name, ti.Type)
				}
			}
		})
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func floats(t *testing.T, f *gguf.File, name string) []float32 {
	t.Helper()
	ti, _ := f.Tensor(name)
	d, err := f.TensorData(name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, ti.Elements())
	for i := range out {
		switch ti.Type {
		case quant.F32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		case quant.F16:
			out[i] = quant.FP16ToFP32(binary.LittleEndian.Uint16(d[2*i:]))
		default:
			t.Fatalf("type %s", ti.Type)
		}
	}
	return out
}

func stats(x []float32) (mean, std float64) {
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	for _, v := range x {
		std += (float64(v) - mean) * (float64(v) - mean)
	}
	return mean, math.Sqrt(std / float64(len(x)))
}

func TestDistributionsAndDeterminism(t *testing.T) {
	o := Options{Arch: "llama", Layers: 2, Dim: 128, Heads: 4, FF: 256, Seed: 3, Type: quant.F16}
	a, f := build(t, o)
	b, _ := build(t, o)
	if !bytes.Equal(a, b) {
		t.Fatal("same options produced different files")
	}
	o.Seed = 4
	c, _ := build(t, o)
	if bytes.Equal(a, c) {
		t.Fatal("different seeds produced the same file")
	}
	checks := []struct {
		name      string
		mean, std float64
	}{
		{"blk.0.attn_q.weight", 0, 1 / math.Sqrt(128)},
		{"blk.0.ffn_down.weight", 0, 0.5 / math.Sqrt(256)}, // residual scale 1/sqrt(2*layers)
		{"blk.1.attn_norm.weight", 1, 0.05},
		{"token_embd.weight", 0, 1 / math.Sqrt(128)},
	}
	for _, c := range checks {
		m, s := stats(floats(t, f, c.name))
		if math.Abs(m-c.mean) > 0.1*c.std+1e-3 || math.Abs(s-c.std) > 0.1*c.std {
			t.Errorf("%s: mean %.4f std %.4f, want %.4f %.4f", c.name, m, s, c.mean, c.std)
		}
	}
	if ft, _ := f.Uint("general.file_type"); ft != 1 {
		t.Errorf("file_type %d, want 1 (F16)", ft)
	}
}

func TestByteVocab(t *testing.T) {
	_, f := build(t, Options{})
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	merges, _ := f.Strings("tokenizer.ggml.merges")
	types, _ := f.Int32s("tokenizer.ggml.token_type")
	if len(toks) != 256+len(merges)+3 || len(types) != len(toks) {
		t.Fatalf("%d tokens, %d merges, %d types", len(toks), len(merges), len(types))
	}
	if toks['A'] != "A" || toks[' '] != "Ġ" || toks['\n'] != "Ċ" {
		t.Errorf("byte tokens: %q %q %q", toks['A'], toks[' '], toks['\n'])
	}
	eos, _ := f.Uint("tokenizer.ggml.eos_token_id")
	if toks[eos] != "<|endoftext|>" || types[eos] != tokenControl {
		t.Errorf("eos %d = %q type %d", eos, toks[eos], types[eos])
	}
	if m, _ := f.String("tokenizer.ggml.model"); m != "gpt2" {
		t.Errorf("model %q", m)
	}
	if tmpl, _ := f.String("tokenizer.chat_template"); !strings.Contains(tmpl, "<|im_start|>") {
		t.Errorf("template %q", tmpl)
	}
	seen := map[string]bool{}
	for _, s := range toks {
		if seen[s] {
			t.Errorf("duplicate token %q", s)
		}
		seen[s] = true
	}
}

func TestVocabFrom(t *testing.T) {
	dir, _ := os.Getwd()
	var src string
	for ; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "shared", "models", "ruvllm-test-qwen2-13m-q4_0.gguf")
		if _, err := os.Stat(p); err == nil {
			src = p
			break
		}
		if filepath.Dir(dir) == dir {
			t.Skip("shared models not found above the package directory")
		}
	}
	_, f := build(t, Options{Arch: "qwen2", VocabFrom: src})
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	merges, _ := f.Strings("tokenizer.ggml.merges")
	if len(toks) != 8192 || len(merges) != 7933 || toks[0] != "<|endoftext|>" {
		t.Errorf("%d tokens, %d merges, first %q", len(toks), len(merges), toks[0])
	}
	if pre, _ := f.String("tokenizer.ggml.pre"); pre != "gpt-2" {
		t.Errorf("pre %q", pre)
	}
	if emb, _ := f.Tensor("token_embd.weight"); emb.Shape[1] != 8192 {
		t.Errorf("token_embd %v", emb.Shape)
	}
}

func TestErrors(t *testing.T) {
	bad := []Options{
		{Arch: "gpt9"},
		{Dim: 60, Heads: 7},
		{Heads: 4, KVHeads: 3},
		{Dim: 24, Heads: 8}, // odd head size
		{Type: quant.Type(99)},
		{Layers: -1},
	}
	for _, o := range bad {
		if _, err := New(context.Background(), o); err == nil {
			t.Errorf("accepted %+v", o)
		}
	}
	if _, err := New(context.Background(), Options{Type: quant.IQ2_XXS}); !errors.Is(err, ErrType) {
		t.Errorf("IQ2_XXS (no quantizer): %v", err)
	}
	if _, err := New(context.Background(), Options{Type: quant.Q8_K}); !errors.Is(err, ErrType) {
		t.Errorf("Q8_K (activation-only): %v", err)
	}
	if _, err := New(context.Background(), Options{Type: quant.Q4_K, Dim: 80, Heads: 4}); err == nil {
		t.Error("accepted Q4_K with dim 80 (not whole blocks of its fallback Q5_0)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := New(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(path); !errors.Is(err, context.Canceled) {
		t.Errorf("write after cancel: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("cancelled write left %s", path)
	}
	if err := Write(context.Background(), Options{Arch: "gemma2"}, path); err != nil {
		t.Fatal(err)
	}
	if f, err := gguf.Open(path); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
}

// TestQuantizedTypes generates a model for every weight type engine/quant
// implements and checks each matrix's type (K-quants fall back as in
// llama.cpp where 256 does not divide the rows) and that it decodes close
// to the F32 model of the same seed.
func TestQuantizedTypes(t *testing.T) {
	base := Options{Layers: 1, Dim: 256, FF: 384, Seed: 9}
	_, ref := build(t, base)
	for _, typ := range []quant.Type{quant.F16, quant.BF16, quant.Q8_0, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1,
		quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		o := base
		o.Type = typ
		_, f := build(t, o)
		for _, c := range []struct {
			name string
			typ  quant.Type
		}{
			{"blk.0.attn_q.weight", typ},                    // rows of 256
			{"blk.0.ffn_down.weight", matrixType(typ, 384)}, // rows of 384
		} {
			ti, _ := f.Tensor(c.name)
			if ti.Type != c.typ {
				t.Errorf("%s: %s is %s, want %s", typ, c.name, ti.Type, c.typ)
				continue
			}
			d, err := f.TensorData(c.name)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, ti.Elements())
			if err := quant.Dequantize(ti.Type, d, got); err != nil {
				t.Fatalf("%s %s: %v", typ, c.name, err)
			}
			want := floats(t, ref, c.name)
			var se, ss float64
			for i := range want {
				e := float64(got[i] - want[i])
				se += e * e
				ss += float64(want[i]) * float64(want[i])
			}
			// Q2_K is the coarsest format, at about 0.3 relative rmse.
			if rel := math.Sqrt(se / ss); rel > 0.4 {
				t.Errorf("%s %s: relative rmse %.3f against the F32 model", typ, c.name, rel)
			}
		}
	}
}
