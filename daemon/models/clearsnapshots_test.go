package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// snapModel is a stub model whose prefix cache is a number of blocks,
// saved to and restored from its snapshot file; its warm-up runs
// onWarmup, between the snapshot's restore and the model's publication.
type snapModel struct {
	stubModel
	mu       sync.Mutex
	blocks   int
	onWarmup func()
	// failSave makes SaveCache fail after writing its file, as a save
	// of several files does that fails partway.
	failSave bool
}

func (s *snapModel) SaveCache(path string, maxBlocks int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.WriteFile(path, []byte(strconv.Itoa(s.blocks)), 0o600); err != nil {
		return 0, err
	}
	if s.failSave {
		return 0, errors.New("disk full")
	}
	return s.blocks, nil
}

func (s *snapModel) LoadCache(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocks = n
	return n, nil
}

func (s *snapModel) ClearCache() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocks = 0
}

func (s *snapModel) Warmup(ctx context.Context) error {
	if s.onWarmup != nil {
		s.onWarmup()
	}
	return nil
}

func (s *snapModel) cached() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocks
}

// snapLoader loads snapModels and keeps the last; the next one gets hook
// as its warm-up.
type snapLoader struct {
	mu   sync.Mutex
	last *snapModel
	hook func()
}

func (l *snapLoader) load(ctx context.Context, path string) (Model, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = &snapModel{stubModel: stubModel{path: path}, onWarmup: l.hook}
	l.hook = nil
	return l.last, nil
}

