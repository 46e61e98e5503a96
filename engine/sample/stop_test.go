package sample

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		pushes  []string
		emits   []string // per push
		stopped bool
		flush   string
	}{
		{"no stops passes through", nil, []string{"a", "bc"}, []string{"a", "bc"}, false, ""},
		{"stop in one piece", []string{"<|im_end|>"}, []string{"Hi<|im_end|>more"}, []string{"Hi"}, true, ""},
		{"stop split across pushes", []string{"<|im_end|>"},
			[]string{"Hello <|im", "_en", "d|> tail"}, []string{"Hello ", "", ""}, true, ""},
		{"stop split char by char", []string{"END"},
			[]string{"x", "E", "N", "D"}, []string{"x", "", "", ""}, true, ""},
		{"false start released", []string{"<|im_end|>"},
			[]string{"a <|im", "_start|>b"}, []string{"a ", "<|im_start|>b"}, false, ""},
		{"held text flushed at end", []string{"###"}, []string{"text ##"}, []string{"text "}, false, "##"},
		{"overlapping prefixes", []string{"abcd", "bce"},
			[]string{"xab", "c", "e"}, []string{"x", "", "a"}, true, ""},
		{"longer stop completes later", []string{"abcd", "bce"},
			[]string{"xab", "c", "d!"}, []string{"x", "", ""}, true, ""},
		{"earliest start wins", []string{"cd", "abcde"},
			[]string{"ab", "cd"}, []string{"", "ab"}, true, ""},
		{"repeated prefix char", []string{"aab"},
			[]string{"aaaa", "b"}, []string{"aa", ""}, true, ""},
		{"unicode stop", []string{"終わり"},
			[]string{"日本語の", "終", "わ", "り。"}, []string{"日本語の", "", "", ""}, true, ""},
		{"unicode false start", []string{"終わり"},
			[]string{"終", "点"}, []string{"", "終点"}, false, ""},
		{"stop at very start", []string{"\n\n"}, []string{"\n", "\nrest"}, []string{"", ""}, true, ""},
		{"empty stop ignored", []string{""}, []string{"abc"}, []string{"abc"}, false, ""},
		{"after stop nothing more", []string{"x"}, []string{"ax", "more"}, []string{"a", ""}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewStopMatcher(tt.stops)
			var stopped bool
			for i, p := range tt.pushes {
				var e string
				e, stopped = m.Push(p)
				if e != tt.emits[i] {
					t.Fatalf("push %d (%q): emit %q, want %q", i, p, e, tt.emits[i])
				}
			}
			if stopped != tt.stopped || m.Stopped() != tt.stopped {
				t.Fatalf("stopped = %v, want %v", stopped, tt.stopped)
			}
			if f := m.Flush(); f != tt.flush {
				t.Fatalf("Flush = %q, want %q", f, tt.flush)
			}
		})
	}
}

// TestStopMatcherEverySplit streams a text through every two-way split and
// rune-by-rune, and checks the emitted text equals the text before the first
// stop, that no piece splits a rune, and that a stop is never partly shown.
func TestStopMatcherEverySplit(t *testing.T) {
	stops := []string{"<|end|>", "ünd", "\n\nUser:"}
	texts := []string{
		"Grüße, <|en und ünd<|end|> after",
		"no stop here <|en",
		"line\n\nUse it\n\nUser: hi",
	}
	for _, text := range texts {
		want := text
		cut := -1
		for _, s := range stops {
			if i := strings.Index(text, s); i >= 0 && (cut < 0 || i < cut) {
				cut = i
			}
		}
		if cut >= 0 {
			want = text[:cut]
		}
		check := func(pieces []string) {
			m := NewStopMatcher(stops)
			var b strings.Builder
			for _, p := range pieces {
				e, stopped := m.Push(p)
				if !utf8.ValidString(e) {
					t.Fatalf("%q: emitted invalid UTF-8 %q", text, e)
				}
				b.WriteString(e)
				if stopped {
					break
				}
			}
			b.WriteString(m.Flush())
			if b.String() != want {
				t.Fatalf("pieces %q: got %q, want %q", pieces, b.String(), want)
			}
		}
		for i := 0; i <= len(text); i++ {
			if utf8.RuneStart(text[min(i, len(text)-1)]) || i == len(text) {
				check([]string{text[:i], text[i:]})
			}
		}
		var runes []string
		for _, r := range text {
			runes = append(runes, string(r))
		}
		check(runes)
	}
}

