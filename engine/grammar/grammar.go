package grammar

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// ErrEmpty is returned when a grammar matches no text at all.
var ErrEmpty = errors.New("grammar matches nothing")

// ErrTooLarge is returned when a grammar exceeds the size limits.
var ErrTooLarge = errors.New("grammar too large")

// Size limits for one grammar: a schema or grammar from a client can never
// make the engine allocate without bound.
const (
	maxSymbols   = 1 << 21 // symbols over all right-hand sides
	maxRules     = 1 << 18
	maxTerminals = 1 << 17
)

// sym is a grammar symbol in a right-hand side: a nonterminal (>= 0) or a
// terminal (^t < 0).
type sym int32

func term(t int32) sym        { return sym(^t) }
func (s sym) isTerm() bool    { return s < 0 }
func (s sym) terminal() int32 { return int32(^s) }

// builder assembles a context-free grammar whose terminals are regular
// languages (lexemes). Front ends (GBNF, JSON Schema, regex, composition)
// build through it; build finalizes it into a Grammar.
type builder struct {
	pool  *rx.Pool
	names []string
	alts  [][][]sym // per rule: alternatives
	terms []rx.ID
	tidx  map[rx.ID]sym
	size  int
	err   error
	// specials are the special tokens the grammar names (GBNF's <token>)
	// with no plain spelling to fall back on.
	specials []string
}

func newBuilder() *builder {
	return &builder{pool: rx.NewPool(), tidx: map[rx.ID]sym{}}
}

// rule declares a new nonterminal and returns it; add gives it
// alternatives.
func (b *builder) rule(name string) sym {
	if len(b.names) >= maxRules {
		b.fail(fmt.Errorf("%w: more than %d rules", ErrTooLarge, maxRules))
		return 0
	}
	b.names = append(b.names, name)
	b.alts = append(b.alts, nil)
	return sym(len(b.names) - 1)
}