func (l *snapLoader) model() *snapModel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// use acquires a, sets its cached blocks to n (n >= 0), releases it and
// returns the blocks it held when acquired.
func (l *snapLoader) use(t *testing.T, m *Manager, n int) int {
	t.Helper()
	h, err := m.Acquire(context.Background(), "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	s := l.model()
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.blocks
	if n >= 0 {
		s.blocks = n
	}
	return held
}

// TestClearSnapshotsDropsSavedPrefixes: after DELETE /v1/cache
// (ClearSnapshots), no model serves the prefixes it cleared — not one
// that was unloaded at the time and loads again (its snapshot restored
// them, as after a restart), nor one unloading or loading across the
// clear.
func TestClearSnapshotsDropsSavedPrefixes(t *testing.T) {
	clear := func(t *testing.T, m *Manager) {
		if err := m.ClearSnapshots(); err != nil {
			t.Error(err)
		}
	}
	for _, tc := range []struct {
		name string
		// run caches 5 blocks in model a, clears across some step, and
		// returns the blocks a holds once loaded again.
		run func(t *testing.T, m *Manager, l *snapLoader) int
	}{
		{"unloaded before the clear", func(t *testing.T, m *Manager, l *snapLoader) int {
			l.use(t, m, 5)
			m.Unload("a")
			clear(t, m)
			return l.use(t, m, -1)
		}},
		{"unloading across the clear", func(t *testing.T, m *Manager, l *snapLoader) int {
			l.use(t, m, 5)
			unloadAcrossClear(t, m, clear) // saves the cache that was cleared
			return l.use(t, m, -1)
		}},
		{"a save failing partway across the clear", func(t *testing.T, m *Manager, l *snapLoader) int {
			l.use(t, m, 5)
			l.model().mu.Lock()
			l.model().failSave = true
			l.model().mu.Unlock()
			unloadAcrossClear(t, m, clear) // writes a file of the cleared cache, then fails
			return l.use(t, m, -1)
		}},
		{"loading across the clear", func(t *testing.T, m *Manager, l *snapLoader) int {
			l.use(t, m, 5)
			m.Unload("a")
			l.mu.Lock()
			l.hook = func() { clear(t, m) } // after the restore, before the model is served
			l.mu.Unlock()
			return l.use(t, m, -1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := &snapLoader{}
			// With a cache layout, so that the snapshot is the file a real
			// model writes: a stub without one wrote the file of earlier
			// versions, which saving removes, and the test could not fail.
			load := func(ctx context.Context, path string) (Model, error) {
				mdl, err := l.load(ctx, path)
				return layoutSnapModel{mdl.(*snapModel)}, err
			}
			m := New(Options{Dir: dir, CacheDir: filepath.Join(dir, "cache"), Loader: load,
				MemAvailable: func() (int64, bool) { return 0, false }})
			t.Cleanup(func() { m.Close(context.Background()) })
			if err := os.MkdirAll(m.o.CacheDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "a.gguf"), []byte("GGUF"), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := tc.run(t, m, l); got != 0 {
				t.Errorf("a loaded again with %d cached blocks, want the cleared cache empty", got)
			}
			m.Unload("a")
			snaps, _ := filepath.Glob(filepath.Join(m.o.CacheDir, "prefix-a.*.snap"))
			if len(snaps) > 1 {
				t.Fatalf("snapshots %v", snaps)
			}
			path := filepath.Join(m.o.CacheDir, "prefix-a.none.snap")
			if len(snaps) == 1 {
				path = snaps[0]
			}
			b, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if err == nil && string(b) != "0" {
				t.Errorf("snapshot of a after the clear holds %s blocks", b)
			}
		})
	}
}

// unloadAcrossClear takes model a out of the loaded set, runs clear, and
// then finishes a's unload (its prefix cache saved, or not, after the
// clear).
func unloadAcrossClear(t *testing.T, m *Manager, clear func(*testing.T, *Manager)) {
	t.Helper()
	m.mu.Lock()
	e := m.loaded["a"]
	detached := m.detach(e)
	m.mu.Unlock()
	if !detached {
		t.Fatal("a not detached")
	}
	clear(t, m)
	m.finishUnload(e)
}

// layoutSnapModel is a snapModel with a cache layout, so that its
// snapshot is not the one file of earlier versions ("prefix-NAME.snap"),
// which saving removes.
type layoutSnapModel struct{ *snapModel }

func (layoutSnapModel) CacheLayout() string { return "test" }

// TestNoSnapshotOfFileRewrittenInPlace: a model whose file was written to
// while it was loaded (cp over it, dd conv=notrunc) does not save its
// prefix cache when it unloads: blocks computed from the changed mapping
// were saved under the old file's identity, and restored, wrong, once the
// file was put back as it was. A file renamed over (the old data still
// mapped) or left alone saves as before.
func TestNoSnapshotOfFileRewrittenInPlace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		change   func(t *testing.T, path string)
		wantSave bool
	}{
		{"unchanged", func(*testing.T, string) {}, true},
		{"rewritten in place, same size", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("X"), 1); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(time.Minute)
			if err := os.Chtimes(path, later, later); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 1); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"renamed over", func(t *testing.T, path string) {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte("GGUF new"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := &snapLoader{}
			load := func(ctx context.Context, path string) (Model, error) {
				mdl, err := l.load(ctx, path)
				if err != nil {
					return nil, err
				}
				return layoutSnapModel{mdl.(*snapModel)}, nil
			}
			m := New(Options{Dir: dir, CacheDir: filepath.Join(dir, "cache"), Loader: load,
				MemAvailable: func() (int64, bool) { return 0, false }})
			t.Cleanup(func() { m.Close(context.Background()) })
			if err := os.MkdirAll(m.o.CacheDir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "a.gguf")
			if err := os.WriteFile(path, []byte("GGUF"), 0o600); err != nil {
				t.Fatal(err)
			}
			l.use(t, m, 5)
			tc.change(t, path)
			m.Unload("a")
			snaps, err := filepath.Glob(filepath.Join(m.o.CacheDir, "prefix-a.*.snap"))
			if err != nil {
				t.Fatal(err)
			}
			if saved := len(snaps) == 1; saved != tc.wantSave {
				t.Errorf("snapshot saved %v, want %v", saved, tc.wantSave)
			}
		})
	}
}
