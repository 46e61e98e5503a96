// Package rx is the regular-expression engine under engine/grammar: regular
// languages over bytes as hash-consed terms (union, intersection, complement,
// concatenation, bounded and unbounded repetition), and a deterministic
// automaton built lazily from their Brzozowski derivatives.
//
// Every term lives in a Pool and is named by an ID; building the same term
// twice gives the same ID (smart constructors normalise unions and
// intersections: flattened, sorted, deduplicated), which is what keeps the
// set of derivatives of a term finite. A DFA state is simply a term: the
// derivative of the start term by the bytes read so far. States are accepting
// when their term matches the empty string (Nullable), and dead when their
// language is empty (Nothing, or an intersection or complement whose
// language turns out empty: see Live). Transitions are computed on demand,
// one byte class at a time, and kept (Next).
//
// Text syntaxes (ECMAScript patterns as JSON Schema uses them, character
// classes) are parsed into a small character-level AST (Node) first and then
// lowered to byte terms with an encoding: plain UTF-8, or the body of a JSON
// string, where some characters must or may be written as escapes.
package rx

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// ID names a term of a Pool.
type ID uint32

// The terms every Pool starts with.
const (
	Nothing ID = 0 // the empty language: matches nothing
	Empty   ID = 1 // the empty string only
	All     ID = 2 // every byte string (complement of Nothing)
)

type kind uint8

const (
	kNothing kind = iota
	kEmpty
	kBytes  // one byte from a set
	kConcat // a then b (right-nested: a is never a concatenation)
	kOr     // any of args
	kAnd    // all of args
	kNot    // complement of a
	kRepeat // a repeated min..max times (max < 0: unbounded)
)

type node struct {
	kind     kind
	nullable bool
	boolean  bool // contains And or Not: emptiness is not syntactic
	a, b     ID
	min, max int32
	set      ByteSet
	args     []ID
}

// ByteSet is a set of bytes.
type ByteSet [4]uint64

// Has reports whether b is in s.
func (s *ByteSet) Has(b byte) bool { return s[b>>6]&(1<<(b&63)) != 0 }

// Add puts b in s.
func (s *ByteSet) Add(b byte) { s[b>>6] |= 1 << (b & 63) }

// AddRange puts lo..hi (inclusive) in s.
func (s *ByteSet) AddRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s.Add(byte(c))
	}
}

// Empty reports whether s has no byte.
func (s *ByteSet) Empty() bool { return s[0]|s[1]|s[2]|s[3] == 0 }

// Count is the number of bytes in s.
func (s *ByteSet) Count() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
}

// Union returns s ∪ o.
func (s ByteSet) Union(o ByteSet) ByteSet {
	return ByteSet{s[0] | o[0], s[1] | o[1], s[2] | o[2], s[3] | o[3]}
}

// Intersect returns s ∩ o.
func (s ByteSet) Intersect(o ByteSet) ByteSet {
	return ByteSet{s[0] & o[0], s[1] & o[1], s[2] & o[2], s[3] & o[3]}
}

// MaxStates bounds the DFA states one Pool may create; a term that needs
// more (a pathological intersection) makes Next return Nothing for the
// transitions it can no longer compute and sets Pool.Overflow.
const MaxStates = 1 << 20

// Pool holds terms and their automaton. It is not safe for concurrent use.
type Pool struct {
	nodes []node
	index map[string]ID
	key   []byte

	rows    [][]ID   // per state: next state for each byte (nil: not built)
	classes [][]byte // per term: byte -> class index (nil: not computed)
	live    []int8   // per term: 0 unknown, 1 live, -1 dead
	final   []int8   // per state: 0 unknown, 1 no live transition, -1 has one
	dmemo   map[uint64]ID
	canon   map[ID]string

	horizon  map[ID]ID
	horizonH int

	// Overflow is set once the pool refused to grow past MaxStates terms.
	Overflow bool
}

// NewPool returns a pool holding Nothing, Empty and All.
func NewPool() *Pool {
	p := &Pool{index: make(map[string]ID), dmemo: make(map[uint64]ID)}
	p.nodes = append(p.nodes, node{kind: kNothing}, node{kind: kEmpty, nullable: true})
	p.intern(node{kind: kNot, a: Nothing, nullable: true, boolean: true})
	return p
}

