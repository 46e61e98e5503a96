package llm

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// tinyModelBytes writes a tiny synthetic model of arch and returns the
// parsed file and its bytes.
func tinyModelBytes(t testing.TB, arch string) (*gguf.File, []byte) {
	t.Helper()
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = arch, 1, 32, 2, 1, 64, 64
	path := filepath.Join(t.TempDir(), arch+".gguf")
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

// rewrite writes f to path with the metadata in override replacing (or
// added to) the file's own.
func rewrite(t testing.TB, f *gguf.File, path string, override map[string]any) {
	t.Helper()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if v, ok := override[kv.Key]; ok {
			if err := w.AddKV(kv.Key, v); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range override {
		if _, ok := f.Get(k); !ok {
			if err := w.AddKV(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// loadAndRun loads the model at path and, when that succeeds, runs the
// warm-up and a two-token generation: a malformed file must fail with an
// error at load, never panic or hang in the first forward pass.
func loadAndRun(t testing.TB, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := Load(ctx, path, Options{Threads: 1, Sequences: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Warmup(ctx); err != nil {
		return err
	}
	_, err = m.Generate(ctx, Request{Prompt: "hi", MaxTokens: 2, IgnoreEOS: true}, func(Token) error { return nil })
	return err
}

// TestAbsurdMetadataRefused loads files whose hyperparameters are zero,
// huge or inconsistent: each is refused at load with the key named.
func TestAbsurdMetadataRefused(t *testing.T) {
	f, _ := tinyModelBytes(t, "llama")
	cases := []struct {
		key  string
		v    any
		want string
	}{
		{"llama.context_length", uint32(0), "llama.context_length = 0"},
		{"llama.context_length", uint64(1 << 40), "llama.context_length"},
		{"llama.block_count", uint32(0), "llama.block_count = 0"},
		{"llama.block_count", uint32(100000), "llama.block_count = 100000"},
		{"llama.attention.head_count", uint32(0), "head_count"},
		{"llama.attention.head_count_kv", uint32(3), "head_count_kv = 3"},
		{"llama.attention.key_length", uint32(100000), "llama.attention.key_length = 100000"},
		{"llama.attention.key_length", uint32(0), "llama.attention.key_length = 0"},
		{"llama.rope.dimension_count", uint32(1000), "llama.rope.dimension_count = 1000"},
		{"llama.rope.dimension_count", uint32(3), "llama.rope.dimension_count = 3"},
		{"llama.embedding_length", uint32(0), "llama.embedding_length = 0"},
		{"llama.feed_forward_length", uint32(1 << 30), "llama.feed_forward_length"},
		{"llama.attention.layer_norm_rms_epsilon", float32(math.NaN()), "layer_norm_rms_epsilon"},
		{"llama.attention.layer_norm_rms_epsilon", float32(-1), "layer_norm_rms_epsilon"},
		{"llama.rope.freq_base", float32(0), "llama.rope.freq_base = 0"},
		{"llama.rope.freq_base", float32(math.Inf(1)), "llama.rope.freq_base"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			rewrite(t, f, path, map[string]any{c.key: c.v})
			err := loadAndRun(t, path)
			if err == nil {
				t.Fatalf("%s = %v: loaded and ran", c.key, c.v)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s = %v: error %q does not name %q", c.key, c.v, err, c.want)
			}
		})
	}
}

// FuzzLoadMetadata loads and runs a tiny model whose hyperparameters the
// fuzzer chooses: every combination must either load and run or be
// refused with an error.
func FuzzLoadMetadata(f *testing.F) {
	f.Add(uint8(0), uint64(64), uint64(2), uint64(1), uint64(1), uint64(16), uint64(16), float32(1e-5), float32(10000), uint64(0), uint64(32))
	f.Add(uint8(1), uint64(0), uint64(2), uint64(1), uint64(1), uint64(16), uint64(16), float32(1e-5), float32(10000), uint64(0), uint64(32))
	f.Add(uint8(3), uint64(64), uint64(4), uint64(2), uint64(1), uint64(8), uint64(8), float32(1e-6), float32(1e6), uint64(16), uint64(32))
	f.Add(uint8(2), uint64(1<<33), uint64(1<<31), uint64(0), uint64(5), uint64(1<<20), uint64(3), float32(0), float32(-1), uint64(1<<40), uint64(0))
	arches := []string{"llama", "qwen2", "phi3", "gemma2"}
	bases := map[string]*gguf.File{}
	f.Fuzz(func(t *testing.T, arch uint8, ctxLen, heads, kvHeads, layers, keyLen, ropeDims uint64, eps, freqBase float32, window, dim uint64) {
		a := arches[int(arch)%len(arches)]
		base := bases[a]
		if base == nil {
			base, _ = tinyModelBytes(t, a)
			bases[a] = base
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		rewrite(t, base, path, map[string]any{
			a + ".context_length":                   ctxLen,
			a + ".attention.head_count":             heads,
			a + ".attention.head_count_kv":          kvHeads,
			a + ".block_count":                      layers,
			a + ".attention.key_length":             keyLen,
			a + ".rope.dimension_count":             ropeDims,
			a + ".attention.layer_norm_rms_epsilon": eps,
			a + ".rope.freq_base":                   freqBase,
			a + ".attention.sliding_window":         window,
			a + ".embedding_length":                 dim,
		})
		if err := loadAndRun(t, path); err != nil && errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("load or first forward hung: %v", err)
		}
	})
}

// FuzzLoadBytes mutates the bytes of a tiny valid model: loading it and
// running the first forward pass must never panic.
func FuzzLoadBytes(f *testing.F) {
	_, b := tinyModelBytes(f, "llama")
	f.Add(b)
	_, b = tinyModelBytes(f, "qwen2")
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8<<20 {
			return
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		loadAndRun(t, path)
	})
}