func (b *builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// add appends an alternative to rule r.
func (b *builder) add(r sym, rhs ...sym) {
	b.size += len(rhs) + 1
	if b.size > maxSymbols {
		b.fail(fmt.Errorf("%w: more than %d symbols", ErrTooLarge, maxSymbols))
		return
	}
	b.alts[r] = append(b.alts[r], rhs)
}

// lexeme returns the symbol for regular language t. A lexeme must not
// match the empty string, so a nullable t becomes a rule "t' | ε".
func (b *builder) lexeme(t rx.ID) sym {
	if s, ok := b.tidx[t]; ok {
		return s
	}
	var s sym
	switch {
	case b.pool.Nullable(t):
		r := b.rule("")
		b.add(r)
		if ne := b.pool.And(t, b.pool.Not(rx.Empty)); ne != rx.Nothing && b.pool.Live(ne) {
			b.add(r, b.lexeme(ne))
		}
		s = r
	default:
		if len(b.terms) >= maxTerminals {
			b.fail(fmt.Errorf("%w: more than %d lexemes", ErrTooLarge, maxTerminals))
			return 0
		}
		b.terms = append(b.terms, t)
		s = term(int32(len(b.terms) - 1))
	}
	b.tidx[t] = s
	return s
}

// lit is the lexeme for the exact text s ("" gives a rule matching the
// empty string).
func (b *builder) lit(s string) sym { return b.lexeme(b.pool.Literal(s)) }

// seq returns a rule matching syms in order (one symbol: itself).
func (b *builder) seq(syms ...sym) sym {
	if len(syms) == 1 {
		return syms[0]
	}
	r := b.rule("")
	b.add(r, syms...)
	return r
}

// alt returns a rule matching any of syms.
func (b *builder) alt(syms ...sym) sym {
	if len(syms) == 1 {
		return syms[0]
	}
	r := b.rule("")
	for _, s := range syms {
		b.add(r, s)
	}
	return r
}

// empty returns a rule matching only the empty string.
func (b *builder) empty() sym {
	r := b.rule("")
	b.add(r)
	return r
}

// nothing returns a rule matching nothing.
func (b *builder) nothing() sym { return b.rule("") }

// opt returns a rule matching s or nothing.
func (b *builder) opt(s sym) sym {
	r := b.rule("")
	b.add(r, s)
	b.add(r)
	return r
}

// star returns a rule matching s any number of times. It is left
// recursive: an Earley parser completes it in constant work per copy,
// where right recursion would complete every enclosing copy again at each
// boundary.
func (b *builder) star(s sym) sym {
	r := b.rule("")
	b.add(r)
	b.add(r, r, s)
	return r
}

// repeat returns a rule matching min..max copies of s, separated by sep
// when hasSep; max < 0 is unbounded. Bounded repetitions count with one
// left-recursive rule per count (exactly k copies), so that completion
// stays constant work per copy.
func (b *builder) repeat(s sym, min, max int, sep sym, hasSep bool) sym {
	if max >= 0 && max < min {
		return b.nothing()
	}
	next := []sym{s}
	if hasSep {
		next = []sym{sep, s}
	}
	r := b.rule("")
	// Counts come from clients (a schema's minItems of 1e9): a repetition
	// whose symbols alone pass the size limit fails before any of it is
	// built, or the right-hand side of 2×min symbols is held in memory
	// before add sees its size.
	n := min
	if max >= 0 {
		n = max
	}
	if n > 1 && n-1 > (maxSymbols-b.size)/len(next) {
		b.fail(fmt.Errorf("%w: a repetition of %d copies", ErrTooLarge, n))
		return r
	}
	if max < 0 {
		// s (sep s){min-1} (sep s)*, or nothing when min is 0.
		tail := b.star(b.seq(next...))
		if min == 0 {
			b.add(r)
			b.add(r, s, tail)
			return r
		}
		rhs := []sym{s}
		for i := 1; i < min; i++ {
			rhs = append(rhs, next...)
		}
		b.add(r, append(rhs, tail)...)
		return r
	}
	if min == 0 {
		b.add(r)
	}
	if max == 0 {
		return r
	}
	// exact[k] matches exactly k+1 copies.
	prev := b.rule("")
	b.add(prev, s)
	if min <= 1 {
		b.add(r, prev)
	}
	for k := 2; k <= max && b.err == nil; k++ {
		cur := b.rule("")
		b.add(cur, append([]sym{prev}, next...)...)
		if k >= min {
			b.add(r, cur)
		}
		prev = cur
	}
	return r
}

// Grammar is a compiled constraint, independent of any vocabulary: a
// context-free grammar over lexemes (regular languages over bytes), ready
// for Earley parsing. Bind it to a vocabulary with NewConstraint.
type Grammar struct {
	mu       sync.Mutex // guards pool and the caches of its Constraints
	pool     *rx.Pool
	terms    []rx.ID // lexeme start states
	flat     []sym   // right-hand sides, each followed by an end marker
	lhs      []int32 // per flat position: the rule of its production
	isEnd    []bool  // per flat position: end of a production
	first    [][]int32
	nullable []bool
	names    []string
	start    int32        // the augmented start rule
	follow   []rx.ByteSet // per terminal: bytes that can start what follows it
	endOK    []bool       // per terminal: the text may end right after it
	desc     string
	specials []string // special tokens a vocabulary must have (builder.specials)
}

// String describes the grammar (its front end and size).
func (g *Grammar) String() string { return g.desc }

// build finalizes the grammar with root as its start symbol.
func (b *builder) build(root sym, desc string) (*Grammar, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.pool.Overflow {
		return nil, fmt.Errorf("%w: regular expressions need too many states", ErrTooLarge)
	}
	start := b.rule("<start>")
	b.add(start, root)
	nr := len(b.names)

	// Terminals with an empty language make their productions unproductive.
	termOK := make([]bool, len(b.terms))
	for i, t := range b.terms {
		termOK[i] = t != rx.Nothing && b.pool.Live(t)
	}
	productive := make([]bool, nr)
	for changed := true; changed; {
		changed = false
		for r := 0; r < nr; r++ {
			if productive[r] {
				continue
			}
			for _, rhs := range b.alts[r] {
				if b.allProductive(rhs, productive, termOK) {
					productive[r], changed = true, true
					break
				}
			}
		}
	}
	if !productive[start] {
		return nil, ErrEmpty
	}
	// Keep the productive alternatives of rules reachable from the start.
	reach := make([]bool, nr)
	stack := []int{int(start)}
	reach[start] = true
	for len(stack) > 0 {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, rhs := range b.alts[r] {
			if !b.allProductive(rhs, productive, termOK) {
				continue
			}
			for _, s := range rhs {
				if !s.isTerm() && !reach[s] {
					reach[s] = true
					stack = append(stack, int(s))
				}
			}
		}
	}
	g := &Grammar{pool: b.pool, terms: b.terms, names: b.names, start: int32(start), desc: desc, specials: b.specials}
	g.first = make([][]int32, nr)
	g.nullable = make([]bool, nr)
	for r := 0; r < nr; r++ {
		if !reach[r] {
			continue
		}
		for _, rhs := range b.alts[r] {
			if !b.allProductive(rhs, productive, termOK) {
				continue
			}
			g.first[r] = append(g.first[r], int32(len(g.flat)))
			for _, s := range rhs {
				g.flat = append(g.flat, s)
				g.lhs = append(g.lhs, int32(r))
				g.isEnd = append(g.isEnd, false)
			}
			g.flat = append(g.flat, 0)
			g.lhs = append(g.lhs, int32(r))
			g.isEnd = append(g.isEnd, true)
		}
	}
	// Nullable rules.
	for changed := true; changed; {
		changed = false
		for r := 0; r < nr; r++ {
			if g.nullable[r] {
				continue
			}
			for _, p := range g.first[r] {
				all := true
				for q := p; !g.isEnd[q]; q++ {
					if s := g.flat[q]; s.isTerm() || !g.nullable[s] {
						all = false
						break
					}
				}
				if all {
					g.nullable[r], changed = true, true
					break
				}
			}
		}
	}
	g.computeFollow()
	return g, nil
}

func (b *builder) allProductive(rhs []sym, productive, termOK []bool) bool {
	for _, s := range rhs {
		if s.isTerm() {
			if !termOK[s.terminal()] {
				return false
			}
		} else if !productive[s] {
			return false
		}
	}
	return true
}

// computeFollow finds, for every terminal, the bytes that can begin the
// lexeme after it and whether the text can end right after it. The mask
// computation uses them to skip lexeme boundaries that cannot lead
// anywhere; they over-approximate, never under.
func (g *Grammar) computeFollow() {
	nr, nt := len(g.first), len(g.terms)
	firstBytes := make([]rx.ByteSet, nt)
	for t, start := range g.terms {
		row := g.pool.Row(start)
		for c := 0; c < 256; c++ {
			if row[c] != rx.Nothing {
				firstBytes[t].Add(byte(c))
			}
		}
	}
	// Bytes that can begin each rule.
	firstR := make([]rx.ByteSet, nr)
	for changed := true; changed; {
		changed = false
		for r := 0; r < nr; r++ {
			for _, p := range g.first[r] {
				set := firstR[r]
				for q := p; !g.isEnd[q]; q++ {
					s := g.flat[q]
					if s.isTerm() {
						set = set.Union(firstBytes[s.terminal()])
						break
					}
					set = set.Union(firstR[s])
					if !g.nullable[s] {
						break
					}
				}
				if set != firstR[r] {
					firstR[r], changed = set, true
				}
			}
		}
	}
	// For each position: the bytes that can begin the rest of its
	// production, and whether the rest can be empty.
	restFirst := make([]rx.ByteSet, len(g.flat))
	restNull := make([]bool, len(g.flat))
	for q := len(g.flat) - 1; q >= 0; q-- {
		if g.isEnd[q] {
			restNull[q] = true
			continue
		}
		// The rest after position q starts at q+1.
		n := q + 1
		if g.isEnd[n] {
			restNull[q] = true
			continue
		}
		s := g.flat[n]
		var f rx.ByteSet
		nullable := false
		if s.isTerm() {
			f = firstBytes[s.terminal()]
		} else {
			f = firstR[s]
			nullable = g.nullable[s]
		}
		if nullable {
			f = f.Union(restFirst[n])
			nullable = restNull[n]
		}
		restFirst[q], restNull[q] = f, nullable
	}
	followR := make([]rx.ByteSet, nr)
	endR := make([]bool, nr)
	endR[g.start] = true
	g.follow = make([]rx.ByteSet, nt)
	g.endOK = make([]bool, nt)
	for changed := true; changed; {
		changed = false
		for q := range g.flat {
			if g.isEnd[q] {
				continue
			}
			lhs := g.lhs[q]
			set := restFirst[q]
			ends := false
			if restNull[q] {
				set = set.Union(followR[lhs])
				ends = endR[lhs]
			}
			if s := g.flat[q]; s.isTerm() {
				t := s.terminal()
				if u := g.follow[t].Union(set); u != g.follow[t] {
					g.follow[t], changed = u, true
				}
				if ends && !g.endOK[t] {
					g.endOK[t], changed = true, true
				}
			} else {
				if u := followR[s].Union(set); u != followR[s] {
					followR[s], changed = u, true
				}
				if ends && !endR[s] {
					endR[s], changed = true, true
				}
			}
		}
	}
}

// dump renders the grammar's productions for debugging.
func (g *Grammar) dump() string {
	var sb strings.Builder
	for r, ps := range g.first {
		for _, p := range ps {
			fmt.Fprintf(&sb, "%d %s ::=", r, g.names[r])
			for q := p; !g.isEnd[q]; q++ {
				if s := g.flat[q]; s.isTerm() {
					fmt.Fprintf(&sb, " /%s/", g.pool.String(g.terms[s.terminal()]))
				} else {
					fmt.Fprintf(&sb, " %d", s)
				}
			}
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}