// Len is the number of terms in the pool.
func (p *Pool) Len() int { return len(p.nodes) }

func (p *Pool) intern(n node) ID {
	k := p.key[:0]
	k = append(k, byte(n.kind))
	switch n.kind {
	case kBytes:
		for _, w := range n.set {
			k = binary.LittleEndian.AppendUint64(k, w)
		}
	case kConcat, kNot:
		k = binary.LittleEndian.AppendUint32(k, uint32(n.a))
		k = binary.LittleEndian.AppendUint32(k, uint32(n.b))
	case kRepeat:
		k = binary.LittleEndian.AppendUint32(k, uint32(n.a))
		k = binary.LittleEndian.AppendUint32(k, uint32(n.min))
		k = binary.LittleEndian.AppendUint32(k, uint32(n.max))
	case kOr, kAnd:
		for _, a := range n.args {
			k = binary.LittleEndian.AppendUint32(k, uint32(a))
		}
	}
	p.key = k
	if id, ok := p.index[string(k)]; ok {
		return id
	}
	if len(p.nodes) >= MaxStates {
		p.Overflow = true
		return Nothing
	}
	id := ID(len(p.nodes))
	p.nodes = append(p.nodes, n)
	p.index[string(k)] = id
	return id
}

// Nullable reports whether t matches the empty string (an accepting state).
func (p *Pool) Nullable(t ID) bool { return p.nodes[t].nullable }

// Bytes is one byte from set.
func (p *Pool) Bytes(set ByteSet) ID {
	if set.Empty() {
		return Nothing
	}
	return p.intern(node{kind: kBytes, set: set})
}

// Byte is the single byte b.
func (p *Pool) Byte(b byte) ID {
	var s ByteSet
	s.Add(b)
	return p.Bytes(s)
}

// ByteRange is one byte in lo..hi.
func (p *Pool) ByteRange(lo, hi byte) ID {
	var s ByteSet
	s.AddRange(lo, hi)
	return p.Bytes(s)
}

// Literal is the exact byte string s.
func (p *Pool) Literal(s string) ID {
	t := Empty
	for i := len(s) - 1; i >= 0; i-- {
		t = p.Concat(p.Byte(s[i]), t)
	}
	return t
}

// Concat is a followed by b.
func (p *Pool) Concat(a, b ID) ID {
	switch {
	case a == Nothing || b == Nothing:
		return Nothing
	case a == Empty:
		return b
	case b == Empty:
		return a
	}
	if na := p.nodes[a]; na.kind == kConcat {
		return p.Concat(na.a, p.Concat(na.b, b))
	}
	na, nb := &p.nodes[a], &p.nodes[b]
	return p.intern(node{kind: kConcat, a: a, b: b, nullable: na.nullable && nb.nullable, boolean: na.boolean || nb.boolean})
}

// Seq is the concatenation of ts in order.
func (p *Pool) Seq(ts ...ID) ID {
	t := Empty
	for i := len(ts) - 1; i >= 0; i-- {
		t = p.Concat(ts[i], t)
	}
	return t
}

// Or is the union of ts.
func (p *Pool) Or(ts ...ID) ID {
	var args []ID
	var set ByteSet
	hasSet := false
	var add func(t ID) bool
	add = func(t ID) bool {
		n := &p.nodes[t]
		switch {
		case t == Nothing:
		case t == All:
			return true
		case n.kind == kOr:
			for _, a := range n.args {
				if add(a) {
					return true
				}
			}
		case n.kind == kBytes:
			set, hasSet = set.Union(n.set), true
		default:
			args = append(args, t)
		}
		return false
	}
	for _, t := range ts {
		if add(t) {
			return All
		}
	}
	if hasSet {
		args = append(args, p.Bytes(set))
	}
	slices.Sort(args)
	args = slices.Compact(args)
	switch len(args) {
	case 0:
		return Nothing
	case 1:
		return args[0]
	}
	n := node{kind: kOr, args: args}
	for _, a := range args {
		n.nullable = n.nullable || p.nodes[a].nullable
		n.boolean = n.boolean || p.nodes[a].boolean
	}
	return p.intern(n)
}

