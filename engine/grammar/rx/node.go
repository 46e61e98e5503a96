package rx

import "fmt"

// Op is the operator of a Node.
type Op uint8

// The operators of the character-level syntax tree.
const (
	OpNothing Op = iota // matches nothing
	OpEmpty             // the empty string
	OpChars             // one character from Runes
	OpConcat            // Subs in order
	OpAlt               // any of Subs
	OpRepeat            // Subs[0] repeated Min..Max times (Max < 0: unbounded)
	OpAnd               // all of Subs
	OpNot               // any character string Subs[0] does not match
)

// Node is a regular expression over characters (Unicode scalar values).
// Lower turns it into a byte term under an Encoding.
type Node struct {
	Op       Op
	Runes    []RuneRange
	Subs     []*Node
	Min, Max int
}

// Chars is one character from rs.
func Chars(rs ...RuneRange) *Node { return &Node{Op: OpChars, Runes: Normalize(rs)} }

// Char is the character c.
func Char(c rune) *Node { return Chars(RuneRange{c, c}) }

// Lit is the exact text s.
func Lit(s string) *Node {
	var subs []*Node
	for _, c := range s {
		subs = append(subs, Char(c))
	}
	return Cat(subs...)
}

// Cat is the concatenation of subs.
func Cat(subs ...*Node) *Node {
	switch len(subs) {
	case 0:
		return &Node{Op: OpEmpty}
	case 1:
		return subs[0]
	}
	return &Node{Op: OpConcat, Subs: subs}
}

// Alt is the union of subs.
func Alt(subs ...*Node) *Node {
	switch len(subs) {
	case 0:
		return &Node{Op: OpNothing}
	case 1:
		return subs[0]
	}
	return &Node{Op: OpAlt, Subs: subs}
}

// Rep is n repeated min..max times (max < 0: unbounded).
func Rep(n *Node, min, max int) *Node {
	return &Node{Op: OpRepeat, Subs: []*Node{n}, Min: min, Max: max}
}

// AndNode is the intersection of subs.
func AndNode(subs ...*Node) *Node {
	if len(subs) == 1 {
		return subs[0]
	}
	return &Node{Op: OpAnd, Subs: subs}
}

// NotNode is the complement of n among character strings.
func NotNode(n *Node) *Node { return &Node{Op: OpNot, Subs: []*Node{n}} }

// AnyString is every character string.
func AnyString() *Node { return Rep(Chars(AnyRune...), 0, -1) }

// An Encoding writes characters as bytes.
type Encoding interface {
	// Char is the byte term for one character from rs (normalized).
	Char(p *Pool, rs []RuneRange) ID
}

// UTF8Encoding writes characters as UTF-8.
type UTF8Encoding struct{}

// Char implements Encoding.
func (UTF8Encoding) Char(p *Pool, rs []RuneRange) ID { return p.UTF8(rs) }

// JSONStringEncoding writes characters as the body of a JSON string (RFC
// 8259): the quote, the backslash and the control characters only as
// escapes, '/' also as "\/", and every other character as UTF-8. A class
// of every character also takes "\uXXXX" for any non-surrogate code unit;
// a narrower class takes "\u00XX" for the control characters it holds,
// which is all a JSON encoder writes that way. Surrogate escapes are never
// accepted, so every accepted string decodes to as many characters as it
// was counted as (JSON Schema's minLength and maxLength count code points).
type JSONStringEncoding struct {
	// Narrow leaves out "\uXXXX" escapes of characters that have another
	// spelling, even for a class of every character: then a string has
	// one spelling per value (besides "\/" for '/'), which is how object
	// keys are told apart.
	Narrow bool
}

var controlRunes = []RuneRange{{0, 0x1F}}

// Char implements Encoding.
func (e JSONStringEncoding) Char(p *Pool, rs []RuneRange) ID {
	all := !e.Narrow && len(rs) == len(AnyRune) && rs[0] == AnyRune[0] && rs[1] == AnyRune[1]
	raw := Subtract(rs, append([]RuneRange{{'"', '"'}, {'\\', '\\'}}, controlRunes...))
	alts := []ID{p.UTF8(raw)}
	bs := p.Byte('\\')
	short := map[rune]byte{'"': '"', '\\': '\\', '/': '/', 8: 'b', 12: 'f', '\n': 'n', '\r': 'r', '\t': 't'}
	for c, e := range short {
		if Contains(rs, c) {
			alts = append(alts, p.Concat(bs, p.Byte(e)))
		}
	}
	if all {
		alts = append(alts, p.Concat(p.Literal(`\u`), JSONUnitEscape(p)))
		return p.Or(alts...)
	}
	for _, r := range Intersect(rs, controlRunes) {
		for c := r.Lo; c <= r.Hi; c++ {
			alts = append(alts, p.Seq(p.Literal(`\u00`), hexDigit(p, int(c>>4)), hexDigit(p, int(c&15))))
		}
	}
	return p.Or(alts...)
}

// JSONUnitEscape is the four hex digits of a "\u" escape of a code unit
// that is not a surrogate (either case).
func JSONUnitEscape(p *Pool) ID {
	hex := p.Or(p.ByteRange('0', '9'), p.ByteRange('a', 'f'), p.ByteRange('A', 'F'))
	notD := p.Or(p.ByteRange('0', '9'), p.ByteRange('a', 'c'), p.ByteRange('A', 'C'), p.Byte('e'), p.Byte('E'), p.Byte('f'), p.Byte('F'))
	low := p.Seq(p.Or(p.Byte('d'), p.Byte('D')), p.ByteRange('0', '7'), hex, hex)
	return p.Or(p.Seq(notD, hex, hex, hex), low)
}

func hexDigit(p *Pool, v int) ID {
	const digits = "0123456789abcdef"
	c := digits[v]
	if c >= 'a' {
		return p.Or(p.Byte(c), p.Byte(c-'a'+'A'))
	}
	return p.Byte(c)
}

// Lower turns n into a byte term of p, writing characters with enc.
func Lower(p *Pool, n *Node, enc Encoding) ID {
	switch n.Op {
	case OpNothing:
		return Nothing
	case OpEmpty:
		return Empty
	case OpChars:
		if len(n.Runes) == 0 {
			return Nothing
		}
		return enc.Char(p, n.Runes)
	case OpConcat:
		ts := make([]ID, len(n.Subs))
		for i, s := range n.Subs {
			ts[i] = Lower(p, s, enc)
		}
		return p.Seq(ts...)
	case OpAlt:
		ts := make([]ID, len(n.Subs))
		for i, s := range n.Subs {
			ts[i] = Lower(p, s, enc)
		}
		return p.Or(ts...)
	case OpAnd:
		ts := make([]ID, len(n.Subs))
		for i, s := range n.Subs {
			ts[i] = Lower(p, s, enc)
		}
		return p.And(ts...)
	case OpRepeat:
		return p.Repeat(Lower(p, n.Subs[0], enc), n.Min, n.Max)
	case OpNot:
		any := p.Star(enc.Char(p, AnyRune))
		return p.And(p.Not(Lower(p, n.Subs[0], enc)), any)
	}
	panic(fmt.Sprintf("rx: unknown op %d", n.Op))
}
