package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestLoadAdapterFileSaysSo: `ruvllm run -m ADAPTER.gguf` (and bench,
// perplexity, the daemon) said "invalid tokenizer vocabulary: missing
// tokenizer.ggml.model"; the error now names the file a LoRA adapter.
func TestLoadAdapterFileSaysSo(t *testing.T) {
	_, adapterPath, _ := adapterFixture(t, 1)
	_, err := Load(context.Background(), adapterPath, Options{Threads: 1, ContextLength: 64})
	if err == nil || !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "LoRA adapter") {
		t.Errorf("Load(adapter) = %v, want an invalid model error naming a LoRA adapter", err)
	}
}
