package modelinfo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

func synthetic(t *testing.T) *gguf.File {
	t.Helper()
	w, err := testmodel.New(context.Background(), testmodel.Options{
		Arch: "qwen2", Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, FF: 128, ContextLength: 256, Type: quant.F16, Seed: 1,
	})
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
	return f
}

func TestDescribeSynthetic(t *testing.T) {
	f := synthetic(t)
	s := Describe(f, "x.gguf")
	const vocab = 299
	// embd 64*vocab; per layer: q 64*64, k,v 64*32 each, biases 64+32+32,
	// o 64*64, gate/up/down 3*64*128, two norms 2*64; final norm 64.
	perLayer := uint64(64*64 + 2*64*32 + 64 + 32 + 32 + 64*64 + 3*64*128 + 2*64)
	wantParams := uint64(64*vocab) + 2*perLayer + 64
	if s.Parameters != wantParams {
		t.Errorf("parameters %d, want %d", s.Parameters, wantParams)
	}
	if s.Architecture != "qwen2" || s.FileSize != f.Size || len(s.Tensors) != len(f.Tensors) {
		t.Errorf("summary header: %+v", s)
	}
	// 1-D norms and biases are F32, matrices F16.
	wantMix := map[string]int{"F16": 1 + 2*7, "F32": 2*5 + 1}
	if len(s.QuantMix) != 2 {
		t.Fatalf("quant mix %+v", s.QuantMix)
	}
	var total int64
	for _, u := range s.QuantMix {
		if u.Tensors != wantMix[u.Type] {
			t.Errorf("%s: %d tensors, want %d", u.Type, u.Tensors, wantMix[u.Type])
		}
		total += u.Bytes
	}
	if total > f.Size-f.DataOffset || total < f.Size-f.DataOffset-int64(32*len(f.Tensors)) {
		t.Errorf("quant mix bytes %d vs data section %d", total, f.Size-f.DataOffset)
	}
	hyper := map[string]any{}
	for _, e := range s.Hyper {
		hyper[e.Key] = e.Value
	}
	if hyper["qwen2.block_count"] != uint32(2) || hyper["qwen2.attention.head_count_kv"] != uint32(2) {
		t.Errorf("hyperparameters %v", hyper)
	}
	tk := s.Tokenizer
	if tk.Model != "gpt2" || tk.Pre != "default" || tk.VocabSize != vocab || tk.Special["eos"] != vocab-3 || tk.SpecialText["eos"] != "<|endoftext|>" {
		t.Errorf("tokenizer %+v", tk)
	}
	if !strings.Contains(s.ChatTemplate, "<|im_start|>") {
		t.Errorf("chat template %q", s.ChatTemplate)
	}
	for _, e := range s.Metadata {
		if e.Key == "tokenizer.ggml.tokens" {
			if e.Len != vocab || len(e.Value.([]any)) != MaxArray || e.Type != "array[string]" {
				t.Errorf("tokens entry %+v", e)
			}
		}
		if e.Key == "qwen2.block_count" || e.Key == "general.architecture" {
			t.Errorf("%s listed twice", e.Key)
		}
	}

	var text bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{
		"architecture:  qwen2", "quant mix:", "F16", "block_count", "vocab size", "eos id", `"<|endoftext|>"`,
		"chat template", "tokenizer.ggml.tokens", "(299 total)", "blk.1.attn_k.bias", "[64 299]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}

	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back["architecture"] != "qwen2" || back["parameters"] != float64(wantParams) || len(back["tensors"].([]any)) != len(f.Tensors) {
		t.Errorf("json: %s", js[:200])
	}
}

func TestDescribeRealModel(t *testing.T) {
	dir, _ := os.Getwd()
	var path string
	for ; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "shared", "models", "ruvllm-test-llama-19m-q8_0.gguf")
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
		if filepath.Dir(dir) == dir {
			t.Skip("shared models not found above the package directory")
		}
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := Describe(f, path)
	// The models README gives 18.9 M parameters.
	if got := HumanCount(s.Parameters); got != "18.9M" {
		t.Errorf("parameters %d (%s)", s.Parameters, got)
	}
	if s.Tokenizer.Model != "llama" || s.Tokenizer.VocabSize != 8192 || s.Tokenizer.SpecialText["bos"] != "<s>" || s.Tokenizer.AddBOS == nil || !*s.Tokenizer.AddBOS {
		t.Errorf("tokenizer %+v", s.Tokenizer)
	}
	if len(s.QuantMix) != 2 || s.QuantMix[0].Type != "Q8_0" {
		t.Errorf("quant mix %+v", s.QuantMix)
	}
}

func TestHuman(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{{999, "999"}, {18_900_000, "18.9M"}, {1_230_000_000, "1.23B"}, {4500, "4.5K"}} {
		if got := HumanCount(c.n); got != c.want {
			t.Errorf("HumanCount(%d) = %s", c.n, got)
		}
	}
	if got := HumanBytes(10831424); got != "10.3 MiB" {
		t.Errorf("HumanBytes = %s", got)
	}
	if got := HumanBytes(100); got != "100 B" {
		t.Errorf("HumanBytes = %s", got)
	}
}

// TestChatFormat checks that inspect says which chat template a file's
// chat requests use: its own, with hash, or why it cannot be used.
func TestChatFormat(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl string
		want       []string
	}{
		{"chatml", "", []string{"from the file: tokenizer.chat_template, 199 bytes, sha256 ", "(chatml format)"}},
		{"custom", "{{ messages[0].content }}", []string{"from the file", "25 bytes"}},
		{"unusable", "{% include 'other.jinja' %}", []string{"unusable:", "unsupported template feature: the 'include' tag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := testmodel.New(context.Background(), testmodel.Options{
				Arch: "qwen2", Layers: 1, Dim: 64, Heads: 4, KVHeads: 2, FF: 128, ContextLength: 64, ChatTemplate: tc.tmpl,
			})
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
			s := Describe(f, "x.gguf")
			var text bytes.Buffer
			if err := s.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(s.ChatFormat, w) || !strings.Contains(text.String(), "chat format: "+s.ChatFormat) {
					t.Fatalf("chat format %q (text shows it: %v), want it to contain %q", s.ChatFormat, strings.Contains(text.String(), s.ChatFormat), w)
				}
			}
		})
	}
}

// TestWriteTextEscapesControls: a file's name, metadata keys and chat
// template reach the terminal with their control characters escaped, so a
// downloaded model cannot clear the screen or retitle the terminal when
// inspected; a template's tabs stay tabs.
func TestWriteTextEscapesControls(t *testing.T) {
	w := gguf.NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "llama"},
		{"general.name", "evil\x1b[2J\x1b]0;pwned\x07name"},
		{"x.key\x1b[31m", "v"},
		{"tokenizer.chat_template", "{{ x }}\x1b[8m\thidden"},
	} {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Describe(f, "x.gguf").WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.ContainsAny(text, "\x1b\x07") {
		t.Errorf("escape characters reach the terminal:\n%q", text)
	}
	for _, want := range []string{`evil\x1b[2J\x1b]0;pwned\aname`, `x.key\x1b[31m`, "{{ x }}\\x1b[8m\thidden"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
