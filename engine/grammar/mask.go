package grammar

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// How a mask is computed
//
// The parser's frontier (the lexemes in progress, each at an automaton
// state) decides most of a mask alone. For a frontier F, every token falls
// in one of three groups:
//
//   - inside: some lexeme of F can read the whole token and still go on.
//     The token is allowed whatever the parser's rows hold.
//   - dead: every lexeme of F dies inside the token, and none could end
//     before it died. The token is refused.
//   - boundary: every lexeme dies inside the token, but some could end at
//     a position j inside it. Whether the token is allowed depends on what
//     the parser lets begin at j, and on the rest of the token.
//
// The first two depend only on F's lexeme states, never on the rows, so a
// lexEntry caches them per distinct frontier (its lexeme states, sorted):
// a bit set of the inside tokens, and the boundary tokens grouped by which
// lexemes end (acc) with the trie of their remainders. Computing a mask is
// then: copy the inside set; for each group, end its lexemes in the parser
// once and walk the remainders' trie with the parser (a few hundred short
// strings for a JSON string body, against 128k tokens); set the
// end-of-generation tokens if the text may end here. Entries are built on
// first use by one walk of the vocabulary trie with the lexeme automata
// alone, pruning every subtree a byte kills and every boundary whose next
// byte cannot begin anything that may follow the lexeme.

// comp is one lexeme state of a frontier.
type comp struct {
	t int32
	q rx.ID
}

// lexEntry is the cached part of the masks of one frontier.
type lexEntry struct {
	comps  []comp
	inside []uint64 // bit set of inside tokens (nil when insideList is used)
	list   []int32  // inside tokens, when few
	groups []group
}

// group is the boundary tokens whose lexemes end at the same set of comps.
type group struct {
	acc  []int32 // indices into comps of the lexemes that end
	rest trie    // the remainders after the boundary, with their tokens
}

// sparseInside is the size under which inside tokens are kept as a list.
const sparseInside = 2048

// lexKey encodes the frontier's lexeme states (those that can still read
// a byte), sorted and deduplicated, into buf; comps receives them.
func (c *Constraint) lexKey(p *parser, buf []byte, comps []comp) ([]byte, []comp) {
	pool := c.g.pool
	comps = comps[:0]
	for _, f := range p.frontier() {
		if pool.Final(f.q) {
			continue
		}
		comps = append(comps, comp{c.g.flat[f.pos].terminal(), f.q})
	}
	slices.SortFunc(comps, func(a, b comp) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return int(a.q) - int(b.q)
	})
	comps = slices.Compact(comps)
	buf = buf[:0]
	for _, x := range comps {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(x.t))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(x.q))
	}
	return buf, comps
}

// tupleDFA runs several lexeme automata side by side over the same bytes:
// its states are tuples of their states, numbered as they are met.
type tupleDFA struct {
	pool   *rx.Pool
	k      int
	comps  []comp
	tuples []rx.ID          // k per state
	index  map[string]int32 // tuple bytes -> state
	rows   [][]int32        // per state: next state per byte; -1 unknown, -2 dead
	acc    []int32          // per state: index into accSets, or -1
	accs   [][]int32        // distinct sets of accepting components
	accIdx map[string]int32
	key    []byte
}

const (
	tupleUnknown = -1
	tupleDead    = -2
)

func newTupleDFA(pool *rx.Pool, comps []comp) *tupleDFA {
	d := &tupleDFA{pool: pool, k: len(comps), comps: comps, index: map[string]int32{}, accIdx: map[string]int32{}}
	if len(comps) == 1 {
		return d // walkOne runs the lexeme's automaton directly
	}
	start := make([]rx.ID, len(comps))
	for i, c := range comps {
		start[i] = c.q
	}
	d.intern(start)
	return d
}

func (d *tupleDFA) intern(t []rx.ID) int32 {
	d.key = d.key[:0]
	for _, q := range t {
		d.key = binary.LittleEndian.AppendUint32(d.key, uint32(q))
	}
	if s, ok := d.index[string(d.key)]; ok {
		return s
	}
	s := int32(len(d.rows))
	d.index[string(d.key)] = s
	d.tuples = append(d.tuples, t...)
	row := make([]int32, 256)
	for i := range row {
		row[i] = tupleUnknown
	}
	d.rows = append(d.rows, row)
	// Which components accept here.
	var acc []int32
	for i, q := range t {
		if q != rx.Nothing && d.pool.Nullable(q) {
			acc = append(acc, int32(i))
		}
	}
	a := int32(-1)
	if len(acc) > 0 {
		d.key = d.key[:0]
		for _, i := range acc {
			d.key = binary.LittleEndian.AppendUint32(d.key, uint32(i))
		}
		var ok bool
		if a, ok = d.accIdx[string(d.key)]; !ok {
			a = int32(len(d.accs))
			d.accIdx[string(d.key)] = a
			d.accs = append(d.accs, acc)
		}
	}
	d.acc = append(d.acc, a)
	return s
}

