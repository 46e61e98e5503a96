package grammar

import (
	"bytes"
	"strings"
)

// Lazy (triggered) constraints let a model write freely until it starts a
// structured part itself — a tool call after some text, with tool_choice
// "auto" — and from there hold it to the grammar. The grammar describes
// the structured part from the trigger on (a Hermes tool call grammar
// begins with Special("<tool_call>")). While free, every token is allowed
// except one that would complete a trigger and go on with text the grammar
// refuses.

// lazyState is a Matcher's free-text state.
type lazyState struct {
	trig    *triggerSet
	tail    []byte // the end of the free text, shorter than the longest trigger
	started bool

	// A thinking model's reasoning does not trigger (GateReasoning).
	block *ReasoningBlock
}

// Gate is how a thinking model's reply marks its reasoning, which may
// mention a trigger ("I will call <tool_call> ...") without starting the
// structured part: triggers count only once the reasoning has ended.
type Gate struct {
	// Open and Close are the reasoning block's tags ("<think>", "</think>").
	Open, Close string
	// StartsOpen: the prompt opened the block, so the reply starts inside
	// it; else a reply that begins (after whitespace) with Open reasons.
	StartsOpen bool
}

// GateReasoning makes a lazy matcher's triggers wait for the end of a
// thinking model's reasoning. A matcher that is not lazy is left as it is.
func (m *Matcher) GateReasoning(g Gate) {
	if m.lazy == nil || g.Open == "" || g.Close == "" {
		return
	}
	m.lazy.block = NewReasoningBlock(g)
}

// gateAccept follows the reasoning block through free text d (a token's
// text); it reports whether d was reasoning, which no trigger may read.
func (l *lazyState) gateAccept(d []byte) bool {
	reasoning, _, after, closed := l.block.Feed(d)
	if closed {
		// The rest of the token is free text, for the triggers to read.
		l.tail = append(l.tail[:0], after[max(0, len(after)-(l.trig.longest-1)):]...)
	}
	return reasoning
}

// ReasoningBlock follows a thinking model's reasoning block (Gate) through
// its reply, read a piece (a token's text) at a time: a lazy matcher's
// triggers wait for its end, and a reasoning budget counts its tokens.
type ReasoningBlock struct {
	gate      Gate
	inside    bool   // in the block
	undecided bool   // the reply so far may still open it
	head      []byte // the reply while undecided
	tail      []byte // the end of the reasoning, shorter than gate.Close
}

// NewReasoningBlock returns a block not yet read into: open when the
// prompt opened it (g.StartsOpen), else opened by a reply that begins,
// after whitespace, with g.Open.
func NewReasoningBlock(g Gate) *ReasoningBlock {
	return &ReasoningBlock{gate: g, inside: g.StartsOpen, undecided: !g.StartsOpen}
}

// Open reports whether the reply is in the block or may still open it.
func (b *ReasoningBlock) Open() bool { return b.inside || b.undecided }

// Inside reports whether the reply is in the block.
func (b *ReasoningBlock) Inside() bool { return b.inside }

// Feed reads the reply's next piece d. reasoning reports whether d was
// read in the block (its tags included); body is d's reasoning text (what
// follows an opening tag d holds) when d does not close the block; when it
// does, closed is true and after is what follows the closing tag. While
// the reply may still open the block, nothing is reasoning yet.
func (b *ReasoningBlock) Feed(d []byte) (reasoning bool, body, after []byte, closed bool) {
	g := b.gate
	if b.undecided {
		b.head = append(b.head, d...)
		h := bytes.TrimLeft(b.head, " \t\r\n")
		switch {
		case bytes.HasPrefix(h, []byte(g.Open)):
			b.undecided, b.inside, b.head = false, true, nil
			d = h[len(g.Open):]
		case bytes.HasPrefix([]byte(g.Open), h):
			return false, nil, nil, false
		default:
			b.undecided, b.head = false, nil
			return false, nil, nil, false
		}
	}
	if !b.inside {
		return false, nil, nil, false
	}
	text := append(b.tail, d...)
	if i := bytes.Index(text, []byte(g.Close)); i >= 0 {
		b.inside, b.tail = false, nil
		return true, nil, text[i+len(g.Close):], true
	}
	keep := min(len(text), len(g.Close)-1)
	b.tail = append([]byte(nil), text[len(text)-keep:]...)
	return true, d, nil, false
}

// End ends the block from outside (a reasoning budget wrote its closing
// tag).
func (b *ReasoningBlock) End() { b.inside, b.undecided, b.tail = false, false, nil }

// Closing reports whether the reasoning read so far ends with the start
// of the closing tag: the model may be writing it.
func (b *ReasoningBlock) Closing() bool {
	for k := min(len(b.gate.Close)-1, len(b.tail)); k > 0; k-- {
		if bytes.HasSuffix(b.tail, []byte(b.gate.Close[:k])) {
			return true
		}
	}
	return false
}

// triggerSet is a Constraint's precomputed view of a list of triggers.
type triggerSet struct {
	triggers [][]byte
	longest  int
	// starts[i][k]: tokens whose text begins with triggers[i][k:] (k >= 1),
	// completing trigger i after a free text ending in triggers[i][:k].
	starts [][][]int32
	within [][]int32 // within[i]: tokens whose text holds all of trigger i
}

