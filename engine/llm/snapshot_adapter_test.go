package llm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/prefix"
)

// TestSnapshotKeepsAdapterPrefixes: SaveCache keeps the prefixes cached
// under an adapter set (a learned adapter's: every request of a user whose
// feedback trained one runs under it) in a file of its own beside the
// model's, and a freshly loaded model with the same adapter restores and
// reuses them; a corrupt adapter file is skipped and removed, the model's
// own prefixes still restored. Only the model's own namespace was saved,
// so nothing survived a restart once the model had learned anything.
func TestSnapshotKeepsAdapterPrefixes(t *testing.T) {
	basePath, adapterPath, _ := adapterFixture(t, 1)
	m := loadTest(t, basePath)
	long := adapterTokens(37)
	with := underAdapter(t, m, adapterPath, long, 1)
	plain := Request{Tokens: long[:40], MaxTokens: 2, IgnoreEOS: true}
	generateIDs(t, m, with)
	generateIDs(t, m, plain)
	snap := filepath.Join(t.TempDir(), "prefix-base.snap")
	n, err := m.SaveCache(snap, 1000)
	if err != nil {
		t.Fatal(err)
	}
	files := SnapshotFiles(snap)
	if len(files) != 2 || n < 4 {
		t.Fatalf("SaveCache saved %d blocks in %v, want the model's file and one adapter file", n, files)
	}

	fresh := loadTest(t, basePath)
	again := underAdapter(t, fresh, adapterPath, long, 1)
	restored, err := fresh.LoadCache(snap)
	if err != nil || restored != n {
		t.Fatalf("LoadCache = %d, %v; want %d", restored, err, n)
	}
	if _, res := generateIDs(t, fresh, again); res.CachedTokens < 48 {
		t.Errorf("the adapter's restored prefix was not reused: %d cached tokens", res.CachedTokens)
	}

	// A corrupt adapter file is skipped and removed; the model's own
	// prefixes are restored.
	if err := os.WriteFile(files[1], []byte("not a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	third := loadTest(t, basePath)
	got, err := third.LoadCache(snap)
	if err != nil || got == 0 || got >= n {
		t.Errorf("LoadCache with a corrupt adapter file = %d, %v; want the model's own blocks (fewer than %d)", got, err, n)
	}
	if _, err := os.Stat(files[1]); !os.IsNotExist(err) {
		t.Errorf("the corrupt adapter file was kept: %v", err)
	}
	// A save drops the files of adapters no longer cached.
	if _, err := third.SaveCache(snap, 1000); err != nil || len(SnapshotFiles(snap)) != 1 {
		t.Errorf("after a save without adapter prefixes: %v, files %v", err, SnapshotFiles(snap))
	}
}

// TestSnapshotAdapterFilesSurviveFailedSave: a save that fails partway
// through the adapters' files (as one cut short by kill -9 would) leaves
// the adapter files of the last complete save, whole and restorable. They
// were removed before the new ones were written, so a daemon killed while
// saving lost the prefixes of every adapter, a learned one's included.
func TestSnapshotAdapterFilesSurviveFailedSave(t *testing.T) {
	basePath, adapterPath, _ := adapterFixture(t, 1)
	long := adapterTokens(37)
	under := func(m *Model, scale float32) Request { return underAdapter(t, m, adapterPath, long, scale) }
	snap := filepath.Join(t.TempDir(), "prefix-base.snap")

	first := loadTest(t, basePath)
	generateIDs(t, first, under(first, 1))
	saved, err := first.SaveCache(snap, 1000)
	if err != nil {
		t.Fatal(err)
	}
	files := SnapshotFiles(snap)
	if len(files) != 2 {
		t.Fatalf("first save wrote %v, want the model's file and one adapter file", files)
	}

	// The next run caches prefixes under another adapter set, whose file
	// cannot be written (a directory is in its place).
	second := loadTest(t, basePath)
	other := under(second, 0.5)
	generateIDs(t, second, other)
	ns, err := second.adapterNamespace(other.Adapters)
	if err != nil {
		t.Fatal(err)
	}
	blocked := adapterSnapshotPath(snap, ns)
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := second.SaveCache(snap, 1000); err == nil {
		t.Fatal("SaveCache over a directory succeeded")
	}
	if _, err := os.Stat(files[1]); err != nil {
		t.Fatalf("the adapter file of the last complete save is gone after a failed save: %v", err)
	}
	if err := os.RemoveAll(blocked); err != nil {
		t.Fatal(err)
	}
	third := loadTest(t, basePath)
	if n, err := third.LoadCache(snap); err != nil || n != saved {
		t.Errorf("LoadCache after a failed save = %d, %v; want the %d blocks of the last complete save", n, err, saved)
	}
}

// TestLoadCacheAdaptersWithoutModelFile: the adapters' prefixes are
// restored when the model's own snapshot is missing or corrupt; LoadCache
// returned at the model's file and the adapters' were lost with it.
func TestLoadCacheAdaptersWithoutModelFile(t *testing.T) {
	basePath, adapterPath, _ := adapterFixture(t, 1)
	m := loadTest(t, basePath)
	long := adapterTokens(41)
	generateIDs(t, m, underAdapter(t, m, adapterPath, long, 1))
	snap := filepath.Join(t.TempDir(), "prefix-base.snap")
	if _, err := m.SaveCache(snap, 1000); err != nil || len(SnapshotFiles(snap)) != 2 {
		t.Fatalf("SaveCache: %v, files %v", err, SnapshotFiles(snap))
	}
	for _, tc := range []struct {
		name  string
		model func() error // what becomes of the model's own file
		isErr func(error) bool
	}{
		{"missing", func() error { return os.Remove(snap) }, os.IsNotExist},
		{"corrupt", func() error { return os.WriteFile(snap, []byte("junk"), 0o600) }, func(err error) bool { return errors.Is(err, prefix.ErrBadSnapshot) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.model(); err != nil {
				t.Fatal(err)
			}
			fresh := loadTest(t, basePath)
			again := underAdapter(t, fresh, adapterPath, long, 1)
			n, err := fresh.LoadCache(snap)
			if !tc.isErr(err) || n < 3 {
				t.Fatalf("LoadCache = %d, %v; want the adapter's blocks and the model file's error", n, err)
			}
			if _, res := generateIDs(t, fresh, again); res.CachedTokens < 48 {
				t.Errorf("the adapter's prefix was not restored: %d cached tokens", res.CachedTokens)
			}
		})
	}
}

// adapterTokens is a 64-token prompt, its tokens picked by stride.
func adapterTokens(stride int) []int32 {
	long := make([]int32, 64)
	for i := range long {
		long[i] = int32(1 + (i*stride)%200)
	}
	return long
}

// underAdapter loads the adapter at path into m and returns a request for
// tokens under it at scale.
func underAdapter(t *testing.T, m *Model, path string, tokens []int32, scale float32) Request {
	t.Helper()
	a, err := m.LoadAdapter(path)
	if err != nil {
		t.Fatal(err)
	}
	return Request{Tokens: tokens, MaxTokens: 2, IgnoreEOS: true, Adapters: []lora.Applied{{Adapter: a, Scale: scale}}}
}
