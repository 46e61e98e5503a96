package model

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestMetadataOfWrongTypeRefused checks that a hyperparameter the file
// holds with a type that is not a number is refused with its key named.
// Such a key was taken for a missing one: an optional one silently got its
// default (a rope.freq_base of "500000" ran as 10000, a context_length of
// -1 as 2048), a required one was reported missing, and a head_count_kv
// written as a string became head_count, blamed on a tensor's shape.
// Integers written as floats and the reverse still load (writers
// disagree on the type of a rope base).
func TestMetadataOfWrongTypeRefused(t *testing.T) {
	f := writeModel(t, testmodel.DefaultOptions())
	for _, tc := range []struct {
		key   string
		value any
		ok    bool
	}{
		{"llama.attention.head_count_kv", "2", false},
		{"llama.block_count", "2", false},
		{"llama.context_length", int32(-1), false},
		{"llama.context_length", float32(512), false},
		{"llama.rope.freq_base", "500000", false},
		{"llama.attention.layer_norm_rms_epsilon", "0.5", false},
		{"llama.rope.scaling.original_context_length", "128", false},
		{"llama.rope.dimension_count", []uint32{16}, false},
		{"llama.rope.freq_base", uint32(10000), true},
		{"llama.context_length", int32(512), true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			g := withKV(t, f, tc.key, tc.value)
			b := cpu.New(cpu.Options{Threads: 1})
			defer b.Close()
			_, err := Load(g, b)
			if tc.ok {
				if err != nil {
					t.Fatalf("%s = %v: %v", tc.key, tc.value, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "is not a") {
				t.Fatalf("%s = %#v: err = %v, want one naming the key's type", tc.key, tc.value, err)
			}
		})
	}
}

// withKV writes a copy of f with key set to v (replaced, or added) and
// opens it.
func withKV(t *testing.T, f *gguf.File, key string, v any) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if kv.Key != key {
			if err := w.AddKV(kv.Key, kv.Value); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.AddKV(key, v); err != nil {
		t.Fatal(err)
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
	path := filepath.Join(t.TempDir(), "changed.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}
