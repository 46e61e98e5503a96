package grammar

import (
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// toyVocab is every string of up to 3 bytes over alphabet, plus an EOG token.
func toyVocab(t testing.TB, alphabet string) *Vocab {
	t.Helper()
	var toks []Token
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		if prefix != "" {
			toks = append(toks, Token{Bytes: []byte(prefix)})
		}
		if n == 0 {
			return
		}
		for i := 0; i < len(alphabet); i++ {
			gen(prefix+alphabet[i:i+1], n-1)
		}
	}
	gen("", 3)
	toks = append(toks, Token{EOG: true})
	v, err := NewVocab(toks)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkMasks walks random paths through the grammar and compares every
// mask with a token-by-token check.
func checkMasks(t *testing.T, c *Constraint, seed uint64, steps int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	mask := make([]uint64, c.v.MaskWords())
	for walk := 0; walk < 20; walk++ {
		m := c.NewMatcher()
		var text []byte
		for s := 0; s < steps; s++ {
			m.FillMask(mask)
			var allowed []int32
			for tok := int32(0); tok < int32(c.v.n); tok++ {
				want := m.Allowed(tok)
				got := mask[tok>>6]&(1<<(tok&63)) != 0
				if got != want {
					t.Fatalf("after %q: token %d (%q) mask %v, check %v", text, tok, c.v.bytes[tok], got, want)
				}
				if want {
					allowed = append(allowed, tok)
				}
			}
			if len(allowed) == 0 {
				t.Fatalf("after %q: nothing allowed (dead end)", text)
			}
			tok := allowed[r.IntN(len(allowed))]
			if err := m.Accept(tok); err != nil {
				t.Fatalf("after %q: accept %d: %v", text, tok, err)
			}
			if m.Ended() {
				break
			}
			text = append(text, c.v.bytes[tok]...)
		}
	}
}

func TestCoreMasks(t *testing.T) {
	v := toyVocab(t, `ab1[],"`)
	// list ::= "[" (item ("," item)*)? "]" ; item ::= list | "a"+ | 1
	b := newBuilder()
	p := b.pool
	list := b.rule("list")
	item := b.rule("item")
	b.add(item, list)
	b.add(item, b.lexeme(p.Plus(p.Byte('a'))))
	b.add(item, b.lit("1"))
	more := b.star(b.seq(b.lit(","), item))
	b.add(list, b.lit("["), b.opt(b.seq(item, more)), b.lit("]"))
	g, err := b.build(list, "test")
	if err != nil {
		t.Fatal(err)
	}
	c := NewConstraint(g, v)
	checkMasks(t, c, 1, 12)

	m := c.NewMatcher()
	for _, s := range []string{"[a", "aa,", "[]", ",1]"} {
		if err := m.AcceptText([]byte(s)); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	}
	if !m.CanEnd() || m.Done() != false && !m.CanEnd() {
		t.Fatal("complete list not accepted")
	}
	if !m.Done() {
		t.Error("closed list should be done")
	}
	if err := m.AcceptText([]byte("a")); err == nil {
		t.Error("text after the end accepted")
	}
}

func TestAmbiguousBoundaries(t *testing.T) {
	// a+ a+ b: the split between the two lexemes is not known while reading.
	v := toyVocab(t, "ab")
	b := newBuilder()
	p := b.pool
	as := b.lexeme(p.Plus(p.Byte('a')))
	root := b.seq(as, as, b.lit("b"))
	g, err := b.build(root, "test")
	if err != nil {
		t.Fatal(err)
	}
	c := NewConstraint(g, v)
	checkMasks(t, c, 2, 6)
	m := c.NewMatcher()
	if err := m.AcceptText([]byte("ab")); err == nil {
		t.Error("ab accepted")
	}
	if err := m.AcceptText([]byte("aaab")); err != nil || !m.CanEnd() {
		t.Errorf("aaab: %v", err)
	}
	_ = rx.Nothing
}
