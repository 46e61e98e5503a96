package llm

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ruvllm/ruvllm/engine/prefix"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// TestSnapshotKeepsLongRoPEFactorsApart: Phi-3's LongRoPE rotates keys by
// its short factors up to the original context and by its long ones
// beyond, so a snapshot saved with a context on one side is not restored
// with a context on the other; on the same side it is. The layout did not
// name the factors: after a restart with another --ctx-size the restored
// keys answered the first prompts wrongly (other greedy tokens than a
// model without the snapshot).
func TestSnapshotKeepsLongRoPEFactorsApart(t *testing.T) {
	o := testmodel.DefaultOptions()
	o.Arch, o.ContextLength, o.RopeScaling, o.RopeFactor, o.RopeOrigCtx, o.Seed = "phi3", 1024, "longrope", 6, 256, 5
	path := filepath.Join(t.TempDir(), "phi3.gguf")
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	prompt := make([]int32, 64)
	for i := range prompt {
		prompt[i] = int32(1 + (i*13)%90)
	}
	req := Request{Tokens: prompt, MaxTokens: 8, IgnoreEOS: true}
	load := func(ctx int) *Model {
		t.Helper()
		m, err := Load(context.Background(), path, Options{Threads: 2, ContextLength: ctx, Sequences: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	for _, tc := range []struct {
		name          string
		saved, loaded int
		restore       bool
	}{
		{"short factors both", 256, 256, true},
		{"long factors both", 1024, 512, true},
		{"short then long", 256, 1024, false},
		{"long then short", 1024, 256, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := load(tc.saved)
			generateIDs(t, before, req)
			snap := filepath.Join(t.TempDir(), "prefix.snap")
			if n, err := before.SaveCache(snap, 1000); err != nil || n == 0 {
				t.Fatalf("SaveCache = %d, %v", n, err)
			}
			want, _ := generateIDs(t, load(tc.loaded), req)

			after := load(tc.loaded)
			n, err := after.LoadCache(snap)
			if err != nil && !errors.Is(err, prefix.ErrBadSnapshot) {
				t.Fatal(err)
			}
			if (n > 0) != tc.restore {
				t.Errorf("LoadCache restored %d blocks (%v); want restored %v", n, err, tc.restore)
			}
			if got, _ := generateIDs(t, after, req); !slices.Equal(got, want) {
				t.Errorf("after the snapshot of context %d, context %d answers %v; a model without it %v", tc.saved, tc.loaded, got, want)
			}
			if same := before.CacheLayout() == after.CacheLayout(); same != tc.restore {
				t.Errorf("layouts %q and %q: same %v, want %v", before.CacheLayout(), after.CacheLayout(), same, tc.restore)
			}
		})
	}
}