// And is the intersection of ts (All when ts is empty).
func (p *Pool) And(ts ...ID) ID {
	var args []ID
	var set ByteSet
	hasSet := false
	var add func(t ID) bool
	add = func(t ID) bool {
		n := &p.nodes[t]
		switch {
		case t == Nothing:
			return true
		case t == All:
		case n.kind == kAnd:
			for _, a := range n.args {
				if add(a) {
					return true
				}
			}
		case n.kind == kBytes:
			if hasSet {
				set = set.Intersect(n.set)
			} else {
				set, hasSet = n.set, true
			}
		default:
			args = append(args, t)
		}
		return false
	}
	for _, t := range ts {
		if add(t) {
			return Nothing
		}
	}
	if hasSet {
		if set.Empty() {
			return Nothing
		}
		args = append(args, p.Bytes(set))
	}
	slices.Sort(args)
	args = slices.Compact(args)
	switch len(args) {
	case 0:
		return All
	case 1:
		return args[0]
	}
	n := node{kind: kAnd, args: args, nullable: true, boolean: true}
	for _, a := range args {
		n.nullable = n.nullable && p.nodes[a].nullable
	}
	return p.intern(n)
}

// Not is the complement of t: every byte string t does not match.
func (p *Pool) Not(t ID) ID {
	n := p.nodes[t]
	if n.kind == kNot {
		return n.a
	}
	if t == Nothing {
		return All
	}
	return p.intern(node{kind: kNot, a: t, nullable: !n.nullable, boolean: true})
}

// Repeat is t repeated min to max times; max < 0 means no upper bound.
func (p *Pool) Repeat(t ID, min, max int) ID {
	if min < 0 {
		min = 0
	}
	switch {
	case max >= 0 && max < min:
		return Nothing
	case max == 0:
		return Empty
	case t == Nothing:
		if min == 0 {
			return Empty
		}
		return Nothing
	case t == Empty:
		return Empty
	case min == 1 && max == 1:
		return t
	}
	n := p.nodes[t]
	if n.kind == kRepeat && n.min == 0 && n.max < 0 && max < 0 {
		return t // (x*)* = x*
	}
	if min > 1<<20 || max > 1<<20 {
		min, max = min32(min), min32(max)
	}
	return p.intern(node{kind: kRepeat, a: t, min: int32(min), max: int32(max),
		nullable: min == 0 || n.nullable, boolean: n.boolean})
}

func min32(x int) int {
	if x > 1<<20 {
		return 1 << 20
	}
	return x
}

// Star is t repeated any number of times.
func (p *Pool) Star(t ID) ID { return p.Repeat(t, 0, -1) }

// Plus is t repeated one or more times.
func (p *Pool) Plus(t ID) ID { return p.Repeat(t, 1, -1) }

// Opt is t or the empty string.
func (p *Pool) Opt(t ID) ID { return p.Or(t, Empty) }

// Deriv is the Brzozowski derivative of t by byte b: the strings s such that
// b·s is in t.
func (p *Pool) Deriv(t ID, b byte) ID {
	n := &p.nodes[t]
	switch n.kind {
	case kNothing, kEmpty:
		return Nothing
	case kBytes:
		if n.set.Has(b) {
			return Empty
		}
		return Nothing
	}
	key := uint64(t)<<8 | uint64(b)
	if d, ok := p.dmemo[key]; ok {
		return d
	}
	nn := *n // p.nodes may grow below
	var d ID
	switch nn.kind {
	case kConcat:
		d = p.Concat(p.Deriv(nn.a, b), nn.b)
		if p.nodes[nn.a].nullable {
			d = p.Or(d, p.Deriv(nn.b, b))
		}
	case kOr:
		ds := make([]ID, len(nn.args))
		for i, a := range nn.args {
			ds[i] = p.Deriv(a, b)
		}
		d = p.Or(ds...)
	case kAnd:
		ds := make([]ID, len(nn.args))
		for i, a := range nn.args {
			ds[i] = p.Deriv(a, b)
			if ds[i] == Nothing {
				d = Nothing
				goto done
			}
		}
		d = p.And(ds...)
	case kNot:
		d = p.Not(p.Deriv(nn.a, b))
	case kRepeat:
		max := int(nn.max)
		if max > 0 {
			max--
		}
		d = p.Concat(p.Deriv(nn.a, b), p.Repeat(nn.a, int(nn.min)-1, max))
	}
done:
	if len(p.dmemo) > 1<<22 {
		clear(p.dmemo)
	}
	p.dmemo[key] = d
	return d
}

