package rx

import (
	"testing"
	"unicode/utf8"
)

// FuzzParsePattern checks that any pattern either fails to parse with an
// error or gives a term whose automaton agrees with itself: a string is
// matched by the pattern's search term whenever it is matched by the
// whole-text term.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{`^[a-z]+$`, `(a|b)*c{2,3}`, `\d+\.\d*`, `[^\s]`, `(?=a)b`, `\p{L}+`, `a{,`, `[\w-]`, `\u00e9`, `(?<n>x)`} {
		f.Add(s, "abc")
	}
	f.Fuzz(func(t *testing.T, pattern, input string) {
		if len(pattern) > 200 || !utf8.ValidString(pattern) {
			return
		}
		search, err := ParsePattern(pattern)
		if err != nil {
			return
		}
		full, err := ParseFull(pattern)
		if err != nil {
			t.Fatalf("%q parses for search but not whole-text matching: %v", pattern, err)
		}
		p := NewPool()
		ts := Lower(p, search, UTF8Encoding{})
		tf := Lower(p, full, UTF8Encoding{})
		if p.Match(tf, []byte(input)) && !p.Match(ts, []byte(input)) && !p.Overflow {
			t.Fatalf("%q: %q matched whole but not searched", pattern, input)
		}
		Lower(p, search, JSONStringEncoding{})
	})
}

// FuzzNumber checks that numeric bounds never panic.
func FuzzNumber(f *testing.F) {
	f.Add("1.5", "-2e3", true, "12")
	f.Fuzz(func(t *testing.T, lo, hi string, integer bool, input string) {
		n, err := Number(&Bound{Value: lo}, &Bound{Value: hi, Exclusive: true}, integer)
		if err != nil {
			return
		}
		p := NewPool()
		p.Match(Lower(p, n, UTF8Encoding{}), []byte(input))
	})
}
