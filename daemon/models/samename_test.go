package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// sameNameOrders runs fn in a subtest for each order of two files named
// same.gguf: the models directory's ("same") and one elsewhere (a path).
// The subtests are named "directory's model <state>, other file asked"
// and "other file <state>, directory's model asked". Each has a fresh
// manager with the first name acquired as h, which fn releases, and
// firstPath, the file it loaded.
func sameNameOrders(t *testing.T, state string, fn func(t *testing.T, m *Manager, h *Handle, first, second, firstPath string)) {
	t.Helper()
	other := filepath.Join(t.TempDir(), "same.gguf")
	if err := os.WriteFile(other, []byte("GGUF"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		first, second string
	}{
		{"directory's model " + state + ", other file asked", "same", other},
		{"other file " + state + ", directory's model asked", other, "same"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, l, _ := newTestManager(t, Options{}, "same.gguf")
			h, err := m.Acquire(context.Background(), tc.first, nil)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, m, h, tc.first, tc.second, l.last.path)
		})
	}
}

// TestSameNameOtherFileRefused: a model file named by path whose name is
// that of the loaded model (the models directory's, or the default) is
// refused with ErrInUse, in either order, instead of being served the
// loaded model or taking its name for every other request.
func TestSameNameOtherFileRefused(t *testing.T) {
	sameNameOrders(t, "loaded", func(t *testing.T, m *Manager, h *Handle, first, second, firstPath string) {
		ctx := context.Background()
		if h2, err := m.Acquire(ctx, second, nil); !errors.Is(err, ErrInUse) {
			if h2 != nil { // served the loaded model in its place
				h2.Release()
			}
			h.Release()
			t.Fatalf("second file: %v, want ErrInUse", err)
		}
		// The same file again, by a symlink too, is served as before.
		link := filepath.Join(t.TempDir(), "same.gguf")
		if err := os.Symlink(firstPath, link); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{first, link} {
			again, err := m.Acquire(ctx, name, nil)
			if err != nil {
				h.Release()
				t.Fatalf("first file again as %s: %v", name, err)
			}
			got := again.Model.(*stubModel).path
			again.Release()
			if got != firstPath {
				h.Release()
				t.Fatalf("first file again as %s: served %s", name, got)
			}
		}
		h.Release()
		m.Unload("same")
		h, err := m.Acquire(ctx, second, nil)
		if err != nil {
			t.Fatalf("second file once the first unloaded: %v", err)
		}
		if got := h.Model.(*stubModel).path; got == firstPath {
			t.Fatalf("second file served %s", got)
		}
		h.Release()
	})
}