// Classes returns t's byte classes: bytes with equal class numbers have
// equal derivatives of t. The slice is shared; do not modify it.
func (p *Pool) Classes(t ID) []byte {
	p.grow(t)
	if c := p.classes[t]; c != nil {
		return c
	}
	var part []byte
	n := p.nodes[t]
	switch n.kind {
	case kNothing, kEmpty:
		part = make([]byte, 256)
	case kBytes:
		part = make([]byte, 256)
		for b := 0; b < 256; b++ {
			if n.set.Has(byte(b)) {
				part[b] = 1
			}
		}
	case kConcat:
		part = p.Classes(n.a)
		if p.nodes[n.a].nullable {
			part = refine(part, p.Classes(n.b))
		}
	case kOr, kAnd:
		part = p.Classes(n.args[0])
		for _, a := range n.args[1:] {
			part = refine(part, p.Classes(a))
		}
	case kNot, kRepeat:
		part = p.Classes(n.a)
	}
	p.grow(t)
	p.classes[t] = part
	return part
}

// refine returns the common refinement of two partitions of the bytes.
func refine(x, y []byte) []byte {
	if slices.Equal(x, y) {
		return x
	}
	nx, ny := 0, 0
	for b := 0; b < 256; b++ {
		nx, ny = max(nx, int(x[b])+1), max(ny, int(y[b])+1)
	}
	pairs := make([]int16, nx*ny)
	for i := range pairs {
		pairs[i] = -1
	}
	out := make([]byte, 256)
	next := int16(0)
	for b := 0; b < 256; b++ {
		k := int(x[b])*ny + int(y[b])
		if pairs[k] < 0 {
			pairs[k] = next
			next++
		}
		out[b] = byte(pairs[k])
	}
	return out
}

func (p *Pool) grow(t ID) {
	if int(t) < len(p.classes) {
		return
	}
	n := max(int(t)+1, len(p.nodes))
	p.classes = append(p.classes, make([][]byte, n-len(p.classes))...)
	p.rows = append(p.rows, make([][]ID, n-len(p.rows))...)
	p.live = append(p.live, make([]int8, n-len(p.live))...)
	p.final = append(p.final, make([]int8, n-len(p.final))...)
}

// Row returns the transitions of state t for all 256 bytes; a dead target
// is Nothing. The slice is shared; do not modify it.
func (p *Pool) Row(t ID) []ID {
	if int(t) < len(p.rows) {
		if r := p.rows[t]; r != nil {
			return r
		}
	}
	return p.buildRow(t)
}

func (p *Pool) buildRow(t ID) []ID {
	p.grow(t)
	if r := p.rows[t]; r != nil {
		return r
	}
	cls := p.Classes(t)
	row := make([]ID, 256)
	var done [256]bool
	var val [256]ID
	for b := 0; b < 256; b++ {
		c := cls[b]
		if !done[c] {
			d := p.Deriv(t, byte(b))
			if d != Nothing && !p.Live(d) {
				d = Nothing
			}
			val[c], done[c] = d, true
		}
		row[b] = val[c]
	}
	p.grow(t)
	p.rows[t] = row
	return row
}

// Next is the state after reading b in state t (Nothing when dead).
func (p *Pool) Next(t ID, b byte) ID {
	if int(t) < len(p.rows) {
		if r := p.rows[t]; r != nil {
			return r[b]
		}
	}
	return p.Row(t)[b]
}

// Final reports whether state t can read no further byte: whatever it
// matched so far, nothing longer is in its language.
func (p *Pool) Final(t ID) bool {
	p.grow(t)
	if f := p.final[t]; f != 0 {
		return f > 0
	}
	f := int8(1)
	for _, d := range p.Row(t) {
		if d != Nothing {
			f = -1
			break
		}
	}
	p.final[t] = f
	return f > 0
}

// liveBudget bounds the states one Live search may visit.
const liveBudget = 1 << 16

