package lora

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/safetensors"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

func writeParse(t testing.TB, w *gguf.Writer) (*gguf.File, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f, buf.Bytes()
}

func tinyBase(t testing.TB, arch string) *gguf.File {
	t.Helper()
	o := testmodel.DefaultOptions()
	o.Arch = arch
	w, err := testmodel.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := writeParse(t, w)
	return f
}

// adapterWriter builds a GGUF LoRA by hand: tensors maps names to GGML
// shapes, filled with zeros of F32.
func adapterWriter(t testing.TB, kv map[string]any, tensors map[string][]uint64) *gguf.Writer {
	t.Helper()
	w := gguf.NewWriter()
	for _, k := range []string{"general.architecture", "general.type", "adapter.type", "adapter.lora.alpha"} {
		if v, ok := kv[k]; ok {
			if err := w.AddKV(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range sortedKeys(tensors) {
		shape := tensors[name]
		n := 4
		for _, d := range shape {
			n *= int(d)
		}
		if err := w.AddTensor(name, quant.F32, shape, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func sortedKeys(m map[string][]uint64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

var goodKV = map[string]any{"general.architecture": "llama", "general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": float32(8)}

func TestLoadGGUF(t *testing.T) {
	base := tinyBase(t, "llama") // dim 64, 4 heads, 2 kv heads (kvd 32), ff 128
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range goodKV {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		kv      map[string]any
		tensors map[string][]uint64
		err     error
		msg     string
	}{
		{"ok", goodKV, map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}, "blk.0.attn_q.weight.lora_b": {4, 64},
			"blk.1.attn_k.weight.lora_a": {64, 4}, "blk.1.attn_k.weight.lora_b": {4, 32}}, nil, ""},
		{"not adapter", with("general.type", "model"), map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}}, ErrNotAdapter, "general.type"},
		{"not lora", with("adapter.type", "control_vector"), map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}}, ErrNotAdapter, "adapter.type"},
		{"wrong arch", with("general.architecture", "qwen2"), map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}, "blk.0.attn_q.weight.lora_b": {4, 64}}, ErrMismatch, `"qwen2"`},
		{"half pair", goodKV, map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}}, ErrMalformed, "blk.0.attn_q"},
		{"rank disagrees", goodKV, map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}, "blk.0.attn_q.weight.lora_b": {8, 64}}, ErrMalformed, "blk.0.attn_q"},
		{"wrong in", goodKV, map[string][]uint64{"blk.1.attn_v.weight.lora_a": {32, 4}, "blk.1.attn_v.weight.lora_b": {4, 32}}, ErrMismatch, "blk.1.attn_v"},
		{"wrong out", goodKV, map[string][]uint64{"blk.1.ffn_up.weight.lora_a": {64, 4}, "blk.1.ffn_up.weight.lora_b": {4, 64}}, ErrMismatch, "blk.1.ffn_up"},
		{"missing layer", goodKV, map[string][]uint64{"blk.9.attn_q.weight.lora_a": {64, 4}, "blk.9.attn_q.weight.lora_b": {4, 64}}, ErrMismatch, "blk.9.attn_q"},
		{"embedding", goodKV, map[string][]uint64{"token_embd.weight.lora_a": {64, 4}, "token_embd.weight.lora_b": {4, 64}}, ErrUnsupportedTarget, "token_embd"},
		{"stray tensor", goodKV, map[string][]uint64{"blk.0.attn_q.weight": {64, 64}}, ErrMalformed, "blk.0.attn_q.weight"},
		{"no tensors", goodKV, map[string][]uint64{}, ErrNotAdapter, "no lora tensors"},
		// An alpha that is no number was taken for none: scale 1, not 8/4.
		{"alpha a string", with("adapter.lora.alpha", "8"), map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}, "blk.0.attn_q.weight.lora_b": {4, 64}}, ErrMalformed, "adapter.lora.alpha"},
		{"alpha an array", with("adapter.lora.alpha", []float32{8}), map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}, "blk.0.attn_q.weight.lora_b": {4, 64}}, ErrMalformed, "adapter.lora.alpha"},
		{"alpha an integer", with("adapter.lora.alpha", uint32(8)), map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}, "blk.0.attn_q.weight.lora_b": {4, 64},
			"blk.1.attn_k.weight.lora_a": {64, 4}, "blk.1.attn_k.weight.lora_b": {4, 32}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := writeParse(t, adapterWriter(t, tc.kv, tc.tensors))
			a, err := LoadGGUF(f, base, nil)
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if a.Rank != 4 || len(a.Targets) != 2 || a.Targets["blk.1.attn_k"].Out != 32 || a.Targets["blk.0.attn_q"].Scale != 2 {
					t.Fatalf("adapter: rank %d, %d targets, %+v", a.Rank, len(a.Targets), a.Targets["blk.0.attn_q"])
				}
				if len(a.Checksum) != 64 {
					t.Fatalf("checksum %q", a.Checksum)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v naming %q", err, tc.err, tc.msg)
			}
		})
	}
}

