package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/llm"
)

// kvModel is a stub whose KV cache is kv bytes.
type kvModel struct {
	*stubModel
	kv int64
}

func (k kvModel) Info() llm.Info {
	in := k.stubModel.Info()
	in.KVBytes = k.kv
	return in
}

// TestFirstLoadCheckedAgainstMemory: the first model loaded (no other
// model to unload) is refused when its weights, or its weights and KV
// cache, need more than the free memory; it loaded whatever its size.
func TestFirstLoadCheckedAgainstMemory(t *testing.T) {
	const weights = 1000 << 10
	for _, tc := range []struct {
		name      string
		free      int64
		known     bool
		margin    int64
		kv        int64
		wantErr   bool
		wantLoads int
	}{
		{"fits", 4 << 20, true, 0, 1 << 20, false, 1},
		{"weights too big", 512 << 10, true, 0, 0, true, 0},
		{"KV cache too big", 2 << 20, true, 0, 2 << 20, true, 1},
		{"free memory unknown", 0, false, 0, 2 << 20, false, 1},
		{"check disabled", 512 << 10, true, -1, 2 << 20, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "big.gguf")
			if err := os.WriteFile(path, make([]byte, weights), 0o600); err != nil {
				t.Fatal(err)
			}
			loads := 0
			var loaded *stubModel
			m := New(Options{Dir: dir, MemoryMargin: tc.margin,
				MemAvailable: func() (int64, bool) { return tc.free, tc.known },
				Loader: func(ctx context.Context, p string) (Model, error) {
					loads++
					loaded = &stubModel{path: p}
					return kvModel{loaded, tc.kv}, nil
				}})
			t.Cleanup(func() { m.Close(context.Background()) })
			h, err := m.Acquire(context.Background(), "big", nil)
			if loads != tc.wantLoads {
				t.Errorf("loader called %d times, want %d", loads, tc.wantLoads)
			}
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				h.Release()
				return
			}
			if err == nil {
				h.Release()
				t.Fatal("Acquire loaded the model, want ErrInsufficientMemory")
			}
			if !errors.Is(err, ErrInsufficientMemory) || !errors.Is(err, ErrLoadFailed) {
				t.Fatalf("Acquire: %v, want ErrInsufficientMemory (a load failure)", err)
			}
			if loaded != nil && !loaded.closed.Load() {
				t.Error("refused model left open")
			}
			if l := m.Loaded(); len(l) != 0 {
				t.Errorf("loaded %+v after a refusal", l)
			}
		})
	}
}
