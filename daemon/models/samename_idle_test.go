package models

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSameNameOtherFileIdleUnloaded: once the loaded model is idle, a
// file of the same name elsewhere (a created model FROM a path, the
// directory's file of that name) is served: the idle one is unloaded, in
// either order, where every request for the other file was refused with
// ErrInUse until the keep-alive ran out.
func TestSameNameOtherFileIdleUnloaded(t *testing.T) {
	other := filepath.Join(t.TempDir(), "same.gguf")
	if err := os.WriteFile(other, []byte("GGUF"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		first, second string
	}{
		{"directory's model idle, other file asked", "same", other},
		{"other file idle, directory's model asked", other, "same"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, l, _ := newTestManager(t, Options{}, "same.gguf")
			ctx := context.Background()
			h, err := m.Acquire(ctx, tc.first, nil)
			if err != nil {
				t.Fatal(err)
			}
			firstPath := l.last.path
			h.Release()
			h, err = m.Acquire(ctx, tc.second, nil)
			if err != nil {
				t.Fatalf("second file with the first idle: %v", err)
			}
			if got := h.Model.(*stubModel).path; got == firstPath {
				t.Fatalf("second file served the first, %s", got)
			}
			h.Release()
			if n := len(m.Loaded()); n != 1 {
				t.Fatalf("%d models loaded, want the second alone", n)
			}
		})
	}
}