func TestFusedTargetsRefused(t *testing.T) {
	base := tinyBase(t, "phi3")
	for _, kind := range []string{"attn_q", "ffn_up"} {
		p := &Pair{In: 64, Out: 64, HostA: Matrix{Rows: 4, Cols: 64}, HostB: Matrix{Rows: 64, Cols: 4}}
		a := &Adapter{Arch: "phi3", Targets: map[string]*Pair{Key(0, kind): p}}
		if err := Validate(a, base); !errors.Is(err, ErrUnsupportedTarget) {
			t.Errorf("%s on phi3: err = %v, want ErrUnsupportedTarget", kind, err)
		}
	}
}

func TestPermuteRows(t *testing.T) {
	// One head of 4 rows: HF [r0 r1 r2 r3] (halves r0r1 | r2r3) becomes
	// adjacent pairs [r0 r2 r1 r3]; two heads permute independently.
	v := []float32{0, 1, 2, 3, 10, 11, 12, 13}
	if err := permuteRows(v, 8, 1, 2); err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 2, 1, 3, 10, 12, 11, 13}
	for i := range v {
		if v[i] != want[i] {
			t.Fatalf("got %v, want %v", v, want)
		}
	}
	if err := permuteRows(v, 6, 1, 4); err == nil {
		t.Fatal("uneven heads accepted")
	}
}

// unpermute is permuteRows' inverse, to write an HF-layout file.
func unpermute(v []float32, rows, cols, heads int) []float32 {
	d := rows / heads
	out := make([]float32, len(v))
	for h := 0; h < heads; h++ {
		for j := 0; j < 2; j++ {
			for i := 0; i < d/2; i++ {
				hf, gg := h*d+j*d/2+i, h*d+2*i+j
				copy(out[hf*cols:(hf+1)*cols], v[gg*cols:(gg+1)*cols])
			}
		}
	}
	return out
}

