package llm

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/sample"
)

// TestIDsWithoutTokenNeverSampled: a file whose output matrix has more
// rows than its tokenizer has tokens (llama.cpp refuses it; this loads
// it) drew ids past the vocabulary, replies of empty text; such ids are
// now never sampled.
func TestIDsWithoutTokenNeverSampled(t *testing.T) {
	f, _ := tinyModelBytes(t, "llama")
	kv, _ := f.Get("tokenizer.ggml.tokens")
	tokens, ok := kv.Strings()
	if !ok {
		t.Fatal("no tokens")
	}
	n := len(tokens) - 32
	override := map[string]any{"tokenizer.ggml.tokens": tokens[:n]}
	for _, key := range []string{"tokenizer.ggml.scores", "tokenizer.ggml.token_type"} {
		v, ok := f.Get(key)
		if !ok {
			continue
		}
		if fs, ok := v.Float32s(); ok {
			override[key] = fs[:n]
		} else if is, ok := v.Int32s(); ok {
			override[key] = is[:n]
		} else {
			t.Fatalf("%s is %v", key, v)
		}
	}
	path := filepath.Join(t.TempDir(), "short-vocab.gguf")
	rewrite(t, f, path, override)
	m, err := Load(context.Background(), path, Options{Threads: 1, ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.tok.VocabSize() != n || m.net.Config().Vocab <= n {
		t.Fatalf("tokenizer %d tokens, output %d rows: the fixture is not what the test needs", m.tok.VocabSize(), m.net.Config().Vocab)
	}
	for seed := range 8 {
		ids, _, _ := generate(t, m, Request{Prompt: fmt.Sprint("seed ", seed), MaxTokens: 60, IgnoreEOS: true,
			Sampling: sample.Params{Temperature: 8, Seed: uint64(seed + 1)}})
		for _, id := range ids {
			if int(id) >= n {
				t.Fatalf("seed %d: sampled id %d, past the tokenizer's %d tokens", seed, id, n)
			}
		}
	}
}
