package learnbench

import (
	"slices"
	"testing"
)

func TestFollows(t *testing.T) {
	for _, tc := range []struct {
		answer string
		want   bool
	}{
		{" In short, a pipe connects two processes. Cheers, Ana.", true},
		{"In short, it is a pipe. Cheers, Ana. And more", true},
		{" A pipe connects two processes. Cheers, Ana.", false},
		{" In short, a pipe connects two processes.", false},
		{"", false},
	} {
		if got := ana.follows(tc.answer); got != tc.want {
			t.Errorf("follows(%q) = %v", tc.answer, got)
		}
	}
}

func TestFirstSentence(t *testing.T) {
	for in, want := range map[string]string{
		" The kill command sends a signal. It is old.": "the kill command sends a signal.",
		"":                         "it depends.",
		"A line\nand another":      "a line.",
		"Über alles without stops": "über alles without stops.",
	} {
		if got := firstSentence(in); got != want {
			t.Errorf("firstSentence(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	if p := percentile(v, 50); p != 3 {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(v, 95); p != 5 {
		t.Errorf("p95 = %v", p)
	}
	if !slices.Equal(v, []float64{5, 1, 4, 2, 3}) {
		t.Error("percentile sorted its input")
	}
	if percentile(nil, 50) != 0 {
		t.Error("empty")
	}
}

// TestDomains: the routing bench's two domains share no question, and
// have enough for 20 corrections and 50 held-out questions each.
func TestDomains(t *testing.T) {
	tech, wisdom := domains()
	if len(tech) < 70 || len(wisdom) < 70 {
		t.Fatalf("%d and %d questions", len(tech), len(wisdom))
	}
	for _, q := range tech {
		if slices.Contains(wisdom, q) {
			t.Fatalf("%q in both domains", q)
		}
	}
	if len(Questions()) != len(terms) {
		t.Fatal("Questions")
	}
}
