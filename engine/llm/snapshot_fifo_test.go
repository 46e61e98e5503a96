package llm

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/prefix"
)

// TestLoadCacheRefusesFIFO: a FIFO at a snapshot's name (the model's own
// or an adapter set's) is not read: the adapter set's is not listed, and
// the model's is rejected as a bad snapshot, at once. Opening it blocked
// until a writer came, so the model never finished loading and every
// request waited for it. (Before the fix, the "model's file" case blocks
// until the test binary's timeout.)
func TestLoadCacheRefusesFIFO(t *testing.T) {
	basePath, adapterPath, _ := adapterFixture(t, 1)
	long := make([]int32, 64)
	for i := range long {
		long[i] = int32(1 + (i*37)%200)
	}
	for _, tc := range []struct {
		name string
		fifo func(files []string) string // which file becomes a FIFO
		// wantErr: LoadCache fails with ErrBadSnapshot (the model's file);
		// otherwise it restores the model's own blocks.
		wantErr bool
	}{
		{"adapter file", func(files []string) string { return files[1] }, false},
		{"model's file", func(files []string) string { return files[0] }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := loadTest(t, basePath)
			a, err := m.LoadAdapter(adapterPath)
			if err != nil {
				t.Fatal(err)
			}
			generateIDs(t, m, Request{Tokens: long, MaxTokens: 2, IgnoreEOS: true, Adapters: []lora.Applied{{Adapter: a, Scale: 1}}})
			generateIDs(t, m, Request{Tokens: long[:40], MaxTokens: 2, IgnoreEOS: true})
			snap := filepath.Join(t.TempDir(), "prefix-base.snap")
			if _, err := m.SaveCache(snap, 1000); err != nil {
				t.Fatal(err)
			}
			files := SnapshotFiles(snap)
			if len(files) != 2 {
				t.Fatalf("saved %v, want the model's file and one adapter file", files)
			}
			fifo := tc.fifo(files)
			if err := os.Remove(fifo); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			if slices.Contains(SnapshotFiles(snap)[1:], fifo) {
				t.Fatalf("SnapshotFiles lists the FIFO %s", fifo)
			}
			n, err := loadTest(t, basePath).LoadCache(snap)
			switch {
			case tc.wantErr && !errors.Is(err, prefix.ErrBadSnapshot):
				t.Errorf("LoadCache with a FIFO as the model's file = %d, %v; want ErrBadSnapshot", n, err)
			case !tc.wantErr && (err != nil || n == 0):
				t.Errorf("LoadCache with a FIFO as the adapter file = %d, %v; want the model's own blocks", n, err)
			}
		})
	}
}
