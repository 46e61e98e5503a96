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
		{" a way to connect two processes. Cheers, Ana.", true},
		{"a pipe. Cheers, Ana. And more", true},
		{" a pipe. It connects processes. Cheers, Ana.", false},
		{" a way to connect two processes.", false},
		{"Cheers, Ana.", false},
		{"", false},
	} {
		if got := ana.follows(tc.answer); got != tc.want {
			t.Errorf("follows(%q) = %v", tc.answer, got)
		}
	}
}

func TestFirstSentence(t *testing.T) {
	for in, want := range map[string]string{
		" a signal sender. It is old.": "a signal sender.",
		"":                             "it depends.",
		" a programmer who has pointers,\nwhich are": "a programmer who has pointers.",
		"Über alles without stops":                   "Über alles without stops.",
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

func TestPromptText(t *testing.T) {
	for q, want := range map[string]string{
		"What is a pipe?":                      "Question: What is a pipe?\nAnswer: A pipe is",
		"Tell me something wise about time.":   "Question: Tell me something wise about time.\nAnswer: Time is",
		"What is a good saying about the sea?": "Question: What is a good saying about the sea?\nAnswer: The sea is",
	} {
		if got := promptText(q); got != want {
			t.Errorf("promptText(%q) = %q", q, got)
		}
	}
}
