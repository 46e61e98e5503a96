package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSameNameOtherFileRefused: a model file named by path whose name is
// that of the loaded model (the models directory's, or the default) is
// refused with ErrInUse, in either order, instead of being served the
// loaded model or taking its name for every other request.
func TestSameNameOtherFileRefused(t *testing.T) {
	other := filepath.Join(t.TempDir(), "same.gguf")
	if err := os.WriteFile(other, []byte("GGUF"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		first, second string
	}{
		{"directory's model loaded, other file asked", "same", other},
		{"other file loaded, directory's model asked", other, "same"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, l, _ := newTestManager(t, Options{}, "same.gguf")
			ctx := context.Background()
			h, err := m.Acquire(ctx, tc.first, nil)
			if err != nil {
				t.Fatal(err)
			}
			firstPath := l.last.path
			if h2, err := m.Acquire(ctx, tc.second, nil); !errors.Is(err, ErrInUse) {
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
			for _, name := range []string{tc.first, link} {
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
			h, err = m.Acquire(ctx, tc.second, nil)
			if err != nil {
				t.Fatalf("second file once the first unloaded: %v", err)
			}
			if got := h.Model.(*stubModel).path; got == firstPath {
				t.Fatalf("second file served %s", got)
			}
			h.Release()
		})
	}
}
