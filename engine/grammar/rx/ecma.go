package rx

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// ErrSyntax is wrapped by every pattern syntax error.
var ErrSyntax = errors.New("regex syntax")

// ErrUnsupported is wrapped by errors for regex features that have no exact
// translation to a regular language here (backreferences, lookbehind, word
// boundaries, anchors or lookaheads in the middle of a pattern).
var ErrUnsupported = errors.New("unsupported regex feature")

// maxRepeat bounds the counts of a {n,m} quantifier.
const maxRepeat = 100000

// Internal ops, resolved away before a Node is returned.
const (
	opBegin Op = 100 + iota // ^
	opEnd                   // $
	opLook                  // (?=...) with Min 0, (?!...) with Min 1
)

// ParsePattern parses an ECMAScript regular expression with the search
// semantics of JSON Schema's "pattern": the result matches every string
// that contains a match, unless ^ and $ anchor it. Anchors must stand at the
// start and end of top-level alternatives (possibly inside a group that is
// the whole alternative), and lookaheads right after the start; anything
// else that regular languages cannot express exactly is an error wrapping
// ErrUnsupported.
func ParsePattern(src string) (*Node, error) { return parse(src, false) }

// ParseFull parses an ECMAScript regular expression that must match the
// whole text: ^ and $ at the ends are allowed and change nothing.
func ParseFull(src string) (*Node, error) { return parse(src, true) }

func parse(src string, full bool) (*Node, error) {
	p := &ecmaParser{src: []rune(src)}
	n, err := p.alt(0)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, p.errorf("unmatched )")
	}
	out, err := resolve(n, full)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", src, err)
	}
	return out, nil
}

type ecmaParser struct {
	src []rune
	pos int
}

func (p *ecmaParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, p.pos, fmt.Sprintf(format, args...))
}

func (p *ecmaParser) unsupported(what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrUnsupported, what, p.pos)
}

func (p *ecmaParser) peek() (rune, bool) {
	if p.pos < len(p.src) {
		return p.src[p.pos], true
	}
	return 0, false
}

func (p *ecmaParser) alt(depth int) (*Node, error) {
	if depth > 200 {
		return nil, p.errorf("groups nested too deeply")
	}
	var branches []*Node
	for {
		b, err := p.seq(depth)
		if err != nil {
			return nil, err
		}
		branches = append(branches, b)
		if c, ok := p.peek(); ok && c == '|' {
			p.pos++
			continue
		}
		return Alt(branches...), nil
	}
}

func (p *ecmaParser) seq(depth int) (*Node, error) {
	var items []*Node
	for {
		c, ok := p.peek()
		if !ok || c == '|' || c == ')' {
			return catKeep(items), nil
		}
		atom, err := p.atom(depth)
		if err != nil {
			return nil, err
		}
		atom, err = p.quantifier(atom)
		if err != nil {
			return nil, err
		}
		items = append(items, atom)
	}
}

// catKeep is Cat that keeps a one-item sequence wrapped, so that resolve
// can tell an alternative that is one group from the group itself.
func catKeep(items []*Node) *Node {
	if len(items) == 0 {
		return &Node{Op: OpEmpty}
	}
	return &Node{Op: OpConcat, Subs: items}
}

func (p *ecmaParser) quantifier(atom *Node) (*Node, error) {
	c, ok := p.peek()
	if !ok {
		return atom, nil
	}
	min, max := 0, 0
	switch c {
	case '*':
		min, max = 0, -1
		p.pos++
	case '+':
		min, max = 1, -1
		p.pos++
	case '?':
		min, max = 0, 1
		p.pos++
	case '{':
		lo, hi, n, ok := parseBraces(p.src[p.pos:])
		if !ok {
			return atom, nil // a literal brace (Annex B)
		}
		if lo > maxRepeat || hi > maxRepeat {
			return nil, p.errorf("repetition count over %d", maxRepeat)
		}
		if hi >= 0 && hi < lo {
			return nil, p.errorf("repetition {%d,%d} out of order", lo, hi)
		}
		min, max = lo, hi
		p.pos += n
	default:
		return atom, nil
	}
	if atom.Op == opBegin || atom.Op == opEnd || atom.Op == opLook {
		return nil, p.errorf("nothing to repeat")
	}
	if c, ok := p.peek(); ok && c == '?' {
		p.pos++ // lazy: same language
	} else if ok && c == '+' {
		return nil, p.unsupported("possessive quantifier")
	}
	return Rep(atom, min, max), nil
}