// Live reports whether t's language is not empty. Terms without
// intersection or complement are live unless they are Nothing; others are
// searched for a reachable accepting state. A search that runs out of its
// budget reports live (and sets Overflow): callers that must never accept a
// dead end check Overflow after compiling.
func (p *Pool) Live(t ID) bool {
	if t == Nothing {
		return false
	}
	if !p.nodes[t].boolean {
		return true
	}
	p.grow(t)
	if l := p.live[t]; l != 0 {
		return l > 0
	}
	// Depth-first search over derivatives (computed without liveness
	// pruning, which would recurse into this search).
	seen := map[ID]bool{t: true}
	stack := []ID{t}
	found := false
	for len(stack) > 0 && !found {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p.nodes[s].nullable {
			found = true
			break
		}
		if int(s) < len(p.live) && p.live[s] > 0 {
			found = true
			break
		}
		if len(seen) > liveBudget {
			p.Overflow = true
			found = true
			break
		}
		cls := p.Classes(s)
		var tried [256]bool
		for b := 0; b < 256; b++ {
			c := cls[b]
			if tried[c] {
				continue
			}
			tried[c] = true
			d := p.Deriv(s, byte(b))
			if d == Nothing || seen[d] {
				continue
			}
			if !p.nodes[d].boolean {
				found = true
				break
			}
			p.grow(d)
			if p.live[d] < 0 {
				continue
			}
			seen[d] = true
			stack = append(stack, d)
		}
	}
	p.grow(t)
	if found {
		p.live[t] = 1
		return true
	}
	// Nothing accepting is reachable from any state seen: all are dead.
	for s := range seen {
		p.grow(s)
		p.live[s] = -1
	}
	return false
}

// Match reports whether t matches all of s.
func (p *Pool) Match(t ID, s []byte) bool {
	for _, b := range s {
		if t = p.Next(t, b); t == Nothing {
			return false
		}
	}
	return p.Nullable(t)
}

// String renders t for debugging.
func (p *Pool) String(t ID) string {
	n := p.nodes[t]
	switch n.kind {
	case kNothing:
		return "∅"
	case kEmpty:
		return "ε"
	case kBytes:
		return setString(n.set)
	case kConcat:
		return p.String(n.a) + p.String(n.b)
	case kOr, kAnd:
		sep := "|"
		if n.kind == kAnd {
			sep = "&"
		}
		s := "("
		for i, a := range n.args {
			if i > 0 {
				s += sep
			}
			s += p.String(a)
		}
		return s + ")"
	case kNot:
		if n.a == Nothing {
			return "Σ*"
		}
		return "~(" + p.String(n.a) + ")"
	case kRepeat:
		if n.max < 0 {
			return fmt.Sprintf("(%s){%d,}", p.String(n.a), n.min)
		}
		return fmt.Sprintf("(%s){%d,%d}", p.String(n.a), n.min, n.max)
	}
	return "?"
}

func setString(s ByteSet) string {
	if s.Count() == 1 {
		for b := 0; b < 256; b++ {
			if s.Has(byte(b)) {
				if b >= 0x20 && b < 0x7f && b != '[' && b != ']' && b != '\\' {
					return string(rune(b))
				}
				return fmt.Sprintf("\\x%02x", b)
			}
		}
	}
	out := "["
	for b := 0; b < 256; b++ {
		if !s.Has(byte(b)) {
			continue
		}
		e := b
		for e+1 < 256 && s.Has(byte(e+1)) {
			e++
		}
		out += byteStr(b)
		if e > b {
			out += "-" + byteStr(e)
		}
		b = e
	}
	return out + "]"
}

func byteStr(b int) string {
	if b >= 0x20 && b < 0x7f && b != '-' && b != ']' && b != '\\' && b != '^' {
		return string(rune(b))
	}
	return fmt.Sprintf("\\x%02x", b)
}

// MaxCanon bounds the text Canon names a term with. Written out as a
// tree, a term can be far larger than the DAG it is, and every state of a
// lexeme is named: a GBNF chain of 20,000 rules (r0 ::= "x" r1 | "y", ...)
// made one lexeme whose states each named the rest of the chain, and the
// daemon spelled gigabytes until the kernel killed it. A term whose text
// would be longer gets no name, and its caches are not shared.
const MaxCanon = 512

