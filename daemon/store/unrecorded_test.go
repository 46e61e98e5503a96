package store

import (
	"errors"
	"fmt"
	"testing"
)

// TestUnrecordedLogBounded: the completions whose recording failed are
// remembered up to maxUnrecorded, the oldest forgotten first.
func TestUnrecordedLogBounded(t *testing.T) {
	var u unrecordedLog
	boom := errors.New("boom")
	for i := range maxUnrecorded + 1 {
		u.add(fmt.Sprintf("c%d", i), boom)
	}
	for _, tc := range []struct {
		id   string
		want error
	}{
		{"c0", nil},
		{"c1", boom},
		{fmt.Sprintf("c%d", maxUnrecorded), boom},
		{"other", nil},
	} {
		if got := u.why(tc.id); got != tc.want {
			t.Errorf("why(%s) = %v, want %v", tc.id, got, tc.want)
		}
	}
	if len(u.cause) != maxUnrecorded || len(u.order) != maxUnrecorded {
		t.Errorf("holds %d causes, %d ids, want %d", len(u.cause), len(u.order), maxUnrecorded)
	}
}
