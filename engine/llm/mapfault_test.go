//go:build linux || darwin

package llm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/mapfault/mapfaulttest"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestTruncatedFileFaultsAsError: a loaded model's file truncated in place
// (`cp other.gguf model.gguf`) made the next read of its mapping a SIGBUS
// that ended the daemon. The pass now fails with an error wrapping
// mapfault.ErrFault, the model reports Faulted, every later pass fails
// at once, and its prefix cache is not saved.
func TestTruncatedFileFaultsAsError(t *testing.T) {
	mapfaulttest.RequireFaultAddresses(t)
	for _, typ := range []quant.Type{quant.F32, quant.Q4_0} {
		t.Run(typ.String(), func(t *testing.T) {
			path := synthetic(t, "llama", typ)
			m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: 256})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			generate(t, m, Request{Prompt: "hello", MaxTokens: 4, IgnoreEOS: true})
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
			gen := func() error {
				_, err := m.Generate(context.Background(), Request{Prompt: "a new prompt, not cached", MaxTokens: 4, IgnoreEOS: true},
					func(Token) error { return nil })
				return err
			}
			if err := gen(); !errors.Is(err, mapfault.ErrFault) {
				t.Fatalf("generate after truncation: err = %v, want ErrFault", err)
			}
			if !m.Faulted() {
				t.Fatal("Faulted() = false after a fault")
			}
			if err := gen(); !errors.Is(err, mapfault.ErrFault) {
				t.Fatalf("second generate: err = %v, want ErrFault", err)
			}
			vocab := m.net.Config().Vocab
			if err := m.Logits(context.Background(), []int32{1, 2}, []int32{1}, make([]float32, vocab)); !errors.Is(err, mapfault.ErrFault) {
				t.Fatalf("logits: err = %v, want ErrFault", err)
			}
			if _, err := m.SaveCache(filepath.Join(t.TempDir(), "prefix.snap"), 100); !errors.Is(err, mapfault.ErrFault) {
				t.Fatalf("SaveCache of a faulted model: err = %v, want ErrFault", err)
			}
		})
	}
}

// TestLoadOfTruncatedMapping: a file truncated while it loads fails the
// load with an error (Load maps the file, then reads it).
func TestLoadOfTruncatedMapping(t *testing.T) {
	mapfaulttest.RequireFaultAddresses(t)
	path := synthetic(t, "llama", quant.Q4_0)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	m, err := load(f, path, Options{Threads: 2, ContextLength: 256})
	if err == nil {
		m.Close()
		t.Fatal("load of a truncated mapping succeeded")
	}
	if !errors.Is(err, mapfault.ErrFault) {
		t.Fatalf("err = %v, want ErrFault", err)
	}
}

// TestTruncatedDraftFileDropsTheDraft: a draft model's file truncated
// while loaded faults only the draft model: the target, whose own file is
// whole, goes on decoding the same tokens without drafts, and is not
// Faulted. The fault marked the target faulted, so the request failed
// with a 503 and the model was loaded again.
func TestTruncatedDraftFileDropsTheDraft(t *testing.T) {
	mapfaulttest.RequireFaultAddresses(t)
	models := testpath.Shared(t, "models")
	draft := filepath.Join(t.TempDir(), "draft.gguf")
	b, err := os.ReadFile(filepath.Join(models, "ruvllm-test-llama-19m-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(draft, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(context.Background(), filepath.Join(models, "ruvllm-test-llama-19m-q8_0.gguf"), Options{Threads: 2, ContextLength: 256,
		Speculate: spec.KindDraft, Draft: draft, SpecControl: spec.Options{Fixed: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req := Request{Prompt: specPrompt, MaxTokens: 24, IgnoreEOS: true}
	want, _, res := generate(t, m, req)
	if res.Speculation.Verifications == 0 {
		t.Fatalf("the draft model drafted nothing: %+v", res.Speculation)
	}
	if err := os.Truncate(draft, 4096); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var got []int32
		if _, err := m.Generate(context.Background(), req, func(tk Token) error { got = append(got, tk.ID); return nil }); err != nil {
			t.Fatalf("generate after the draft's file was truncated: %v", err)
		}
		if m.Faulted() {
			t.Fatal("the target is Faulted after its draft model's fault")
		}
		if !slices.Equal(got, want) {
			t.Fatalf("tokens %v, want %v (as with the draft model)", got, want)
		}
	}
	if !m.draft.faulted.Load() {
		t.Fatal("the draft model is not marked faulted")
	}
}
