package learning

import "testing"

// TestAttachNewInstanceBeforeOldDetach: a model unloaded (keep_alive 0)
// and loaded again at once got its new instance attached before the old
// one's Detach ran (the manager closes unloaded models behind): Attach
// found the name taken and did nothing, then Detach removed the name, and
// the new instance served without what its scopes learned until the next
// load. The new instance now replaces the old, whose late Detach leaves
// it alone.
func TestAttachNewInstanceBeforeOldDetach(t *testing.T) {
	s := New(Options{})
	first, second := &struct{ n int }{1}, &struct{ n int }{2}
	s.Attach("m", "/m.gguf", first)
	s.Attach("m", "/m.gguf", first) // the same instance again: kept
	ms := s.model("m")
	if ms == nil || ms.instance != first {
		t.Fatal("first instance not attached")
	}
	s.Attach("m", "/m.gguf", second)
	if ms := s.model("m"); ms == nil || ms.instance != second {
		t.Fatal("the new instance is not the one attached")
	}
	if !ms.stopped {
		t.Fatal("the replaced instance's learning was not stopped")
	}
	s.Detach("m", first) // the old instance's late unload
	if ms := s.model("m"); ms == nil || ms.instance != second {
		t.Fatal("the old instance's Detach removed the new one")
	}
	s.Detach("m", second)
	if s.model("m") != nil {
		t.Fatal("the new instance's Detach left it attached")
	}
}
