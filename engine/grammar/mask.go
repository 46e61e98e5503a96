package grammar

import (
	"encoding/binary"
	"fmt"
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

// compEntry is the cached part of the masks for one lexeme state: the
// tokens the lexeme reads whole and can go on after (inside), and the
// remainders of the tokens it could end inside, with the tokens they
// belong to (rest). A frontier's inside set is the union of its lexemes'
// (a token is inside if one lexeme survives it), and its boundary tokens
// are those of each lexeme, each ended alone: ending several lexemes at
// one position allows exactly the union of what ending each allows.
type compEntry struct {
	inside []uint64 // bit set (nil when list is used)
	list   []int32  // inside tokens, when few
	rest   trie
}

// lexEntry is the cached part of the masks of one frontier.
type lexEntry struct {
	comps  []comp
	inside []uint64
	list   []int32
	rests  []*trie // per comp: its boundary remainders (nil: none)
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
	slices.SortFunc(comps, cmpComp)
	comps = slices.Compact(comps)
	buf = buf[:0]
	for _, x := range comps {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(x.t))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(x.q))
	}
	return buf, comps
}

func cmpComp(a, b comp) int {
	if a.t != b.t {
		return int(a.t - b.t)
	}
	return int(a.q) - int(b.q)
}

// boundaryRec is a subtree of the vocabulary trie whose tokens all die at
// its root, with a lexeme boundary at depth `at` on its path.
type boundaryRec struct {
	at   int32
	node int32
}

// entry returns the cached entry of a frontier, building it on first use.
func (c *Constraint) entry(key []byte, comps []comp) *lexEntry {
	if e := c.entries[string(key)]; e != nil {
		return e
	}
	e := &lexEntry{comps: slices.Clone(comps), rests: make([]*trie, len(comps))}
	var words []uint64
	for i, x := range comps {
		ce := c.compEntry(x)
		if ce.rest.nodes() > 1 {
			e.rests[i] = &ce.rest
		}
		if len(comps) == 1 {
			e.inside, e.list = ce.inside, ce.list
			break
		}
		if words == nil {
			words = make([]uint64, c.v.MaskWords())
		}
		if ce.inside != nil {
			for w, x := range ce.inside {
				words[w] |= x
			}
		} else {
			for _, t := range ce.list {
				words[t>>6] |= 1 << (t & 63)
			}
		}
	}
	if words != nil {
		e.inside, e.list = sparse(words)
	}
	c.entries[string(key)] = e
	c.stats.Entries++
	return e
}