// tuplesComp returns component i.
func (d *tupleDFA) tuplesComp(i int32) comp { return d.comps[i] }

// next is the state after byte c, or tupleDead.
func (d *tupleDFA) next(s int32, c byte) int32 {
	if n := d.rows[s][c]; n != tupleUnknown {
		return n
	}
	t := make([]rx.ID, d.k)
	alive := false
	for i := 0; i < d.k; i++ {
		q := d.tuples[int(s)*d.k+i]
		if q != rx.Nothing {
			q = d.pool.Next(q, c)
		}
		t[i] = q
		alive = alive || q != rx.Nothing
	}
	n := int32(tupleDead)
	if alive {
		n = d.intern(t)
	}
	d.rows[s][c] = n
	return n
}

// boundaryRec is a subtree of the vocabulary trie whose tokens all die at
// its root, with a lexeme boundary at depth `at` on its path.
type boundaryRec struct {
	acc  int32
	at   int32
	node int32
}

// buildEntry computes the lexEntry of a frontier by one walk of the trie.
func (c *Constraint) buildEntry(comps []comp) *lexEntry {
	e := &lexEntry{comps: slices.Clone(comps)}
	if len(comps) == 0 {
		return e
	}
	v, g := c.v, c.g
	d := newTupleDFA(g.pool, comps)
	inside := make([]uint64, v.MaskWords())
	var records []boundaryRec
	if len(comps) == 1 {
		records = c.walkOne(comps[0].q, d, inside)
	} else {
		records = c.walkTuple(d, inside)
	}
	count := 0
	for _, w := range inside {
		count += bits.OnesCount64(w)
	}
	if count < sparseInside {
		e.list = make([]int32, 0, count)
		for i, w := range inside {
			for w != 0 {
				e.list = append(e.list, int32(i*64+bits.TrailingZeros64(w)))
				w &= w - 1
			}
		}
	} else {
		e.inside = inside
	}
	// Group the boundary records by acc set and build their tries.
	tr := &v.trie
	slices.SortFunc(records, func(a, b boundaryRec) int { return int(a.acc - b.acc) })
	for len(records) > 0 {
		acc := records[0].acc
		var es []entry
		k := 0
		for k < len(records) && records[k].acc == acc {
			r := records[k]
			for node := r.node; node < tr.next[r.node]; node++ {
				for _, t := range tr.tokens(node) {
					es = append(es, entry{v.bytes[t][r.at:], t})
				}
			}
			k++
		}
		records = records[k:]
		e.groups = append(e.groups, group{acc: d.accs[acc], rest: buildTrie(es)})
	}
	return e
}

// maxDepth bounds the trie depth walked (tokens are at most 1025 bytes).
const maxDepth = 1100

// walkOne is the walk for a frontier of one lexeme state, straight on the
// lexeme's automaton: it sets the inside tokens and returns the boundaries.
func (c *Constraint) walkOne(q0 rx.ID, d *tupleDFA, inside []uint64) []boundaryRec {
	pool, g := c.g.pool, c.g
	tr := &c.v.trie
	tb, tnext, tok0, toks := tr.b, tr.next, tr.tok0, tr.toks
	n := int32(len(tb))
	var (
		rows    [maxDepth + 1][]rx.ID
		states  [maxDepth + 1]rx.ID
		pathB   [maxDepth + 1]byte
		ends    [maxDepth + 1]int32
		records []boundaryRec
	)
	follow := g.follow[d.tuplesComp(0).t]
	depth := 0
	states[0], rows[0], ends[0] = q0, pool.Row(q0), n
	for i := int32(1); i < n; {
		for i >= ends[depth] {
			depth--
		}
		b := tb[i]
		q := rows[depth][b]
		if q == rx.Nothing {
			for a := 1; a <= depth; a++ {
				if !pool.Nullable(states[a]) {
					continue
				}
				first := b
				if a < depth {
					first = pathB[a+1]
				}
				if follow.Has(first) {
					records = append(records, boundaryRec{0, int32(a), i})
				}
			}
			i = tnext[i]
			continue
		}
		depth++
		states[depth], rows[depth], pathB[depth], ends[depth] = q, pool.Row(q), b, tnext[i]
		for _, t := range toks[tok0[i]:tok0[i+1]] {
			inside[t>>6] |= 1 << (t & 63)
		}
		i++
	}
	if len(records) > 0 && len(d.accs) == 0 {
		d.accs = append(d.accs, []int32{0})
	}
	return records
}