func FuzzStopMatcher(f *testing.F) {
	f.Add("hello <|im_end|> x", "<|im_end|>", 3)
	f.Add("aaab", "aab", 1)
	f.Add("日本語終わり", "終わり", 2)
	f.Fuzz(func(t *testing.T, text, stop string, step int) {
		if step <= 0 || step > 64 {
			step = 1
		}
		m := NewStopMatcher([]string{stop})
		var b strings.Builder
		stopped := false
		for i := 0; i < len(text) && !stopped; i += step {
			var e string
			e, stopped = m.Push(text[i:min(i+step, len(text))])
			b.WriteString(e)
		}
		b.WriteString(m.Flush())
		want := text
		if stop != "" {
			if i := strings.Index(text, stop); i >= 0 {
				want = text[:i]
			}
		}
		if b.String() != want {
			t.Fatalf("got %q, want %q", b.String(), want)
		}
	})
}

func TestStopMatcherMatched(t *testing.T) {
	m := NewStopMatcher([]string{"END", "\n\n", "ZZZ"})
	if m.Matched() != "" {
		t.Fatal("matched before any text")
	}
	first, _ := m.Push("one\n")
	emit, stopped := m.Push("\nEND")
	if !stopped || first+emit != "one" || m.Matched() != "\n\n" {
		t.Fatalf("emit %q stopped %v matched %q: want the earliest stop, \\n\\n", first+emit, stopped, m.Matched())
	}
}

// TestStopMatcherSetStops: text held back as the start of a stop string
// that is no longer one comes out with the next piece, and the remaining
// stop strings still stop.
func TestStopMatcherSetStops(t *testing.T) {
	m := NewStopMatcher([]string{"[INST]", "END"})
	if out, stopped := m.Push("abc [IN"); out != "abc " || stopped {
		t.Fatalf("Push = %q, %v; want the text before a possible stop", out, stopped)
	}
	m.SetStops([]string{"END", ""})
	if out, stopped := m.Push("ST] x E"); out != "[INST] x " || stopped {
		t.Fatalf("after SetStops: %q, %v; want the held text released", out, stopped)
	}
	if out, stopped := m.Push("ND y"); out != "" || !stopped || m.Matched() != "END" {
		t.Fatalf("a remaining stop: %q, %v, %q", out, stopped, m.Matched())
	}
	n := NewStopMatcher([]string{"[INST]"})
	n.Push("tail [I")
	n.SetStops(nil)
	if got := n.Flush(); got != "[I" {
		t.Fatalf("Flush after SetStops(nil) = %q", got)
	}
}

// FuzzStopMatcherSetStops pushes text in steps with two stop strings and
// drops the first after the push that ends at or past byte drop: the
// output is the text up to the first stop to complete while it counted
// (the earliest start among those completing in the same push).
func FuzzStopMatcherSetStops(f *testing.F) {
	f.Add("abc [INST] x END y", "[INST]", "END", 2, 5)
	f.Add("xx[INST]yy", "[INST]", "yy", 3, 0)
	f.Add("aaaa", "aa", "aaa", 1, 1)
	f.Fuzz(func(t *testing.T, text, drop, keep string, step, at int) {
		if step <= 0 || step > 64 {
			step = 1
		}
		m := NewStopMatcher([]string{drop, keep})
		var b strings.Builder
		dropped, want := false, text
		for e := 0; e < len(text); {
			next := min(e+step, len(text))
			out, stopped := m.Push(text[e:next])
			b.WriteString(out)
			// What counts in this push: occurrences ending by next, of
			// keep, and of drop while it is still a stop.
			if want == text {
				best := -1
				for k, s := range []string{drop, keep} {
					if s == "" || k == 0 && dropped {
						continue
					}
					if i := strings.Index(text, s); i >= 0 && i+len(s) <= next && (best < 0 || i < best) {
						best = i
					}
				}
				if best >= 0 {
					want = text[:best]
				}
			}
			if stopped {
				break
			}
			e = next
			if !dropped && e >= at {
				m.SetStops([]string{keep})
				dropped = true
			}
		}
		b.WriteString(m.Flush())
		if b.String() != want {
			t.Fatalf("got %q, want %q", b.String(), want)
		}
	})
}
