package llm

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/spec"
)

// TestDraftVocabMismatchSameSize: a draft model whose vocabulary has as
// many tokens as the model's, but other ones, is refused with the first
// token that differs; the error said "(8192 tokens against 8192)".
func TestDraftVocabMismatchSameSize(t *testing.T) {
	f, _ := tinyModelBytes(t, "llama")
	dir := t.TempDir()
	model, draft := filepath.Join(dir, "model.gguf"), filepath.Join(dir, "draft.gguf")
	rewrite(t, f, model, nil)
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	other := slices.Clone(toks)
	other[100] = "zzz-not-a-token"
	rewrite(t, f, draft, map[string]any{"tokenizer.ggml.tokens": other})
	_, err := Load(context.Background(), model, Options{Threads: 1, ContextLength: 64, Draft: draft, Speculate: spec.KindDraft})
	if err == nil || !errors.Is(err, ErrDraftVocab) || !strings.Contains(err.Error(), "token 100") || !strings.Contains(err.Error(), "zzz-not-a-token") {
		t.Errorf("Load with a same-size other vocabulary: %v", err)
	}
}