// sparse returns words, or the list of its tokens when they are few.
func sparse(words []uint64) ([]uint64, []int32) {
	count := 0
	for _, w := range words {
		count += bits.OnesCount64(w)
	}
	if count >= sparseInside {
		return words, nil
	}
	list := make([]int32, 0, count)
	for i, w := range words {
		for w != 0 {
			list = append(list, int32(i*64+bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return nil, list
}

// compEntry returns the entry of one lexeme state, building it by a walk
// of the vocabulary trie with the lexeme's automaton.
func (c *Constraint) compEntry(x comp) *compEntry {
	key := compKey{x.q, c.g.follow[x.t]}
	if ce := c.comps2[key]; ce != nil {
		return ce
	}
	// A state no token can tell from a simpler one (a long counted string
	// far from its limit) shares that one's entry.
	if h := c.g.pool.Horizon(x.q, c.v.maxLen+1); h != x.q {
		ce := c.compEntry(comp{x.t, h})
		c.comps2[key] = ce
		return ce
	}
	// Another grammar over the same vocabulary may have walked the same
	// lexeme state already (a plain string body, a number).
	// (A state too large to name is walked for this grammar alone.)
	name, named := c.g.pool.Canon(x.q)
	if named {
		follow := c.g.follow[x.t]
		name += fmt.Sprintf("/%x.%x.%x.%x", follow[0], follow[1], follow[2], follow[3])
		if ce := c.v.sharedEntry(name); ce != nil {
			c.comps2[key] = ce
			return ce
		}
	}
	inside := make([]uint64, c.v.MaskWords())
	records := c.walkOne(x, inside)
	ce := &compEntry{}
	ce.inside, ce.list = sparse(inside)
	tr := &c.v.trie
	var es []entry
	for _, r := range records {
		for _, t := range tr.toks[tr.tok0[r.node]:tr.tok0[tr.next[r.node]]] {
			es = append(es, entry{c.v.bytes[t][r.at:], t})
		}
	}
	ce.rest = buildTrie(es)
	c.comps2[key] = ce
	if named {
		c.v.shareEntry(name, ce)
	}
	c.stats.Lexemes++
	return ce
}

// compKey identifies a compEntry: the walk depends on the lexeme state
// and, through boundary pruning, on what may follow the lexeme.
type compKey struct {
	q      rx.ID
	follow rx.ByteSet
}

// maxDepth bounds the trie depth walked (tokens are at most 1025 bytes).
const maxDepth = 1100

// walkOne walks the trie with one lexeme's automaton from state x.q: it
// sets the inside tokens and returns the boundaries worth trying (those
// whose next byte can begin something that may follow the lexeme). Where
// the automaton loops on every plain character (a string body) and a
// subtree holds only plain text below, the subtree is inside whole.
func (c *Constraint) walkOne(x comp, inside []uint64) []boundaryRec {
	pool := c.g.pool
	tr := &c.v.trie
	tb, tnext, tok0, toks, plain, pchars, below := tr.b, tr.next, tr.tok0, tr.toks, c.v.plainBelow, c.v.plainChars, c.v.below
	n := int32(len(tb))
	var (
		rows    [maxDepth + 1][]rx.ID
		states  [maxDepth + 1]rx.ID
		pathB   [maxDepth + 1]byte
		ends    [maxDepth + 1]int32
		records []boundaryRec
	)
	follow := c.g.follow[x.t]
	depth := 0
	states[0], rows[0], ends[0] = x.q, pool.Row(x.q), n
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
					records = append(records, boundaryRec{int32(a), i})
				}
			}
			i = tnext[i]
			continue
		}
		var ls rx.ByteSet
		if int(q) < len(c.loopKnown) && c.loopKnown[q] {
			ls = c.loopSets[q]
		} else {
			ls = c.loopSet(q)
		}
		if below[i].Intersect(ls) == below[i] || plain[i] && c.plainCapFast(q) >= int(pchars[i]) {
			for _, t := range toks[tok0[i]:tok0[tnext[i]]] {
				inside[t>>6] |= 1 << (t & 63)
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
	return records
}

// loopSet returns the bytes that take state q back to q: a subtree whose
// bytes below are all such bytes is inside whole.
func (c *Constraint) loopSet(q rx.ID) rx.ByteSet {
	if int(q) < len(c.loopSets) && c.loopKnown[q] {
		return c.loopSets[q]
	}
	if int(q) >= len(c.loopSets) {
		n := int(q) + 1 - len(c.loopSets)
		c.loopSets = append(c.loopSets, make([]rx.ByteSet, n)...)
		c.loopKnown = append(c.loopKnown, make([]bool, n)...)
	}
	var s rx.ByteSet
	for b, t := range c.g.pool.Row(q) {
		if t == q {
			s.Add(byte(b))
		}
	}
	c.loopSets[q], c.loopKnown[q] = s, true
	return s
}

// plainCap returns how many plain characters (see Vocab.plainBelow)
// state q can read, any of them, each taking it to one same next state
// without passing an accepting state (maxPlainCap: unlimited, as a string
// body; a string with maxLength counts down). A subtree of only plain text
// no longer than that is inside whole.
func (c *Constraint) plainCap(q rx.ID) int {
	if int(q) < len(c.caps) {
		if v := c.caps[q]; v != 0 {
			return int(v - 1)
		}
	} else {
		c.caps = append(c.caps, make([]uint16, int(q)+1-len(c.caps))...)
	}
	// Follow the chain of uniform steps iteratively, then fill it in.
	var chain []rx.ID
	cur := q
	n := 0
	for n < maxPlainCap {
		if int(cur) < len(c.caps) && c.caps[cur] != 0 {
			n += int(c.caps[cur] - 1)
			break
		}
		next, ok := c.plainStep(cur)
		if !ok {
			break
		}
		chain = append(chain, cur)
		n++
		if next == cur || slices.Contains(chain, next) {
			n = maxPlainCap
			break
		}
		cur = next
	}
	n = min(n, maxPlainCap)
	if len(chain) == 0 {
		c.setCap(q, 0)
		return 0
	}
	for k, s := range chain {
		c.setCap(s, min(maxPlainCap, n-k))
	}
	return int(c.caps[q] - 1)
}

// plainCapFast is plainCap with its cached value read inline.
func (c *Constraint) plainCapFast(q rx.ID) int {
	if int(q) < len(c.caps) {
		if v := c.caps[q]; v != 0 {
			return int(v - 1)
		}
	}
	return c.plainCap(q)
}

// maxPlainCap stands for an unlimited plainCap.
const maxPlainCap = 1000

func (c *Constraint) setCap(q rx.ID, v int) {
	if int(q) >= len(c.caps) {
		c.caps = append(c.caps, make([]uint16, int(q)+1-len(c.caps))...)
	}
	c.caps[q] = uint16(v + 1)
}

// plainStep returns the state every plain character takes q to, when it
// is one state, alive, and no accepting state is met on the way.
func (c *Constraint) plainStep(q rx.ID) (rx.ID, bool) {
	pool := c.g.pool
	if pool.Nullable(q) {
		return 0, false
	}
	row := pool.Row(q)
	to := row['a']
	if to == rx.Nothing || pool.Nullable(to) {
		return 0, false
	}
	for b := 0x20; b < 0x7F; b++ {
		if b != '"' && b != '\\' && row[b] != to {
			return 0, false
		}
	}
	// Multi-byte characters: lead byte ranges with their allowed second
	// byte, then continuation bytes, must come back to q.
	type lead struct {
		lo, hi   byte // lead bytes
		lo2, hi2 byte // second byte
		n        int  // bytes in the character
	}
	leads := []lead{{0xC2, 0xDF, 0x80, 0xBF, 2}, {0xE0, 0xE0, 0xA0, 0xBF, 3}, {0xE1, 0xEC, 0x80, 0xBF, 3},
		{0xED, 0xED, 0x80, 0x9F, 3}, {0xEE, 0xEF, 0x80, 0xBF, 3}, {0xF0, 0xF0, 0x90, 0xBF, 4},
		{0xF1, 0xF3, 0x80, 0xBF, 4}, {0xF4, 0xF4, 0x80, 0x8F, 4}}
	// through returns whether every byte of lo..hi takes state s to an
	// alive, non-accepting state, and the distinct states reached.
	through := func(s rx.ID, lo, hi byte, last bool) ([]rx.ID, bool) {
		var out []rx.ID
		r := pool.Row(s)
		for b := int(lo); b <= int(hi); b++ {
			t := r[b]
			if t == rx.Nothing {
				return nil, false
			}
			if last {
				if t != to {
					return nil, false
				}
				continue
			}
			if pool.Nullable(t) {
				return nil, false
			}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
		return out, true
	}
	for _, l := range leads {
		s1, ok := through(q, l.lo, l.hi, false)
		if !ok {
			return 0, false
		}
		for _, a := range s1 {
			s2, ok := through(a, l.lo2, l.hi2, l.n == 2)
			if !ok {
				return 0, false
			}
			for k := 3; k <= l.n; k++ {
				var next []rx.ID
				for _, b := range s2 {
					s3, ok := through(b, 0x80, 0xBF, k == l.n)
					if !ok {
						return 0, false
					}
					next = append(next, s3...)
				}
				s2 = next
			}
		}
	}
	return to, true
}

// fillMask writes into dst the tokens allowed after what p has read.
func (c *Constraint) fillMask(p *parser, dst []uint64) {
	clear(dst)
	c.key, c.comps = c.lexKey(p, c.key, c.comps)
	e := c.entry(c.key, c.comps)
	if e.inside != nil {
		copy(dst, e.inside)
	} else {
		for _, t := range e.list {
			dst[t>>6] |= 1 << (t & 63)
		}
	}
	pool := c.g.pool
	for j, rest := range e.rests {
		if rest == nil {
			continue
		}
		x := e.comps[j]
		m := p.save()
		done := func(f fitem) bool {
			return f.q == x.q && c.g.flat[f.pos].terminal() == x.t && !pool.Final(f.q)
		}
		if p.boundary(done) && p.fend > p.fstart {
			c.walk(p, rest, dst)
		}
		p.restore(m)
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