// parseBraces reads {n}, {n,} or {n,m} at the start of s.
func parseBraces(s []rune) (lo, hi, n int, ok bool) {
	i := 1
	num := func() (int, bool) {
		start := i
		v := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if v < 1<<30 {
				v = v*10 + int(s[i]-'0')
			}
			i++
		}
		return v, i > start
	}
	lo, ok = num()
	if !ok {
		return 0, 0, 0, false
	}
	hi = lo
	if i < len(s) && s[i] == ',' {
		i++
		if v, ok2 := num(); ok2 {
			hi = v
		} else {
			hi = -1
		}
	}
	if i >= len(s) || s[i] != '}' {
		return 0, 0, 0, false
	}
	return lo, hi, i + 1, true
}

func (p *ecmaParser) atom(depth int) (*Node, error) {
	c := p.src[p.pos]
	switch c {
	case '(':
		p.pos++
		look := -1
		if strings.HasPrefix(string(p.src[p.pos:min(len(p.src), p.pos+4)]), "?") {
			rest := string(p.src[p.pos:min(len(p.src), p.pos+3)])
			switch {
			case strings.HasPrefix(rest, "?:"):
				p.pos += 2
			case strings.HasPrefix(rest, "?="):
				p.pos += 2
				look = 0
			case strings.HasPrefix(rest, "?!"):
				p.pos += 2
				look = 1
			case strings.HasPrefix(rest, "?<=") || strings.HasPrefix(rest, "?<!"):
				return nil, p.unsupported("lookbehind")
			case strings.HasPrefix(rest, "?<") || strings.HasPrefix(rest, "?P<"):
				end := strings.IndexRune(string(p.src[p.pos:]), '>')
				if end < 0 {
					return nil, p.errorf("unterminated group name")
				}
				p.pos += len([]rune(string(p.src[p.pos:])[:end])) + 1
			default:
				return nil, p.unsupported("group flags or extension (?" + string(p.src[p.pos+1:min(len(p.src), p.pos+2)]) + ")")
			}
		}
		n, err := p.alt(depth + 1)
		if err != nil {
			return nil, err
		}
		if c, ok := p.peek(); !ok || c != ')' {
			return nil, p.errorf("missing )")
		}
		p.pos++
		if look >= 0 {
			return &Node{Op: opLook, Subs: []*Node{n}, Min: look}, nil
		}
		return n, nil
	case ')':
		return nil, p.errorf("unmatched )")
	case '*', '+', '?':
		return nil, p.errorf("nothing to repeat")
	case '[':
		p.pos++
		return p.class()
	case '.':
		p.pos++
		return Chars(Negate([]RuneRange{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})...), nil
	case '^':
		p.pos++
		return &Node{Op: opBegin}, nil
	case '$':
		p.pos++
		return &Node{Op: opEnd}, nil
	case '\\':
		p.pos++
		rs, err := p.escape(false)
		if err != nil {
			return nil, err
		}
		return Chars(rs...), nil
	}
	p.pos++
	return Char(c), nil
}

var (
	digitRanges = []RuneRange{{'0', '9'}}
	wordRanges  = []RuneRange{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	spaceRanges = []RuneRange{{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
		{0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}}
)

// escape reads what follows a backslash and returns its characters.
func (p *ecmaParser) escape(inClass bool) ([]RuneRange, error) {
	c, ok := p.peek()
	if !ok {
		return nil, p.errorf("trailing backslash")
	}
	p.pos++
	one := func(r rune) ([]RuneRange, error) { return []RuneRange{{r, r}}, nil }
	switch c {
	case 'd':
		return digitRanges, nil
	case 'D':
		return Negate(digitRanges), nil
	case 'w':
		return wordRanges, nil
	case 'W':
		return Negate(wordRanges), nil
	case 's':
		return spaceRanges, nil
	case 'S':
		return Negate(spaceRanges), nil
	case 't':
		return one('\t')
	case 'n':
		return one('\n')
	case 'v':
		return one('\v')
	case 'f':
		return one('\f')
	case 'r':
		return one('\r')
	case 'b':
		if inClass {
			return one('\b')
		}
		return nil, p.unsupported(`word boundary \b`)
	case 'B':
		return nil, p.unsupported(`\B`)
	case '0':
		if d, ok := p.peek(); ok && d >= '0' && d <= '9' {
			return nil, p.unsupported("octal escape")
		}
		return one(0)
	case 'c':
		if d, ok := p.peek(); ok && (d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z') {
			p.pos++
			return one(d % 32)
		}
		return one('\\') // Annex B: \c not followed by a letter is a backslash and c
	case 'x':
		if v, ok := p.hex(2); ok {
			return one(rune(v))
		}
		return one('x')
	case 'u':
		if d, ok := p.peek(); ok && d == '{' {
			end := strings.IndexRune(string(p.src[p.pos:]), '}')
			if end < 0 {
				return nil, p.errorf("unterminated \\u{")
			}
			body := string(p.src[p.pos+1 : p.pos+len([]rune(string(p.src[p.pos:])[:end]))])
			v, err := strconv.ParseUint(body, 16, 32)
			if err != nil || v > maxRune {
				return nil, p.errorf("bad \\u{%s}", body)
			}
			p.pos += len([]rune(body)) + 2
			return one(rune(v))
		}
		if v, ok := p.hex(4); ok {
			if v >= surrogateMin && v <= surrogateMax {
				// A surrogate pair written as two escapes is one character.
				if lo, ok := p.lowSurrogate(); ok {
					return one(0x10000 + (rune(v)-0xD800)<<10 + (lo - 0xDC00))
				}
				return nil, p.unsupported("lone surrogate escape")
			}
			return one(rune(v))
		}
		return one('u')
	case 'p', 'P':
		rs, err := p.property()
		if err != nil {
			return nil, err
		}
		if c == 'P' {
			rs = Negate(rs)
		}
		return rs, nil
	case 'k':
		if d, ok := p.peek(); ok && d == '<' {
			return nil, p.unsupported("backreference")
		}
		return one('k')
	}
	if c >= '1' && c <= '9' {
		if inClass {
			return nil, p.unsupported("octal escape")
		}
		return nil, p.unsupported("backreference")
	}
	return one(c) // identity escape
}

func (p *ecmaParser) hex(n int) (int, bool) {
	if p.pos+n > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+n]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += n
	return int(v), true
}

func (p *ecmaParser) lowSurrogate() (rune, bool) {
	if p.pos+6 > len(p.src) || p.src[p.pos] != '\\' || p.src[p.pos+1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.pos+2:p.pos+6]), 16, 32)
	if err != nil || v < 0xDC00 || v > 0xDFFF {
		return 0, false
	}
	p.pos += 6
	return rune(v), true
}

