package gguf

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// sharedDir finds the project's shared/ directory: <module root>/../shared,
// or a shared/ beside any further ancestor (git worktrees live one level deeper).
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "shared", "models")); err == nil && st.IsDir() {
			return filepath.Join(dir, "shared")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/models not found in any ancestor of the package directory")
		}
		dir = parent
	}
}

// The expected values were read from the files with an independent Python
// reader, not with this package.
func TestRealModels(t *testing.T) {
	models := filepath.Join(sharedDir(t), "models")
	tests := []struct {
		file       string
		arch       string
		tensors    int
		kvs        int
		blocks     uint64
		fileType   uint64
		embdType   quant.Type
		firstToken string
		tokModel   string
		merges     int
	}{
		{"ruvllm-test-llama-19m-f16.gguf", "llama", 75, 24, 8, 1, quant.F16, "<unk>", "llama", 0},
		{"ruvllm-test-llama-19m-q8_0.gguf", "llama", 75, 24, 8, 7, quant.Q8_0, "<unk>", "llama", 0},
		{"ruvllm-test-llama-19m-q4_0.gguf", "llama", 75, 24, 8, 2, quant.Q4_0, "<unk>", "llama", 0},
		{"ruvllm-test-qwen2-13m-f16.gguf", "qwen2", 74, 23, 6, 1, quant.F16, "<|endoftext|>", "gpt2", 7933},
		{"ruvllm-test-qwen2-13m-q8_0.gguf", "qwen2", 74, 23, 6, 7, quant.Q8_0, "<|endoftext|>", "gpt2", 7933},
		{"ruvllm-test-qwen2-13m-q4_0.gguf", "qwen2", 74, 23, 6, 2, quant.Q4_0, "<|endoftext|>", "gpt2", 7933},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(models, tc.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("shared models not found at %s", path)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Version != 3 || len(f.Tensors) != tc.tensors || len(f.KV) != tc.kvs {
				t.Fatalf("version %d, %d tensors, %d kvs; want 3, %d, %d", f.Version, len(f.Tensors), len(f.KV), tc.tensors, tc.kvs)
			}
			if got := f.Architecture(); got != tc.arch {
				t.Errorf("arch %q, want %q", got, tc.arch)
			}
			checkUint := func(suffix string, want uint64) {
				t.Helper()
				if got, ok := f.ArchUint(suffix); !ok || got != want {
					t.Errorf("%s = %d,%v want %d", suffix, got, ok, want)
				}
			}
			checkUint("block_count", tc.blocks)
			checkUint("embedding_length", 384)
			checkUint("context_length", 2048)
			checkUint("attention.head_count", 6)
			checkUint("attention.head_count_kv", 2)
			if eps, ok := f.ArchFloat("attention.layer_norm_rms_epsilon"); !ok || math.Abs(eps-1e-5) > 1e-9 {
				t.Errorf("rms eps %v,%v", eps, ok)
			}
			if ft, ok := f.Uint("general.file_type"); !ok || ft != tc.fileType {
				t.Errorf("file_type %d,%v want %d", ft, ok, tc.fileType)
			}
			if m, _ := f.String("tokenizer.ggml.model"); m != tc.tokModel {
				t.Errorf("tokenizer model %q want %q", m, tc.tokModel)
			}
			toks, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(toks) != 8192 || toks[0] != tc.firstToken {
				t.Fatalf("tokens: ok=%v len=%d first=%q", ok, len(toks), toks[0])
			}
			types, ok := f.Int32s("tokenizer.ggml.token_type")
			if !ok || len(types) != 8192 || types[0] == 0 {
				t.Errorf("token_type: ok=%v len=%d", ok, len(types))
			}
			merges, _ := f.Strings("tokenizer.ggml.merges")
			if len(merges) != tc.merges {
				t.Errorf("%d merges, want %d", len(merges), tc.merges)
			}
			embd, ok := f.Tensor("token_embd.weight")
			if !ok || embd.Type != tc.embdType || len(embd.Shape) != 2 || embd.Shape[0] != 384 || embd.Shape[1] != 8192 || embd.Offset != 0 {
				t.Fatalf("token_embd: %+v", embd)
			}
			norm, ok := f.Tensor("blk.0.attn_norm.weight")
			if !ok || norm.Type != quant.F32 || norm.Elements() != 384 || norm.Size != 384*4 {
				t.Fatalf("attn_norm: %+v", norm)
			}
			data, err := f.TensorData("blk.0.attn_norm.weight")
			if err != nil || len(data) != 384*4 {
				t.Fatalf("attn_norm data: %d bytes, %v", len(data), err)
			}
			for _, ti := range f.Tensors {
				end := f.DataOffset + int64(ti.Offset) + ti.Size
				if end > f.Size || f.DataOffset%int64(f.Alignment) != 0 {
					t.Fatalf("tensor %s ends at %d past %d", ti.Name, end, f.Size)
				}
			}
			if tc.file == "ruvllm-test-llama-19m-q4_0.gguf" {
				if f.DataOffset != 188480 {
					t.Errorf("data offset %d, want 188480", f.DataOffset)
				}
				if got := math.Float32frombits(binary.LittleEndian.Uint32(data)); got != 0.0516357421875 {
					t.Errorf("attn_norm[0] = %v", got)
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.TensorData("blk.0.attn_norm.weight"); err != ErrClosed {
				t.Errorf("TensorData after Close: %v", err)
			}
			// Metadata strings live outside the mapping and survive Close.
			if toks[0] != tc.firstToken {
				t.Errorf("token 0 after Close = %q", toks[0])
			}
		})
	}
}

func BenchmarkParseRealModel(b *testing.B) {
	path := filepath.Join(sharedDir(b), "models", "ruvllm-test-qwen2-13m-q4_0.gguf")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("shared models not found at %s", path)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