// walkTuple is the walk for a frontier of several lexeme states.
func (c *Constraint) walkTuple(d *tupleDFA, inside []uint64) []boundaryRec {
	g := c.g
	tr := &c.v.trie
	tb, tnext, tok0, toks := tr.b, tr.next, tr.tok0, tr.toks
	n := int32(len(tb))
	var (
		states  [maxDepth + 1]int32
		pathB   [maxDepth + 1]byte
		ends    [maxDepth + 1]int32
		records []boundaryRec
		follow  []rx.ByteSet
	)
	followOf := func(a int32) *rx.ByteSet {
		for int(a) >= len(follow) {
			var s rx.ByteSet
			for _, ci := range d.accs[len(follow)] {
				s = s.Union(g.follow[d.tuplesComp(ci).t])
			}
			follow = append(follow, s)
		}
		return &follow[a]
	}
	depth := 0
	ends[0] = n
	for i := int32(1); i < n; {
		for i >= ends[depth] {
			depth--
		}
		b := tb[i]
		s := d.next(states[depth], b)
		if s == tupleDead {
			for a := 1; a <= depth; a++ {
				acc := d.acc[states[a]]
				if acc < 0 {
					continue
				}
				first := b
				if a < depth {
					first = pathB[a+1]
				}
				if followOf(acc).Has(first) {
					records = append(records, boundaryRec{acc, int32(a), i})
				}
			}
			i = tnext[i]
			continue
		}
		depth++
		states[depth], pathB[depth], ends[depth] = s, b, tnext[i]
		for _, t := range toks[tok0[i]:tok0[i+1]] {
			inside[t>>6] |= 1 << (t & 63)
		}
		i++
	}
	return records
}

// fillMask writes into dst the tokens allowed after what p has read.
func (c *Constraint) fillMask(p *parser, dst []uint64) {
	clear(dst)
	c.key, c.comps = c.lexKey(p, c.key, c.comps)
	e := c.entries[string(c.key)]
	if e == nil {
		e = c.buildEntry(c.comps)
		c.entries[string(c.key)] = e
		c.stats.Entries++
	}
	if e.inside != nil {
		copy(dst, e.inside)
	} else {
		for _, t := range e.list {
			dst[t>>6] |= 1 << (t & 63)
		}
	}
	if len(e.groups) > 0 {
		pool := c.g.pool
		for gi := range e.groups {
			gr := &e.groups[gi]
			m := p.save()
			done := func(f fitem) bool {
				if pool.Final(f.q) {
					return false
				}
				x := comp{c.g.flat[f.pos].terminal(), f.q}
				i, ok := slices.BinarySearchFunc(e.comps, x, func(a, b comp) int {
					if a.t != b.t {
						return int(a.t - b.t)
					}
					return int(a.q) - int(b.q)
				})
				if !ok {
					return false
				}
				_, in := slices.BinarySearch(gr.acc, int32(i))
				return in
			}
			if p.boundary(done) && p.fend > p.fstart {
				c.walk(p, &gr.rest, dst)
			}
			p.restore(m)
		}
	}
	if p.accepting() {
		for _, t := range c.v.eog {
			dst[t>>6] |= 1 << (t & 63)
		}
	}
}

// walk sets in dst the tokens of tr whose bytes p can read, parsing them.
func (c *Constraint) walk(p *parser, tr *trie, dst []uint64) {
	n := int32(tr.nodes())
	stack := c.walkStack[:0]
	stack = append(stack, walkLevel{n, p.save()})
	for i := int32(1); i < n; {
		for i >= stack[len(stack)-1].end {
			stack = stack[:len(stack)-1]
		}
		p.restore(stack[len(stack)-1].m)
		if !p.step(tr.b[i]) {
			i = tr.next[i]
			continue
		}
		for _, t := range tr.tokens(i) {
			dst[t>>6] |= 1 << (t & 63)
		}
		stack = append(stack, walkLevel{tr.next[i], p.save()})
		i++
	}
	p.restore(stack[0].m)
	c.walkStack = stack[:0]
}

// walkLevel is one level of walk's depth-first search: the end of a
// subtree and the parser state after its root.
type walkLevel struct {
	end int32
	m   mark
}

// countMask returns the number of tokens in mask and the first one.
func countMask(mask []uint64) (int, int32) {
	n, first := 0, int32(-1)
	for i, w := range mask {
		if w == 0 {
			continue
		}
		if first < 0 {
			first = int32(i*64 + bits.TrailingZeros64(w))
		}
		n += bits.OnesCount64(w)
	}
	return n, first
}
