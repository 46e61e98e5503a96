package grammar

import (
	"slices"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// item is an Earley item: a position in the flattened productions (the
// dot) and the row where its production began.
type item struct{ pos, org int32 }

// fitem is an item whose dot stands before a terminal, inside that
// terminal's lexeme: q is the lexeme automaton's state after the bytes read
// since the lexeme began. The frontier is the set of such items; it is the
// parser's lexer.
type fitem struct {
	pos, org int32
	q        rx.ID
}

// parser is a byte-level Earley parser whose terminals are regular
// languages. Rows are created only at lexeme boundaries (where a lexeme
// completes), so between boundaries a byte costs one automaton transition
// per frontier item. Boundaries are not decided by a lexer ahead of the
// parser: every position where a lexeme may end is a boundary, and the
// frontier keeps both the lexeme that goes on and the ones that begin, so
// the parser accepts exactly the grammar's language, ambiguous or not.
//
// The parser can be saved and restored cheaply (it only ever appends), which
// is how the mask computation explores tokens.
type parser struct {
	g      *Grammar
	items  []item
	rowAt  []int32 // first item of each row
	accept []bool  // per row: the start rule completes there
	fbuf   []fitem // frontiers; the current one is fbuf[fstart:fend]
	fstart int32
	fend   int32
	atRow  bool // no byte read since the last row was made

	acc      []fitem // scratch: frontier items that completed
	seen     map[item]struct{}
	seenUsed bool
}

// mark is a saved parser state.
type mark struct {
	items, rows, fstart, fend int32
	atRow                     bool
}

func newParser(g *Grammar) *parser {
	p := &parser{g: g, seen: map[item]struct{}{}}
	p.reset()
	return p
}

func (p *parser) reset() {
	p.items, p.rowAt, p.accept, p.fbuf = p.items[:0], p.rowAt[:0], p.accept[:0], p.fbuf[:0]
	p.newRow()
	for _, first := range p.g.first[p.g.start] {
		p.addItem(item{first, 0})
	}
	p.closure(0)
	p.fstart, p.fend = 0, int32(len(p.fbuf))
	p.dedupeFrontier()
	p.atRow = true
}

func (p *parser) save() mark {
	return mark{int32(len(p.items)), int32(len(p.rowAt)), p.fstart, p.fend, p.atRow}
}

func (p *parser) restore(m mark) {
	p.items = p.items[:m.items]
	p.rowAt = p.rowAt[:m.rows]
	p.accept = p.accept[:m.rows]
	p.fbuf = p.fbuf[:m.fend]
	p.fstart, p.fend, p.atRow = m.fstart, m.fend, m.atRow
}

// frontier is the current frontier.
func (p *parser) frontier() []fitem { return p.fbuf[p.fstart:p.fend] }

// accepting reports whether the text read so far is in the language.
func (p *parser) accepting() bool { return p.atRow && p.accept[len(p.accept)-1] }

// alive reports whether the text read so far is a prefix of the language.
func (p *parser) alive() bool { return p.fend > p.fstart || p.accepting() }

// compact moves the current frontier to the start of fbuf, so that a
// long-lived parser does not grow it without bound.
func (p *parser) compact() {
	n := copy(p.fbuf, p.fbuf[p.fstart:p.fend])
	p.fbuf = p.fbuf[:n]
	p.fstart, p.fend = 0, int32(n)
}

func (p *parser) newRow() int32 {
	p.rowAt = append(p.rowAt, int32(len(p.items)))
	p.accept = append(p.accept, false)
	if p.seenUsed {
		clear(p.seen)
		p.seenUsed = false
	}
	return int32(len(p.rowAt) - 1)
}

// addItem adds it to the last row unless it is there already.
func (p *parser) addItem(it item) {
	row := p.items[p.rowAt[len(p.rowAt)-1]:]
	if len(row) < 16 {
		for _, x := range row {
			if x == it {
				return
			}
		}
		if len(row) == 15 { // switching to the set: fill it
			p.seenUsed = true
			for _, x := range row {
				p.seen[x] = struct{}{}
			}
			p.seen[it] = struct{}{}
		}
	} else {
		if _, ok := p.seen[it]; ok {
			return
		}
		p.seen[it] = struct{}{}
	}
	p.items = append(p.items, it)
}

// closure completes and predicts the items of row r (the last row), and
// appends to fbuf a frontier item for each item before a terminal.
func (p *parser) closure(r int32) {
	g := p.g
	for i := int(p.rowAt[r]); i < len(p.items); i++ {
		it := p.items[i]
		if g.isEnd[it.pos] {
			lhs := g.lhs[it.pos]
			if lhs == g.start {
				p.accept[r] = true
				continue
			}
			if it.org == r {
				continue // a nullable rule: its callers were advanced when they predicted it
			}
			o := it.org
			from, to := p.rowAt[o], p.rowAt[o+1]
			for j := from; j < to; j++ {
				x := p.items[j]
				if !g.isEnd[x.pos] && g.flat[x.pos] == sym(lhs) {
					p.addItem(item{x.pos + 1, x.org})
				}
			}
			continue
		}
		s := g.flat[it.pos]
		if s.isTerm() {
			p.fbuf = append(p.fbuf, fitem{it.pos, it.org, g.terms[s.terminal()]})
			continue
		}
		for _, first := range g.first[s] {
			p.addItem(item{first, r})
		}
		if g.nullable[s] {
			p.addItem(item{it.pos + 1, it.org})
		}
	}
}

// step reads byte c and reports whether the text is still a prefix of the
// language. On false the parser is left dead; restore a mark to go on.
func (p *parser) step(c byte) bool {
	pool := p.g.pool
	old := p.fbuf[p.fstart:p.fend]
	ns := int32(len(p.fbuf))
	p.acc = p.acc[:0]
	for _, f := range old {
		q := pool.Next(f.q, c)
		if q == rx.Nothing {
			continue
		}
		if pool.Nullable(q) {
			p.acc = append(p.acc, f)
			if pool.Final(q) {
				continue
			}
		}
		p.fbuf = append(p.fbuf, fitem{f.pos, f.org, q})
	}
	p.atRow = false
	if len(p.acc) > 0 {
		r := p.newRow()
		for _, f := range p.acc {
			p.addItem(item{f.pos + 1, f.org})
		}
		p.closure(r)
		p.atRow = true
	}
	p.fstart, p.fend = ns, int32(len(p.fbuf))
	p.dedupeFrontier()
	return p.alive()
}

// boundary ends, at the current position, the lexemes of the frontier
// items for which done reports true, and makes the frontier the lexemes
// that can begin there (dropping those that go on). It reports whether
// anything can follow or the text can end.
func (p *parser) boundary(done func(f fitem) bool) bool {
	old := p.fbuf[p.fstart:p.fend]
	ns := int32(len(p.fbuf))
	r := p.newRow()
	for _, f := range old {
		if done(f) {
			p.addItem(item{f.pos + 1, f.org})
		}
	}
	p.closure(r)
	p.atRow = true
	p.fstart, p.fend = ns, int32(len(p.fbuf))
	p.dedupeFrontier()
	return p.alive()
}

func (p *parser) dedupeFrontier() {
	f := p.fbuf[p.fstart:p.fend]
	if len(f) < 2 {
		return
	}
	slices.SortFunc(f, func(a, b fitem) int {
		if a.pos != b.pos {
			return int(a.pos - b.pos)
		}
		if a.org != b.org {
			return int(a.org - b.org)
		}
		return int(a.q) - int(b.q)
	})
	f = slices.Compact(f)
	p.fend = p.fstart + int32(len(f))
	p.fbuf = p.fbuf[:p.fend]
}

// feed reads bytes and reports whether the text is still a prefix.
func (p *parser) feed(b []byte) bool {
	for _, c := range b {
		if !p.step(c) {
			return false
		}
	}
	return true
}
