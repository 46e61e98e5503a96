package rx

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func lower(t *testing.T, p *Pool, n *Node) ID {
	t.Helper()
	return Lower(p, n, UTF8Encoding{})
}

func TestTerms(t *testing.T) {
	p := NewPool()
	ab := p.Literal("ab")
	abStar := p.Star(ab)
	tests := []struct {
		name string
		t    ID
		yes  []string
		no   []string
	}{
		{"literal", ab, []string{"ab"}, []string{"", "a", "abc", "ba"}},
		{"star", abStar, []string{"", "ab", "abab"}, []string{"a", "aba", "b"}},
		{"repeat", p.Repeat(p.Byte('x'), 2, 4), []string{"xx", "xxx", "xxxx"}, []string{"", "x", "xxxxx"}},
		{"repeat unbounded", p.Repeat(p.Byte('x'), 2, -1), []string{"xx", "xxxxxxx"}, []string{"x"}},
		{"repeat nullable body", p.Repeat(p.Opt(p.Byte('x')), 2, 3), []string{"", "x", "xxx"}, []string{"xxxx"}},
		{"and", p.And(p.Star(p.ByteRange('a', 'z')), p.Repeat(p.Bytes(fullSet()), 2, 3)), []string{"ab", "abc"}, []string{"a", "abcd", "A1"}},
		{"not", p.And(p.Not(p.Literal("ab")), p.Star(p.ByteRange('a', 'b'))), []string{"", "a", "ba", "abab"}, []string{"ab"}},
		{"empty intersection", p.And(p.Literal("ab"), p.Literal("ba")), nil, []string{"ab", "ba", ""}},
		{"or", p.Or(ab, p.Literal("cd"), Nothing), []string{"ab", "cd"}, []string{"", "abcd"}},
	}
	for _, tc := range tests {
		for _, s := range tc.yes {
			if !p.Match(tc.t, []byte(s)) {
				t.Errorf("%s: %q not matched by %s", tc.name, s, p.String(tc.t))
			}
		}
		for _, s := range tc.no {
			if p.Match(tc.t, []byte(s)) {
				t.Errorf("%s: %q matched by %s", tc.name, s, p.String(tc.t))
			}
		}
	}
	if p.Live(p.And(p.Literal("ab"), p.Literal("ba"))) {
		t.Error("empty intersection reported live")
	}
	// A dead state is Nothing after a transition.
	x := p.And(p.Star(p.Literal("ab")), p.Star(p.Literal("abab")))
	if got := p.Next(p.Next(p.Next(x, 'a'), 'b'), 'c'); got != Nothing {
		t.Errorf("transition on c = %s, want Nothing", p.String(got))
	}
	if p.Overflow {
		t.Error("overflow")
	}
}

func fullSet() ByteSet {
	var s ByteSet
	s.AddRange(0, 255)
	return s
}

func TestHashConsing(t *testing.T) {
	p := NewPool()
	a := p.Or(p.Literal("x"), p.Literal("yz"), p.Literal("x"))
	b := p.Or(p.Literal("yz"), p.Or(p.Literal("x")))
	if a != b {
		t.Errorf("equal unions got ids %d and %d", a, b)
	}
	if p.Concat(p.Concat(p.Byte('a'), p.Byte('b')), p.Byte('c')) != p.Literal("abc") {
		t.Error("concatenation not normalised")
	}
	if p.Not(p.Not(a)) != a {
		t.Error("double complement not removed")
	}
}

func TestUTF8Ranges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	edges := []rune{0, 1, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x3FFFF, 0x40000, 0x10FFFF}
	for iter := 0; iter < 300; iter++ {
		var rs []RuneRange
		for k := 0; k < 1+r.IntN(3); k++ {
			lo := edges[r.IntN(len(edges))] + rune(r.IntN(3)) - 1
			hi := lo + rune(r.IntN(0x20000))
			rs = append(rs, RuneRange{lo, hi})
		}
		norm := Normalize(rs)
		p := NewPool()
		term := p.UTF8(rs)
		for k := 0; k < 200; k++ {
			c := rune(r.IntN(0x110000))
			if k < len(edges) {
				c = edges[k]
			}
			if c >= surrogateMin && c <= surrogateMax {
				continue
			}
			want := Contains(norm, c)
			if got := p.Match(term, utf8.AppendRune(nil, c)); got != want {
				t.Fatalf("ranges %v: U+%04X matched %v, want %v", norm, c, got, want)
			}
		}
		// Never a surrogate encoding nor invalid bytes.
		if p.Match(term, []byte{0xED, 0xA0, 0x80}) || p.Match(term, []byte{0xC0, 0x80}) || p.Match(term, []byte{0xFF}) {
			t.Fatalf("ranges %v: invalid UTF-8 accepted", norm)
		}
	}
}