// display returns the text of token bytes b (a special token's name).
func display(b []byte) []byte {
	if len(b) > 0 && b[0] == SpecialMarker {
		return b[1:]
	}
	return b
}

func (c *Constraint) triggerSet(triggers []string) *triggerSet {
	key := strings.Join(triggers, "\x00")
	if t := c.triggers[key]; t != nil {
		return t
	}
	t := &triggerSet{}
	for _, s := range triggers {
		if s == "" {
			continue
		}
		t.triggers = append(t.triggers, []byte(s))
		t.longest = max(t.longest, len(s))
	}
	t.starts = make([][][]int32, len(t.triggers))
	t.within = make([][]int32, len(t.triggers))
	for i, tr := range t.triggers {
		t.starts[i] = make([][]int32, len(tr))
		for tok, b := range c.v.bytes {
			d := display(b)
			if len(d) == 0 {
				continue
			}
			if bytes.Contains(d, tr) {
				t.within[i] = append(t.within[i], int32(tok))
			}
			for k := 1; k < len(tr); k++ {
				rest := tr[k:]
				if len(d) >= len(rest) && bytes.HasPrefix(d, rest) {
					t.starts[i][k] = append(t.starts[i][k], int32(tok))
				}
			}
		}
	}
	if c.triggers == nil {
		c.triggers = map[string]*triggerSet{}
	}
	c.triggers[key] = t
	return t
}

// NewLazyMatcher starts a generation that is free text until one of
// triggers appears in it; from the trigger's first byte on, the text must
// follow the grammar. With no trigger it is NewMatcher.
func (c *Constraint) NewLazyMatcher(triggers []string) *Matcher {
	m := c.NewMatcher()
	if len(triggers) == 0 {
		return m
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	m.lazy = &lazyState{trig: c.triggerSet(triggers)}
	if len(m.lazy.trig.triggers) == 0 {
		m.lazy = nil
	}
	return m
}

// Triggered reports whether a lazy matcher's grammar has started (always
// true for a matcher that is not lazy).
func (m *Matcher) Triggered() bool { return m.lazy == nil || m.lazy.started }

// free reports whether the matcher is in free text.
func (m *Matcher) free() bool { return m.lazy != nil && !m.lazy.started }

// triggerFeed finds the first trigger in the free text's tail followed by
// token tok, and returns the bytes the grammar must read from the
// trigger's start on.
func (l *lazyState) triggerFeed(v *Vocab, tok int32) ([]byte, bool) {
	b := v.bytes[tok]
	d := display(b)
	text := append(append([]byte(nil), l.tail...), d...)
	at := -1
	for _, tr := range l.trig.triggers {
		if i := bytes.Index(text, tr); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return nil, false
	}
	if at < len(l.tail) {
		return append(append([]byte(nil), l.tail[at:]...), b...), true
	}
	o := at - len(l.tail)
	if o == 0 {
		return b, true // the whole token, a special one as itself
	}
	return d[o:], true
}

// lazyMask fills dst for a matcher in free text.
func (m *Matcher) lazyMask(dst []uint64) {
	v := m.c.v
	for i := range dst {
		dst[i] = ^uint64(0)
	}
	if r := v.n % 64; r != 0 {
		dst[len(dst)-1] = 1<<r - 1
	}
	l := m.lazy
	if l.block != nil && l.block.inside {
		return // reasoning: every token, no trigger
	}
	check := func(tok int32) {
		if dst[tok>>6]&(1<<(tok&63)) == 0 {
			return
		}
		feed, ok := l.triggerFeed(v, tok)
		if !ok {
			return
		}
		p := newParser(m.c.g)
		if !p.feed(feed) {
			dst[tok>>6] &^= 1 << (tok & 63)
		}
	}
	for i, tr := range l.trig.triggers {
		for _, tok := range l.trig.within[i] {
			check(tok)
		}
		for k := 1; k < len(tr); k++ {
			if bytes.HasSuffix(l.tail, tr[:k]) {
				for _, tok := range l.trig.starts[i][k] {
					check(tok)
				}
			}
		}
	}
}

// lazyAccept advances a matcher in free text past tok.
func (m *Matcher) lazyAccept(tok int32) error {
	v := m.c.v
	l := m.lazy
	if v.isEOG(tok) {
		m.ended = true
		return nil
	}
	if l.block != nil && l.block.Open() && l.gateAccept(display(v.bytes[tok])) {
		return nil
	}
	if feed, ok := l.triggerFeed(v, tok); ok {
		p := newParser(m.c.g)
		if !p.feed(feed) {
			return ErrRejected
		}
		p.compact()
		m.p, l.started, l.tail = p, true, nil
		return nil
	}
	l.tail = append(l.tail, display(v.bytes[tok])...)
	if keep := l.trig.longest - 1; len(l.tail) > keep {
		l.tail = append(l.tail[:0], l.tail[len(l.tail)-keep:]...)
	}
	return nil
}