// property reads {Name} or {Key=Value} after \p and returns its characters.
func (p *ecmaParser) property() ([]RuneRange, error) {
	if c, ok := p.peek(); !ok || c != '{' {
		return nil, p.errorf(`\p without {`)
	}
	end := strings.IndexRune(string(p.src[p.pos:]), '}')
	if end < 0 {
		return nil, p.errorf(`unterminated \p{`)
	}
	body := string(p.src[p.pos:])[1:end]
	p.pos += len([]rune(body)) + 2
	name := body
	if k, v, ok := strings.Cut(body, "="); ok {
		switch k {
		case "General_Category", "gc", "Script", "sc", "Script_Extensions", "scx":
			name = v
		default:
			return nil, p.unsupported(`\p{` + body + `}`)
		}
	}
	var tab *unicode.RangeTable
	switch {
	case unicode.Categories[name] != nil:
		tab = unicode.Categories[name]
	case unicode.Scripts[name] != nil:
		tab = unicode.Scripts[name]
	case unicode.Properties[name] != nil:
		tab = unicode.Properties[name]
	case categoryAliases[name] != "":
		tab = unicode.Categories[categoryAliases[name]]
	case name == "Any":
		return AnyRune, nil
	case name == "ASCII":
		return []RuneRange{{0, 0x7F}}, nil
	}
	if tab == nil {
		return nil, p.unsupported(`\p{` + body + `}`)
	}
	return tableRanges(tab), nil
}

var categoryAliases = map[string]string{
	"Letter": "L", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
	"Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Nonspacing_Mark": "Mn",
	"Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd",
	"Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P", "punct": "P", "Symbol": "S",
	"Separator": "Z", "Space_Separator": "Zs", "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf",
	"Private_Use": "Co", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps",
	"Close_Punctuation": "Pe", "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf", "Other_Punctuation": "Po",
	"Math_Symbol": "Sm", "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So",
	"Line_Separator": "Zl", "Paragraph_Separator": "Zp",
}

func tableRanges(t *unicode.RangeTable) []RuneRange {
	var out []RuneRange
	for _, r := range t.R16 {
		for lo := rune(r.Lo); lo <= rune(r.Hi); lo += rune(r.Stride) {
			if r.Stride == 1 {
				out = append(out, RuneRange{lo, rune(r.Hi)})
				break
			}
			out = append(out, RuneRange{lo, lo})
		}
	}
	for _, r := range t.R32 {
		for lo := rune(r.Lo); lo <= rune(r.Hi); lo += rune(r.Stride) {
			if r.Stride == 1 {
				out = append(out, RuneRange{lo, rune(r.Hi)})
				break
			}
			out = append(out, RuneRange{lo, lo})
		}
	}
	return Normalize(out)
}