func TestPatternsAgainstGoRegexp(t *testing.T) {
	// Patterns in the common subset of ECMAScript and RE2 syntax.
	patterns := []string{
		`^[a-z]+$`, `abc`, `^a|b$`, `^(ab|cd)*e?$`, `x{2,3}`, `^\d{3}-\d{4}$`, `^[^a-c]{1,3}$`,
		`^(?:[A-Z][a-z]+ ?)+$`, `^\w+@\w+\.com$`, `[0-9]`, `^$`, `^a?b+c*$`, `^(a|ab)(c|bcd)(d*)$`,
		`^[\w.-]+$`, `^.{2,4}$`, `^[a-f0-9]{4}(-[a-f0-9]{2}){2}$`, `(^x|y$)`, `^(?:\+|-)?\d+(?:\.\d+)?$`,
	}
	alphabet := []rune("abcdexyzABZ019.-+@ \u00e9")
	r := rand.New(rand.NewPCG(3, 4))
	for _, pat := range patterns {
		n, err := ParsePattern(pat)
		if err != nil {
			t.Fatalf("%q: %v", pat, err)
		}
		p := NewPool()
		term := lower(t, p, n)
		re := regexp.MustCompile(pat)
		check := func(s string) {
			if got, want := p.Match(term, []byte(s)), re.MatchString(s); got != want {
				t.Fatalf("%q on %q: got %v, want %v", pat, s, got, want)
			}
		}
		for _, s := range []string{"", "a", "ab", "abcd", "abcde", "123-4567", "Hello World", "x@y.com", "-1.5", "ababe", "abcdd"} {
			check(s)
		}
		for k := 0; k < 400; k++ {
			var b strings.Builder
			for j := r.IntN(8); j > 0; j-- {
				b.WriteRune(alphabet[r.IntN(len(alphabet))])
			}
			check(b.String())
		}
	}
}

func TestPatternErrors(t *testing.T) {
	for _, pat := range []string{`(a`, `a)`, `*a`, `[a`, `\1`, `(?<=a)b`, `a\b`, `a^b`, `x(?=y)`, `a{3,2}`, `\p{Nope}`} {
		if _, err := ParsePattern(pat); err == nil {
			t.Errorf("%q: no error", pat)
		}
	}
}

func TestLookahead(t *testing.T) {
	n, err := ParsePattern(`^(?=.*\d)(?=.*[A-Z])(?!.*x).{4,}$`)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool()
	term := lower(t, p, n)
	for s, want := range map[string]bool{"aB1c": true, "aB1": false, "ab12": false, "AB12": true, "AB1x": false, "AAAAAAA9": true} {
		if got := p.Match(term, []byte(s)); got != want {
			t.Errorf("%q: got %v want %v", s, got, want)
		}
	}
}

// TestLookaheadToEnd: a leading lookahead that ends in $ holds the whole
// rest of the text, as the length limit of the hostname format writes it
// ((?=.{1,253}$)); it was refused as an assertion inside a lookahead, so
// every schema with format "hostname" failed to compile.
func TestLookaheadToEnd(t *testing.T) {
	for _, tc := range []struct {
		pat  string
		want map[string]bool
	}{
		{`^(?=.{1,5}$)[a-z]+(\.[a-z]+)*$`, map[string]bool{"abc": true, "ab.cd": true, "ab.cde": false, "a.b.c": true, "abcdef": false, "": false, "a.": false}},
		{`^(?=.{2,3}$)`, map[string]bool{"ab": true, "abc": true, "a": false, "abcd": false}},
		{`^(?!a$).`, map[string]bool{"a": false, "b": true, "ab": true}},
		{`(?=ab$)`, map[string]bool{"ab": true, "xab": true, "abx": false}},
	} {
		n, err := ParsePattern(tc.pat)
		if err != nil {
			t.Errorf("%s: %v", tc.pat, err)
			continue
		}
		p := NewPool()
		term := lower(t, p, n)
		for s, want := range tc.want {
			if got := p.Match(term, []byte(s)); got != want {
				t.Errorf("%s, %q: got %v want %v", tc.pat, s, got, want)
			}
		}
	}
	for _, pat := range []string{`^(?=a$b)c`, `^(?=(a$|b))c`} { // $ not at the lookahead's end
		if _, err := ParsePattern(pat); err == nil {
			t.Errorf("%s: no error", pat)
		}
	}
}

