package llm

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestSnapshotNotRestoredIntoOtherWeights checks that a prefix snapshot
// is restored into the same file loaded again, and refused for a file
// that replaced it with the same name, size and layout but other weights
// (a re-quantization, a fine-tune): its keys and values were restored,
// and the new model answered prompts as the old one had.
func TestSnapshotNotRestoredIntoOtherWeights(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  bool
		restore bool
	}{
		{"same file", false, true},
		{"other weights", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := synthetic(t, "llama", quant.F32)
			snap := filepath.Join(t.TempDir(), "prefix.snap")
			prompt := make([]int32, 40)
			for i := range prompt {
				prompt[i] = int32(1 + i%50)
			}
			opts := Options{Threads: 1, ContextLength: 128, Sequences: 1}
			m, err := Load(context.Background(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(context.Background(), Request{Tokens: prompt, MaxTokens: 2, IgnoreEOS: true}, func(Token) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if n, err := m.SaveCache(snap, 1000); err != nil || n == 0 {
				t.Fatalf("saved %d blocks: %v", n, err)
			}
			m.Close()
			if tc.change {
				replaceFirstWeight(t, path, "blk.0.attn_k.weight", 0.5)
			}
			m2, err := Load(context.Background(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			n, err := m2.LoadCache(snap)
			if got := n > 0; got != tc.restore {
				t.Fatalf("restored %d blocks (err %v), want restored: %v", n, err, tc.restore)
			}
		})
	}
}

// replaceFirstWeight replaces the model file at path by a copy whose F32
// tensor name has v as its first element: same name, size and layout.
func replaceFirstWeight(t *testing.T, path, name string, v float32) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	info, ok := f.Tensor(name)
	start := f.DataOffset + int64(info.Offset)
	f.Close()
	if !ok || info.Type != quant.F32 {
		t.Fatalf("%s: no F32 tensor %s", path, name)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[start:], math.Float32bits(v))
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
