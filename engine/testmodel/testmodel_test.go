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
		{"qwen3", 1 + L*11 + 1, map[string][]uint64{
			"blk.0.attn_q_norm.weight": {hd}, "blk.1.attn_k_norm.weight": {hd},
		}, []string{"output.weight", "blk.0.attn_q.bias"}, map[string]any{"qwen3.attention.key_length": uint64(hd)}},
		{"gemma3", 1 + L*13 + 1, map[string][]uint64{
			"blk.0.attn_q_norm.weight": {hd}, "blk.0.post_attention_norm.weight": {D}, "blk.1.post_ffw_norm.weight": {D},
		}, []string{"output.weight"}, map[string]any{
			"gemma3.attention.sliding_window": uint64(128), "gemma3.attention.sliding_window_pattern": uint64(6),
			"gemma3.rope.freq_base_swa": 10000.0,
		}},
		{"qwen3moe", 1 + L*12 + 2, map[string][]uint64{
			"blk.0.ffn_gate_inp.weight": {D, 4}, "blk.0.ffn_gate_exps.weight": {D, FF / 2, 4},
			"blk.1.ffn_up_exps.weight": {D, FF / 2, 4}, "blk.1.ffn_down_exps.weight": {FF / 2, D, 4}, "output.weight": {D, 299},
		}, []string{"blk.0.ffn_gate.weight", "blk.0.ffn_gate_shexp.weight"}, map[string]any{
			"qwen3moe.expert_count": uint64(4), "qwen3moe.expert_used_count": uint64(2), "qwen3moe.expert_feed_forward_length": uint64(FF / 2),
		}},
		{"qwen2moe", 1 + L*17 + 2, map[string][]uint64{
			"blk.0.ffn_gate_inp_shexp.weight": {D}, "blk.0.ffn_gate_shexp.weight": {D, FF}, "blk.0.ffn_down_shexp.weight": {FF, D},
			"blk.0.attn_q.bias": {H * hd},
		}, []string{"blk.0.attn_q_norm.weight"}, map[string]any{
			"qwen2moe.expert_shared_feed_forward_length": uint64(FF),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.arch, func(t *testing.T) {
			if tc.arch == "qwen2moe" || tc.arch == "qwen3moe" {
				// The router stays F32 in quantized files, as
				// llama-quantize keeps it.
				_, q := build(t, Options{Arch: tc.arch, Layers: L, Dim: D, Heads: H, KVHeads: KV, FF: 128, ContextLength: 256, Seed: 7, Type: quant.Q8_0})
				if ti, _ := q.Tensor("blk.0.ffn_gate_inp.weight"); ti.Type != quant.F32 {
					t.Errorf("router is %s", ti.Type)
				}
				if ti, _ := q.Tensor("blk.0.ffn_up_exps.weight"); ti.Type != quant.Q8_0 {
					t.Errorf("experts are %s", ti.Type)
				}
			}
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
		{Arch: "qwen2", RopeScaling: "llama3"}, // llama3 factors are a llama tensor
		{Arch: "llama", RopeScaling: "longrope"},
		{Arch: "llama", RopeScaling: "ntk"},
		{Arch: "qwen3", Experts: 4},
		{Arch: "llama", Experts: 4, ExpertsUsed: 5},
		{Arch: "qwen3moe", Experts: 1000},
		{Arch: "llama", HeadDim: 32}, // only qwen3 and gemma3 have heads of their own size
		{Arch: "qwen3", HeadDim: 15},
		{Arch: "qwen3", RopeBase: 1},
		{Arch: "qwen3moe", ExpertFF: 40, Type: quant.Q8_0}, // not whole blocks
		// Out of the loader's bounds, or negative (they were written, as
		// files ruvllm then refused: --swa -5 became 4294967291).
		{Arch: "gemma2", SlidingWindow: -5},
		{ContextLength: 3000000000},
		{Arch: "llama", Experts: -1},
		{Arch: "qwen2moe", ExpertsUsed: -2},
		{Layers: 5000},
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
			{"blk.0.ffn_down.weight", MatrixType(typ, 384)}, // rows of 384
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

// TestRopeScalingMetadata checks the keys and tensors each context
// extension writes, as llama.cpp's converter writes them.
func TestRopeScalingMetadata(t *testing.T) {
	base := Options{Layers: 1, Dim: 64, Heads: 4, FF: 128, ContextLength: 1024}
	get := func(f *gguf.File, k string) any {
		v, ok := f.Get(k)
		if !ok {
			return nil
		}
		if s, ok := v.Str(); ok {
			return s
		}
		if u, ok := v.Uint(); ok {
			return u
		}
		x, _ := v.Float()
		return float32(x)
	}
	o := base
	o.Arch, o.RopeScaling = "qwen2", "yarn"
	_, f := build(t, o)
	for k, want := range map[string]any{"qwen2.rope.scaling.type": "yarn", "qwen2.rope.scaling.factor": float32(4), "qwen2.rope.scaling.original_context_length": uint64(256)} {
		if got := get(f, k); got != want {
			t.Errorf("yarn: %s = %v, want %v", k, got, want)
		}
	}
	if get(f, "qwen2.rope.scaling.attn_factor") != nil {
		t.Error("yarn without an attention factor wrote one")
	}
	o.Arch, o.RopeScaling = "llama", "linear"
	_, f = build(t, o)
	if get(f, "llama.rope.scaling.type") != "linear" || get(f, "llama.rope.scaling.factor") != float32(4) {
		t.Error("linear keys")
	}
	o.RopeScaling, o.RopeOrigCtx, o.RopeFactor = "llama3", 64, 8
	_, f = build(t, o)
	if get(f, "llama.rope.scaling.type") != nil {
		t.Error("llama3 wrote a scaling type llama.cpp refuses")
	}
	// Meta's rule, in float64, for head size 16 and base 10000: the
	// highest frequency keeps its wavelength (factor 1), the lowest are
	// divided by the factor, the ones between interpolate.
	got := floats(t, f, "rope_freqs.weight")
	if len(got) != 8 {
		t.Fatalf("%d llama3 factors", len(got))
	}
	for i, g := range got {
		freq := math.Pow(10000, -float64(2*i)/16)
		wave := 2 * math.Pi / freq
		want := 8.0
		if wave < 64.0/4 {
			want = 1
		} else if wave <= 64 {
			s := (64/wave - 1) / (4 - 1)
			want = 1 / ((1-s)/8 + s)
		}
		if math.Abs(float64(g)-want) > 1e-5*want {
			t.Errorf("llama3 factor %d = %v, want %v", i, g, want)
		}
	}
	if got[0] != 1 || got[7] != 8 || got[1] <= 1 || got[1] >= 8 {
		t.Errorf("llama3 factors %v do not cover the three regimes", got)
	}
	o = base
	o.Arch, o.RopeScaling, o.RopeOrigCtx = "phi3", "longrope", 128
	_, f = build(t, o)
	short, long := floats(t, f, "rope_factors_short.weight"), floats(t, f, "rope_factors_long.weight")
	if len(short) != 8 || len(long) != 8 || long[7] != 4 || short[0] != 1 {
		t.Errorf("longrope factors %v %v", short, long)
	}
	want := float32(math.Sqrt(1 + math.Log(1024.0/128)/math.Log(128)))
	if get(f, "phi3.rope.scaling.attn_factor") != want || get(f, "phi3.rope.scaling.original_context_length") != uint64(128) {
		t.Errorf("longrope keys: attn %v orig %v", get(f, "phi3.rope.scaling.attn_factor"), get(f, "phi3.rope.scaling.original_context_length"))
	}
}
