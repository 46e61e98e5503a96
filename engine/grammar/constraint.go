package grammar

import (
	"errors"
	"fmt"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// ErrRejected is returned when a token or text is not allowed by the
// constraint at that point.
var ErrRejected = errors.New("grammar: not allowed here")

// ErrEnded is returned for input after the generation reached its end.
var ErrEnded = errors.New("grammar: generation already ended")

// Constraint is a Grammar bound to a Vocab: it computes token masks and
// caches what it learns about the grammar's lexemes over the vocabulary. It
// is safe for concurrent use; Matchers of one Constraint take turns on it.
type Constraint struct {
	g *Grammar
	v *Vocab

	// guarded by g.mu
	entries   map[string]*lexEntry
	comps2    map[compKey]*compEntry
	caps      []uint16 // per lexeme state: plainCap+1, 0 unknown
	loopSets  []rx.ByteSet
	loopKnown []bool
	key       []byte
	comps     []comp
	walkStack []walkLevel
	triggers  map[string]*triggerSet
	stats     Stats
}

// Stats describes a Constraint's caches.
type Stats struct {
	// Entries is the number of distinct frontiers whose masks are cached.
	Entries int
	// Lexemes is the number of distinct lexeme states walked over the
	// vocabulary.
	Lexemes int
}

// NewConstraint binds g to v.
func NewConstraint(g *Grammar, v *Vocab) *Constraint {
	return &Constraint{g: g, v: v, entries: map[string]*lexEntry{}, comps2: map[compKey]*compEntry{}}
}

// Grammar returns the constraint's grammar.
func (c *Constraint) Grammar() *Grammar { return c.g }

// Vocab returns the constraint's vocabulary.
func (c *Constraint) Vocab() *Vocab { return c.v }

// Stats reports the constraint's cache sizes.
func (c *Constraint) Stats() Stats {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	return c.stats
}

// Matcher follows one generation under a Constraint: it gives the mask of
// allowed tokens and advances on each token generated. A Matcher is not
// safe for concurrent use; give every sequence its own.
type Matcher struct {
	c     *Constraint
	p     *parser
	ended bool
	lazy  *lazyState // nil unless made by NewLazyMatcher
}

// NewMatcher starts a generation at the beginning of the grammar.
func (c *Constraint) NewMatcher() *Matcher {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	return &Matcher{c: c, p: newParser(c.g)}
}

// FillMask sets in dst (Vocab.MaskWords words, bit t%64 of word t/64 for
// token t) exactly the tokens allowed next: those after which the text can
// still be completed to the grammar's language, and the end-of-generation
// tokens where the text may end. After the end, nothing is allowed.
func (m *Matcher) FillMask(dst []uint64) {
	if len(dst) < m.c.v.MaskWords() {
		panic(fmt.Sprintf("grammar: mask of %d words for a vocabulary of %d tokens", len(dst), m.c.v.n))
	}
	dst = dst[:m.c.v.MaskWords()]
	if m.ended {
		clear(dst)
		return
	}
	m.c.g.mu.Lock()
	defer m.c.g.mu.Unlock()
	if m.free() {
		m.lazyMask(dst)
		return
	}
	m.c.fillMask(m.p, dst)
}

// Accept advances past token tok, or returns an error wrapping ErrRejected
// (leaving the matcher unchanged) when tok is not allowed. An
// end-of-generation token is accepted where the text may end, and ends the
// generation.
func (m *Matcher) Accept(tok int32) error {
	if m.ended {
		return ErrEnded
	}
	if tok < 0 || int(tok) >= m.c.v.n {
		return fmt.Errorf("%w: token %d outside the vocabulary", ErrRejected, tok)
	}
	m.c.g.mu.Lock()
	defer m.c.g.mu.Unlock()
	if m.free() {
		return m.lazyAccept(tok)
	}
	if m.c.v.isEOG(tok) {
		if !m.p.accepting() {
			return fmt.Errorf("%w: end of generation before the grammar is complete", ErrRejected)
		}
		m.ended = true
		return nil
	}
	b := m.c.v.bytes[tok]
	if b == nil {
		return fmt.Errorf("%w: token %d", ErrRejected, tok)
	}
	return m.feedLocked(b, fmt.Sprintf("token %d", tok))
}

// AcceptText advances past text as if tokens spelling it were accepted.
func (m *Matcher) AcceptText(text []byte) error {
	if m.ended {
		return ErrEnded
	}
	m.c.g.mu.Lock()
	defer m.c.g.mu.Unlock()
	if m.free() {
		return fmt.Errorf("grammar: AcceptText on a lazy matcher before its trigger")
	}
	return m.feedLocked(text, fmt.Sprintf("text %q", text))
}

func (m *Matcher) feedLocked(b []byte, what string) error {
	mk := m.p.save()
	if !m.p.feed(b) {
		m.p.restore(mk)
		return fmt.Errorf("%w: %s", ErrRejected, what)
	}
	m.p.compact()
	return nil
}

// Allowed reports whether token tok may come next, without computing a
// whole mask.
func (m *Matcher) Allowed(tok int32) bool {
	if m.ended || tok < 0 || int(tok) >= m.c.v.n {
		return false
	}
	m.c.g.mu.Lock()
	defer m.c.g.mu.Unlock()
	if m.free() {
		mask := make([]uint64, m.c.v.MaskWords())
		m.lazyMask(mask)
		return mask[tok>>6]&(1<<(tok&63)) != 0
	}
	if m.c.v.isEOG(tok) {
		return m.p.accepting()
	}
	b := m.c.v.bytes[tok]
	if b == nil {
		return false
	}
	mk := m.p.save()
	ok := m.p.feed(b)
	m.p.restore(mk)
	return ok
}

// CanEnd reports whether the text so far is complete: an end-of-generation
// token is allowed now.
func (m *Matcher) CanEnd() bool {
	if m.ended {
		return false
	}
	m.c.g.mu.Lock()
	defer m.c.g.mu.Unlock()
	return m.free() || m.p.accepting()
}

// Done reports whether the generation must stop: it ended, or the text is
// complete and nothing can extend it (a JSON value's closing brace).
func (m *Matcher) Done() bool {
	if m.ended {
		return true
	}
	m.c.g.mu.Lock()
	defer m.c.g.mu.Unlock()
	return !m.free() && m.p.accepting() && m.p.fend == m.p.fstart
}

// Ended reports whether an end-of-generation token was accepted.
func (m *Matcher) Ended() bool { return m.ended }
