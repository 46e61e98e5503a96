package models

import (
	"context"
	"testing"
)

// TestSameNameOtherFileIdleUnloaded: once the loaded model is idle, a
// file of the same name elsewhere (a created model FROM a path, the
// directory's file of that name) is served: the idle one is unloaded, in
// either order, where every request for the other file was refused with
// ErrInUse until the keep-alive ran out.
func TestSameNameOtherFileIdleUnloaded(t *testing.T) {
	sameNameOrders(t, "idle", func(t *testing.T, m *Manager, h *Handle, _, second, firstPath string) {
		h.Release()
		h, err := m.Acquire(context.Background(), second, nil)
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