var hfNames = map[string]string{
	"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
	"ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}

// writePEFT exports a (GGUF-layout) adapter as a PEFT directory in HF
// layout, un-permuting q/k for llama.
func writePEFT(t *testing.T, a *Adapter, arch string, heads, kvHeads int, cfg string) string {
	t.Helper()
	var names []string
	var shapes [][]uint64
	var values [][]float32
	for _, key := range a.Names() {
		p := a.Targets[key]
		layer, kind := splitKey(key)
		prefix := "base_model.model.model.layers." + itoa(layer) + "." + hfNames[kind]
		av, _ := p.HostA.Floats()
		bv, _ := p.HostB.Floats()
		if arch == "llama" && kind == "attn_q" {
			bv = unpermute(bv, p.Out, p.Rank, heads)
		}
		if arch == "llama" && kind == "attn_k" {
			bv = unpermute(bv, p.Out, p.Rank, kvHeads)
		}
		names = append(names, prefix+".lora_A.weight", prefix+".lora_B.weight")
		shapes = append(shapes, []uint64{uint64(p.Rank), uint64(p.In)}, []uint64{uint64(p.Out), uint64(p.Rank)})
		values = append(values, av, bv)
	}
	b, err := safetensors.Encode(names, shapes, values, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PEFTWeights), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PEFTConfig), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestPEFTMatchesGGUF exports a GGUF adapter as PEFT (HF layout) and
// checks LoadPEFT gives back exactly the GGUF adapter (same checksum), for
// llama (permuted q/k) and qwen2 (not permuted).
func TestPEFTMatchesGGUF(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2"} {
		t.Run(arch, func(t *testing.T) {
			base := tinyBase(t, arch)
			w, err := Random(base, RandomOptions{Rank: 4, Alpha: 8, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			f, _ := writeParse(t, w)
			want, err := LoadGGUF(f, base, nil)
			if err != nil {
				t.Fatal(err)
			}
			heads, kv := archInt(base, "attention.head_count", 0), archInt(base, "attention.head_count_kv", 0)
			if heads != 4 || kv != 2 {
				t.Fatalf("test model has %d heads, %d kv heads; want 4 and 2", heads, kv)
			}
			dir := writePEFT(t, want, arch, heads, kv, `{"peft_type":"LORA","r":4,"lora_alpha":8,"target_modules":["q_proj","k_proj"]}`)
			got, err := Load(dir, base, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Checksum != want.Checksum || len(got.Targets) != len(want.Targets) || got.Format != "peft" {
				t.Fatalf("PEFT adapter differs from the GGUF one: %d vs %d targets", len(got.Targets), len(want.Targets))
			}
			if got.Name != filepath.Base(dir) && got.Name != strings.ToLower(filepath.Base(dir)) {
				t.Fatalf("name %q", got.Name)
			}
			// ExportPEFT writes the same HF layout.
			dir2 := t.TempDir()
			if err := ExportPEFT(want, base, dir2); err != nil {
				t.Fatal(err)
			}
			exported, err := LoadPEFT(dir2, base, nil)
			if err != nil {
				t.Fatal(err)
			}
			if exported.Checksum != want.Checksum {
				t.Fatal("ExportPEFT + LoadPEFT changed the adapter")
			}
		})
	}
}

func TestPEFTErrors(t *testing.T) {
	base := tinyBase(t, "llama")
	for _, tc := range []struct {
		name, cfg string
		tensor    string
		err       error
	}{
		{"not lora", `{"peft_type":"IA3","r":4,"lora_alpha":8}`, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", ErrNotAdapter},
		{"bad r", `{"peft_type":"LORA","r":0,"lora_alpha":8}`, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", ErrMalformed},
		{"bad json", `{"r":`, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", ErrMalformed},
		{"lm_head", `{"r":4,"lora_alpha":8}`, "base_model.model.lm_head.lora_A.weight", ErrUnsupportedTarget},
		{"fused", `{"r":4,"lora_alpha":8}`, "base_model.model.model.layers.0.self_attn.qkv_proj.lora_A.weight", ErrUnsupportedTarget},
		{"half pair", `{"r":4,"lora_alpha":8}`, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := safetensors.Encode([]string{tc.tensor}, [][]uint64{{4, 64}}, [][]float32{make([]float32, 256)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, PEFTWeights), b, 0o644)
			os.WriteFile(filepath.Join(dir, PEFTConfig), []byte(tc.cfg), 0o644)
			if _, err := LoadPEFT(dir, base, nil); !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
		})
	}
	if _, err := LoadPEFT(t.TempDir(), base, nil); !errors.Is(err, ErrNotAdapter) {
		t.Fatalf("empty dir: err = %v", err)
	}
	// A whole pair of rank 4 under configs that do not describe it: they
	// were accepted, scaled by another rank than PEFT's r (an r of 2^40
	// with rsLoRA gave NaN outputs), or with DoRA and the like ignored.
	pair, err := safetensors.Encode([]string{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"},
		[][]uint64{{4, 64}, {64, 4}}, [][]float32{make([]float32, 256), make([]float32, 256)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{
		`{"r":8,"lora_alpha":8}`,
		`{"r":1099511627776,"lora_alpha":8,"use_rslora":true}`,
		`{"r":4,"lora_alpha":8,"use_dora":true}`,
		`{"r":4,"lora_alpha":8,"rank_pattern":{"q_proj":2}}`,
		`{"r":4,"lora_alpha":8,"layer_replication":[[0,1]]}`,
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, PEFTWeights), pair, 0o644)
		os.WriteFile(filepath.Join(dir, PEFTConfig), []byte(cfg), 0o644)
		if _, err := LoadPEFT(dir, base, nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want malformed", cfg, err)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, PEFTWeights), pair, 0o644)
	os.WriteFile(filepath.Join(dir, PEFTConfig), []byte(`{"r":4,"lora_alpha":8,"use_rslora":true,"use_dora":false,"rank_pattern":{},"layer_replication":null}`), 0o644)
	if _, err := LoadPEFT(dir, base, nil); err != nil {
		t.Errorf("a config that describes the pair: %v", err)
	}
}

func TestIdentity(t *testing.T) {
	a, b := &Adapter{Checksum: "aa"}, &Adapter{Checksum: "bb"}
	ids := map[string]bool{}
	for _, set := range [][]Applied{nil, {{a, 1}}, {{a, 0.5}}, {{b, 1}}, {{a, 1}, {b, 1}}, {{b, 1}, {a, 1}}} {
		id := Identity(set)
		if ids[id] {
			t.Fatalf("identity %q repeated", id)
		}
		ids[id] = true
	}
}

func FuzzLoadGGUF(f *testing.F) {
	base := tinyBase(f, "llama")
	w, err := Random(base, RandomOptions{Rank: 2, Alpha: 4, Kinds: []string{"attn_q", "ffn_down"}})
	if err != nil {
		f.Fatal(err)
	}
	_, good := writeParse(f, w)
	f.Add(good)
	_, bad := writeParse(f, adapterWriter(f, goodKV, map[string][]uint64{"blk.0.attn_q.weight.lora_a": {64, 4}, "blk.0.attn_q.weight.lora_b": {8, 64}}))
	f.Add(bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := gguf.Parse(b)
		if err != nil {
			return
		}
		a, err := LoadGGUF(file, base, nil)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("error without a reason")
			}
			return
		}
		if err := Validate(a, base); err != nil {
			t.Fatalf("loaded adapter fails validation: %v", err)
		}
	})
}

// TestPEFTEmptyMatrixRefused checks that a PEFT tensor with a dimension of
// 0 is refused by name before anything is sized by its other dimension:
// such a tensor holds no bytes, so the file bounded nothing, and a llama
// q_proj lora_B of [4·2^40, 0] held the q/k row permutation in a loop of
// trillions of steps (an adapter install that never returned).
func TestPEFTEmptyMatrixRefused(t *testing.T) {
	base := tinyBase(t, "llama")
	const (
		a = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
		b = "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"
	)
	for _, tc := range []struct {
		name           string
		shapeA, shapeB []uint64
		bad            string // the tensor the error names
	}{
		{"lora_B without columns", []uint64{4, 64}, []uint64{8, 0}, b},
		{"lora_B of 2^42 rows without columns", []uint64{4, 64}, []uint64{4 << 40, 0}, b},
		{"lora_A without rows", []uint64{0, 64}, []uint64{64, 4}, a},
		{"lora_A of 2^63 rows without columns", []uint64{1 << 63, 0}, []uint64{64, 4}, a},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := func(s []uint64) int { return int(s[0] * s[1]) }
			st, err := safetensors.Encode([]string{a, b}, [][]uint64{tc.shapeA, tc.shapeB},
				[][]float32{make([]float32, size(tc.shapeA)), make([]float32, size(tc.shapeB))}, nil)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, PEFTWeights), st, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, PEFTConfig), []byte(`{"r":4,"lora_alpha":8}`), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = LoadPEFT(dir, base, nil)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("err = %v, want malformed naming %s", err, tc.bad)
			}
		})
	}
}