// class reads a bracket expression after its [.
func (p *ecmaParser) class() (*Node, error) {
	negate := false
	if c, ok := p.peek(); ok && c == '^' {
		negate = true
		p.pos++
	}
	var rs []RuneRange
	for {
		c, ok := p.peek()
		if !ok {
			return nil, p.errorf("missing ]")
		}
		if c == ']' {
			p.pos++
			break
		}
		lo, single, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		// A range a-b, unless - is last or an end is a class like \d.
		if d, ok := p.peek(); ok && d == '-' && single && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
			p.pos++
			hi, single2, err := p.classAtom()
			if err != nil {
				return nil, err
			}
			if single2 {
				if hi[0].Lo < lo[0].Lo {
					return nil, p.errorf("range out of order in character class")
				}
				rs = append(rs, RuneRange{lo[0].Lo, hi[0].Lo})
				continue
			}
			// Annex B: [\w-x] is \w, '-' and x.
			rs = append(rs, lo...)
			rs = append(rs, RuneRange{'-', '-'})
			rs = append(rs, hi...)
			continue
		}
		rs = append(rs, lo...)
	}
	rs = Normalize(rs)
	if negate {
		rs = Negate(rs)
	}
	return Chars(rs...), nil
}

// classAtom reads one class member: its characters and whether it is a
// single character (a possible range end).
func (p *ecmaParser) classAtom() ([]RuneRange, bool, error) {
	c := p.src[p.pos]
	p.pos++
	if c != '\\' {
		return []RuneRange{{c, c}}, true, nil
	}
	if d, ok := p.peek(); ok && d == '-' {
		p.pos++
		return []RuneRange{{'-', '-'}}, true, nil
	}
	rs, err := p.escape(true)
	if err != nil {
		return nil, false, err
	}
	return rs, len(rs) == 1 && rs[0].Lo == rs[0].Hi, nil
}

// resolve removes anchors and lookaheads, giving the language of the
// pattern: search semantics, or whole-text matching when full.
func resolve(n *Node, full bool) (*Node, error) {
	branches := []*Node{n}
	if n.Op == OpAlt {
		branches = n.Subs
	}
	var out []*Node
	for _, b := range branches {
		items := []*Node{b}
		if b.Op == OpConcat {
			items = b.Subs
		}
		// An alternative that is a single group: its own alternatives may
		// carry anchors.
		if len(items) == 1 && items[0].Op == OpAlt && hasAssertion(items[0]) {
			r, err := resolve(items[0], full)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			continue
		}
		if len(items) == 1 && items[0].Op == OpConcat && hasAssertion(items[0]) {
			r, err := resolve(items[0], full)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			continue
		}
		start, end := false, false
		for len(items) > 0 && items[0].Op == opBegin {
			start, items = true, items[1:]
		}
		var looks []*Node
		for len(items) > 0 && items[0].Op == opLook {
			looks, items = append(looks, items[0]), items[1:]
		}
		for len(items) > 0 && items[0].Op == opBegin && len(looks) > 0 {
			start, items = true, items[1:]
		}
		for len(items) > 0 && items[len(items)-1].Op == opEnd {
			end, items = true, items[:len(items)-1]
		}
		for _, it := range items {
			if hasAssertion(it) {
				return nil, fmt.Errorf("%w: anchor or lookahead inside the pattern", ErrUnsupported)
			}
		}
		anyPre, anyPost := !start && !full, !end && !full
		body := Cat(append(items, tail(anyPost)...)...)
		for i := len(looks) - 1; i >= 0; i-- {
			l := looks[i]
			sub, toEnd := withoutEnd(l.Subs[0])
			if hasAssertion(sub) {
				return nil, fmt.Errorf("%w: assertion inside a lookahead", ErrUnsupported)
			}
			// What follows the lookahead's place begins with its match, or
			// is all of it where the lookahead ends in $ (the length
			// limits (?=.{1,253}$) of formats such as hostname).
			cond := sub
			if !toEnd {
				cond = Cat(sub, AnyString())
			}
			if l.Min == 1 {
				cond = NotNode(cond)
			}
			body = AndNode(cond, body)
		}
		if anyPre {
			body = Cat(AnyString(), body)
		}
		out = append(out, body)
	}
	return Alt(out...), nil
}

func tail(any bool) []*Node {
	if any {
		return []*Node{AnyString()}
	}
	return nil
}

// withoutEnd returns a lookahead's pattern without the $ that ends it, and
// whether there was one.
func withoutEnd(n *Node) (*Node, bool) {
	switch {
	case n.Op == opEnd:
		return Cat(), true
	case n.Op == OpConcat && len(n.Subs) > 0 && n.Subs[len(n.Subs)-1].Op == opEnd:
		subs := n.Subs
		for len(subs) > 0 && subs[len(subs)-1].Op == opEnd {
			subs = subs[:len(subs)-1]
		}
		return Cat(subs...), true
	}
	return n, false
}

func hasAssertion(n *Node) bool {
	switch n.Op {
	case opBegin, opEnd, opLook:
		return true
	}
	for _, s := range n.Subs {
		if hasAssertion(s) {
			return true
		}
	}
	return false
}
