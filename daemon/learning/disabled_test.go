package learning

import "testing"

// TestDisabledLearnsNothing: a service with learning switched off
// (--no-learning: "store feedback but do not learn from it") attaches no
// learner to a model that loads. It attached one, which learned the
// feedback stored before the restart, consolidated it and ran deep runs,
// writing the learned state, while requests applied none of it.
func TestDisabledLearnsNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disabled bool
		attached bool
	}{
		{"enabled", false, true},
		{"disabled", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{Disabled: tc.disabled})
			s.Attach("m", "m.gguf", nil) // no model: nothing to train either way
			defer s.Detach("m", nil)
			if attached := s.model("m") != nil; attached != tc.attached {
				t.Fatalf("learner attached %v, want %v", attached, tc.attached)
			}
			if n := len(s.Status("", "").Models); n != 0 != tc.attached {
				t.Fatalf("status lists %d models", n)
			}
		})
	}
}