// Canon returns a text that names t's structure independently of the
// pool: two terms built the same way in different pools get the same
// text (unions and intersections list their members in text order). It
// keys caches shared between grammars. ok is false for a term whose text
// would exceed MaxCanon bytes.
func (p *Pool) Canon(t ID) (text string, ok bool) {
	s := p.canonOf(t)
	return s, s != ""
}

// canonOf is Canon's text, "" when it is too long (no term's text is
// empty). Each term's text is memoized, and a part that is too long ends
// the walk, so the work is bounded by the terms times MaxCanon.
func (p *Pool) canonOf(t ID) string {
	if p.canon == nil {
		p.canon = map[ID]string{}
	}
	if s, ok := p.canon[t]; ok {
		return s
	}
	n := p.nodes[t]
	var b strings.Builder
	part := func(id ID) bool {
		c := p.canonOf(id)
		if c == "" || b.Len()+len(c) > MaxCanon {
			return false
		}
		b.WriteString(c)
		return true
	}
	ok := true
	switch n.kind {
	case kNothing:
		b.WriteString("0")
	case kEmpty:
		b.WriteString("e")
	case kBytes:
		fmt.Fprintf(&b, "b%x.%x.%x.%x", n.set[0], n.set[1], n.set[2], n.set[3])
	case kConcat:
		b.WriteString("(")
		ok = part(n.a)
		b.WriteString(" ")
		ok = ok && part(n.b)
		b.WriteString(")")
	case kOr, kAnd:
		parts := make([]string, len(n.args))
		total := 0
		for i, a := range n.args {
			parts[i] = p.canonOf(a)
			total += len(parts[i]) + 1
			if parts[i] == "" || total > MaxCanon {
				ok = false
				break
			}
		}
		if ok {
			slices.Sort(parts)
			op := "|"
			if n.kind == kAnd {
				op = "&"
			}
			b.WriteString("[" + op + strings.Join(parts, ",") + "]")
		}
	case kNot:
		b.WriteString("~")
		ok = part(n.a)
	case kRepeat:
		fmt.Fprintf(&b, "{%d,%d ", n.min, n.max)
		ok = part(n.a)
		b.WriteString("}")
	}
	s := b.String()
	if !ok || len(s) > MaxCanon {
		s = ""
	}
	p.canon[t] = s
	return s
}

// Horizon returns a term that no string of at most h bytes tells apart
// from t — same matches, same liveness after it — with every bounded
// repetition whose counts go beyond h (outside complements) widened:
// x{lo,hi} with hi-lo > h becomes x{min(lo,h),}, and a lower bound over
// h becomes h. States of a long counted string (maxLength 2048) then
// share one cached token mask while they are further than a token from
// the limit. The repeated term must not match the empty string (each
// copy then takes a byte).
func (p *Pool) Horizon(t ID, h int) ID {
	if p.horizon == nil || p.horizonH != h {
		p.horizon, p.horizonH = map[ID]ID{}, h
	}
	return p.horizonOf(t, h)
}

func (p *Pool) horizonOf(t ID, h int) ID {
	if r, ok := p.horizon[t]; ok {
		return r
	}
	n := p.nodes[t]
	r := t
	switch n.kind {
	case kConcat:
		a, b := p.horizonOf(n.a, h), p.horizonOf(n.b, h)
		if a != n.a || b != n.b {
			r = p.Concat(a, b)
		}
	case kOr, kAnd:
		args := make([]ID, len(n.args))
		changed := false
		for i, x := range n.args {
			args[i] = p.horizonOf(x, h)
			changed = changed || args[i] != x
		}
		if changed {
			if n.kind == kOr {
				r = p.Or(args...)
			} else {
				r = p.And(args...)
			}
		}
	case kRepeat:
		a := p.horizonOf(n.a, h)
		lo, hi := int(n.min), int(n.max)
		if !p.nodes[n.a].nullable {
			if hi >= 0 && hi-lo > h {
				hi = -1
			}
			if lo > h {
				if hi >= 0 {
					hi -= lo - h
				}
				lo = h
			}
		}
		if a != n.a || lo != int(n.min) || hi != int(n.max) {
			r = p.Repeat(a, lo, hi)
		}
	}
	p.horizon[t] = r
	return r
}
