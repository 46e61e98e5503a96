package llm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestSelfDraftRemovesCutOffConversions: making a self draft removes the
// temporary files of conversions of that model and type that a kill -9
// cut off (they piled up in the cache dir, one per kill), and leaves those
// of other models and types alone (their conversions may be running).
func TestSelfDraftRemovesCutOffConversions(t *testing.T) {
	target := filepath.Join(testpath.Shared(t, "models"), "ruvllm-test-llama-19m-q8_0.gguf")
	dir := t.TempDir()
	leftovers := []struct {
		name    string
		removed bool
	}{
		{".ruvllm-test-llama-19m-q8_0.Q4_0.0123456789abcdef.gguf.tmp123", true}, // an older version of the model
		{".ruvllm-test-llama-19m-q8_0.Q4_0.fedcba9876543210.gguf.tmp4", true},
		{".ruvllm-test-llama-19m-q8_0.Q4_K.0123456789abcdef.gguf.tmp5", false}, // another type
		{".other-model.Q4_0.0123456789abcdef.gguf.tmp6", false},                // another model
	}
	for _, l := range leftovers {
		if err := os.WriteFile(filepath.Join(dir, l.name), []byte("part of a model"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := selfDraft(context.Background(), target, "Q4_0", dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("the draft: %v", err)
	}
	for _, l := range leftovers {
		_, err := os.Stat(filepath.Join(dir, l.name))
		if gone := os.IsNotExist(err); gone != l.removed {
			t.Errorf("%s: removed %v, want %v", l.name, gone, l.removed)
		}
	}
}