func TestJSONStringEncoding(t *testing.T) {
	p := NewPool()
	anyChar := Lower(p, Rep(Chars(AnyRune...), 0, -1), JSONStringEncoding{})
	for s, want := range map[string]bool{`abc`: true, `a\"b`: true, `a"b`: false, `\n`: true, "\n": false, `\u00e9`: true,
		`\ud800`: false, `\x`: false, `é`: true, `\/`: true, `\u12`: false} {
		if got := p.Match(anyChar, []byte(s)); got != want {
			t.Errorf("any %q: got %v want %v", s, got, want)
		}
	}
	n, _ := ParsePattern(`^a.b$`)
	term := Lower(p, n, JSONStringEncoding{})
	for s, want := range map[string]bool{`a\"b`: true, `axb`: true, `a\nb`: false, `a\tb`: true, `a\u0009b`: true, `a\u0061b`: false} {
		if got := p.Match(term, []byte(s)); got != want {
			t.Errorf("a.b %q: got %v want %v", s, got, want)
		}
	}
}

func TestNumberRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	bounds := []string{"0", "1", "-1", "10", "99", "100", "0.5", "-0.5", "2.25", "-2.25", "1e2", "1.5e-1", "123.456", "-1000", "7", "0.01", "3.0"}
	nums := func() string {
		var b strings.Builder
		if r.IntN(3) == 0 {
			b.WriteByte('-')
		}
		switch r.IntN(4) {
		case 0:
			b.WriteByte('0')
		default:
			b.WriteByte(byte('1' + r.IntN(9)))
			for j := r.IntN(4); j > 0; j-- {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		if r.IntN(2) == 0 {
			b.WriteByte('.')
			for j := 1 + r.IntN(3); j > 0; j-- {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		return b.String()
	}
	rat := func(s string) *big.Rat {
		v, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("bad number %q", s)
		}
		return v
	}
	for iter := 0; iter < 300; iter++ {
		var lo, hi *Bound
		if r.IntN(4) != 0 {
			lo = &Bound{Value: bounds[r.IntN(len(bounds))], Exclusive: r.IntN(2) == 0}
		}
		if r.IntN(4) != 0 {
			hi = &Bound{Value: bounds[r.IntN(len(bounds))], Exclusive: r.IntN(2) == 0}
		}
		integer := r.IntN(2) == 0
		n, err := Number(lo, hi, integer)
		if err != nil {
			t.Fatal(err)
		}
		p := NewPool()
		term := lower(t, p, n)
		desc := fmt.Sprintf("lo=%v hi=%v integer=%v", lo, hi, integer)
		for k := 0; k < 300; k++ {
			s := nums()
			v := rat(s)
			want := !(integer && strings.Contains(s, "."))
			if strings.HasPrefix(s, "-") && v.Sign() == 0 && (lo != nil || hi != nil) {
				continue // "-0" spellings may be refused under bounds
			}
			if lo != nil {
				c := v.Cmp(rat(lo.Value))
				want = want && (c > 0 || c == 0 && !lo.Exclusive)
			}
			if hi != nil {
				c := v.Cmp(rat(hi.Value))
				want = want && (c < 0 || c == 0 && !hi.Exclusive)
			}
			if got := p.Match(term, []byte(s)); got != want {
				t.Fatalf("%s: %q matched %v, want %v", desc, s, got, want)
			}
		}
	}
}

// TestCanonBounded: a term whose text, written out as a tree, doubles at
// every level (a DAG of 60 shared halves) gets no name, at once and
// without spelling it out (it used to spell gigabytes), while small terms
// keep theirs and equal terms of two pools the same one.
func TestCanonBounded(t *testing.T) {
	p := NewPool()
	x := p.Byte('a')
	for range 60 {
		x = p.Or(p.Concat(x, p.Byte('b')), p.Concat(p.Byte('c'), x))
	}
	if s, ok := p.Canon(x); ok || s != "" {
		t.Fatalf("a term of 2^60 leaves named %.60q", s)
	}
	// A chain of 20,000 alternatives (a GBNF chain of rules as one
	// lexeme): naming each of its states costs at most MaxCanon bytes.
	y := p.Byte('z')
	for range 20000 {
		y = p.Or(p.Concat(p.Byte('x'), y), p.Byte('y'))
	}
	for d := y; d != Nothing; d = p.Deriv(d, 'x') {
		if s, ok := p.Canon(d); ok && len(s) > MaxCanon {
			t.Fatalf("a state named with %d bytes", len(s))
		}
	}
	q := NewPool()
	small := func(p *Pool) ID { return p.Concat(p.Byte('a'), p.Or(p.Byte('b'), p.Byte('c'))) }
	s1, ok1 := p.Canon(small(p))
	s2, ok2 := q.Canon(small(q))
	if !ok1 || !ok2 || s1 != s2 || s1 == "" || len(s1) > MaxCanon {
		t.Fatalf("small terms: %q %v, %q %v", s1, ok1, s2, ok2)
	}
}