// TestPEFTConfigBounded: an adapter_config.json past maxPEFTConfigBytes
// is refused before it is read; one of 400 MB (a long string in it) was
// read and decoded at every load, taking twice its size in memory.
func TestPEFTConfigBounded(t *testing.T) {
	base := tinyBase(t, "llama")
	pair, err := safetensors.Encode([]string{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"},
		[][]uint64{{4, 64}, {64, 4}}, [][]float32{make([]float32, 256), make([]float32, 256)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := `{"r":4,"lora_alpha":8}`
	const bound = 1 << 20 // maxPEFTConfigBytes
	for _, tc := range []struct {
		name string
		size int // bytes of the config, padded with spaces
		ok   bool
	}{
		{"at the bound", bound, true},
		{"past the bound", bound + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, PEFTWeights), pair, 0o644); err != nil {
				t.Fatal(err)
			}
			padded := cfg + strings.Repeat(" ", tc.size-len(cfg))
			if err := os.WriteFile(filepath.Join(dir, PEFTConfig), []byte(padded), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadPEFT(dir, base, nil)
			if tc.ok != (err == nil) || !tc.ok && (!errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), PEFTConfig)) {
				t.Fatalf("err = %v, want ok: %v (or malformed naming %s)", err, tc.ok, PEFTConfig)
			}
		})
	}
}
