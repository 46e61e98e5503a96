package llm

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestPerplexityTinyChunks: --ctx 1 and 2 leave no token to score in a
// chunk; they are refused (they panicked in the logits of no rows), for
// Perplexity and SaveLogProbs alike, and 3 works.
func TestPerplexityTinyChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	o := testmodel.DefaultOptions()
	o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = 1, 32, 2, 1, 64, 64
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	m := loadTest(t, path)
	text := strings.Repeat("the cat sat on the mat ", 20)
	for _, n := range []int{1, 2} {
		if _, err := m.Perplexity(context.Background(), text, n, nil); err == nil || !strings.Contains(err.Error(), "too small") {
			t.Errorf("Perplexity ctx %d: %v, want too small", n, err)
		}
		var buf bytes.Buffer
		if _, err := m.SaveLogProbs(context.Background(), text, n, &buf, nil); err == nil || !strings.Contains(err.Error(), "too small") {
			t.Errorf("SaveLogProbs ctx %d: %v, want too small", n, err)
		}
	}
	res, err := m.Perplexity(context.Background(), text, 3, nil)
	if err != nil || res.Scored != res.Chunks {
		t.Errorf("ctx 3: %+v %v", res, err)
	}
}
