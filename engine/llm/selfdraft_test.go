package llm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
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

// TestSelfDraftRefusesNoCheaperType: a self draft must be a cheaper
// quantization than the model, as the error for the model's own type
// says: self:F32, F16 or BF16 of a Q8_0 model (four or two times its
// weights) were made and kept, slower than the model they drafted for.
func TestSelfDraftRefusesNoCheaperType(t *testing.T) {
	models := testpath.Shared(t, "models")
	for _, tc := range []struct {
		model, typ string
		want       string
	}{
		{"ruvllm-test-llama-19m-q8_0.gguf", "Q8_0", "the model is Q8_0 already"},
		{"ruvllm-test-llama-19m-q8_0.gguf", "F32", "not F32"},
		{"ruvllm-test-llama-19m-q8_0.gguf", "F16", "not F16"},
		{"ruvllm-test-llama-19m-q8_0.gguf", "bf16", "not BF16"},
		{"ruvllm-test-llama-19m-f16.gguf", "F32", "the model is F16 (16 bits per weight): a draft must be a cheaper quantization, not F32 (32)"},
		{"ruvllm-test-llama-19m-f16.gguf", "BF16", "not BF16"},
		{"ruvllm-test-llama-19m-q4_0.gguf", "Q8_0", "not Q8_0"},
	} {
		dir := t.TempDir()
		_, err := selfDraft(context.Background(), filepath.Join(models, tc.model), tc.typ, dir, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s as %s: %v, want an error containing %q", tc.model, tc.typ, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s as %s: left %d files in the drafts dir", tc.model, tc.typ, len(entries))
		}
	}
}

// TestSelfDraftRemakesBrokenDraft: a kept draft that was truncated or
// corrupted after it was made is made again, not returned: returned, it
// failed every load and the model served without its draft for good.
func TestSelfDraftRemakesBrokenDraft(t *testing.T) {
	target := filepath.Join(testpath.Shared(t, "models"), "ruvllm-test-llama-19m-q8_0.gguf")
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, path string)
	}{
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
		}},
		{"emptied", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"overwritten", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("not a model"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := slog.New(slog.DiscardHandler)
			out, err := selfDraft(context.Background(), target, "Q4_0", dir, log)
			if err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, out)
			again, err := selfDraft(context.Background(), target, "Q4_0", dir, log)
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(again)
			if err != nil {
				t.Fatalf("the draft returned after it broke does not open: %v", err)
			}
			f.Close()
		})
	}
}
