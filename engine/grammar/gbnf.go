package grammar

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// ErrGBNF is wrapped by every GBNF syntax error.
var ErrGBNF = errors.New("GBNF")

// maxGBNFRepeat bounds {m,n} counts, as llama.cpp bounds them.
const maxGBNFRepeat = 2000

// gElem is one element of a GBNF sequence.
type gElem struct {
	kind  gKind
	runes []rx.RuneRange // gClass
	text  []rune         // gLit
	ref   string         // gRef
	alts  [][]gElem      // gGroup
	sub   *gElem         // gRep
	min   int            // gRep
	max   int            // gRep (-1: unbounded)
	token string         // gToken: a special token's text
	at    int            // byte offset, for errors
}

type gKind uint8

const (
	gLit gKind = iota
	gClass
	gRef
	gGroup
	gRep
	gToken
)

// CompileGBNF compiles a grammar in llama.cpp's GBNF format: rules
// "name ::= alternatives" with "literals", [character classes], ., rule
// references, (groups), the repetitions * + ? {m} {m,} {m,n}, # comments,
// and <token> for a special token by its text. The rule named root is the
// start. The language is exactly llama.cpp's (same code points); rules that
// do not recurse are turned into lexemes, which changes the speed of the
// masks, never what they allow. Token-id references (<[id]>) and inverse
// tokens (!<...>) are not supported.
func CompileGBNF(src string) (*Grammar, error) {
	rules, order, err := parseGBNF(src)
	if err != nil {
		return nil, err
	}
	if _, ok := rules["root"]; !ok {
		return nil, fmt.Errorf("%w: no root rule", ErrGBNF)
	}
	for _, name := range order {
		for _, alt := range rules[name] {
			if err := checkRefs(alt, rules); err != nil {
				return nil, err
			}
		}
	}
	c := &gbnfCompiler{b: newBuilder(), rules: rules, regular: map[string]bool{},
		rx: map[string]*rx.Node{}, syms: map[string]sym{}}
	c.findRegular(order)
	root := c.ruleSym("root")
	return c.b.build(root, fmt.Sprintf("gbnf (%d rules)", len(order)))
}

func checkRefs(seq []gElem, rules map[string][][]gElem) error {
	for i := range seq {
		e := &seq[i]
		switch e.kind {
		case gRef:
			if _, ok := rules[e.ref]; !ok {
				return fmt.Errorf("%w: undefined rule %q at offset %d", ErrGBNF, e.ref, e.at)
			}
		case gGroup:
			for _, a := range e.alts {
				if err := checkRefs(a, rules); err != nil {
					return err
				}
			}
		case gRep:
			if err := checkRefs([]gElem{*e.sub}, rules); err != nil {
				return err
			}
		}
	}
	return nil
}

// gbnfParser reads GBNF text.
type gbnfParser struct {
	src string
	pos int
}

func (p *gbnfParser) errorf(format string, args ...any) error {
	line := 1
	for _, c := range p.src[:min(p.pos, len(p.src))] {
		if c == '\n' {
			line++
		}
	}
	return fmt.Errorf("%w: line %d (offset %d): %s", ErrGBNF, line, p.pos, fmt.Sprintf(format, args...))
}

func (p *gbnfParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

// space skips blanks and comments, and newlines when newlines is set.
func (p *gbnfParser) space(newlines bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case newlines && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *gbnfParser) name() (string, error) {
	start := p.pos
	for p.pos < len(p.src) && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return "", p.errorf("expected a rule name")
	}
	return p.src[start:p.pos], nil
}

func parseGBNF(src string) (map[string][][]gElem, []string, error) {
	if !utf8.ValidString(src) {
		return nil, nil, fmt.Errorf("%w: grammar is not valid UTF-8", ErrGBNF)
	}
	p := &gbnfParser{src: src}
	rules := map[string][][]gElem{}
	var order []string
	p.space(true)
	for p.pos < len(p.src) {
		name, err := p.name()
		if err != nil {
			return nil, nil, err
		}
		p.space(false)
		if len(p.src)-p.pos < 3 || p.src[p.pos:p.pos+3] != "::=" {
			return nil, nil, p.errorf("expected ::= after %q", name)
		}
		p.pos += 3
		p.space(true)
		alts, err := p.alternates(false, 0)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := rules[name]; dup {
			return nil, nil, p.errorf("rule %q defined twice", name)
		}
		rules[name] = alts
		order = append(order, name)
		if c := p.peek(); c != 0 && c != '\n' && c != '\r' {
			return nil, nil, p.errorf("unexpected %q", c)
		}
		p.space(true)
	}
	return rules, order, nil
}

func (p *gbnfParser) alternates(nested bool, depth int) ([][]gElem, error) {
	if depth > 100 {
		return nil, p.errorf("groups nested too deeply")
	}
	var alts [][]gElem
	for {
		seq, err := p.sequence(nested, depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.peek() == '|' {
			p.pos++
			p.space(true)
			continue
		}
		if !nested {
			// A following line that starts with | continues the rule.
			save := p.pos
			p.space(true)
			if p.peek() == '|' {
				p.pos++
				p.space(true)
				continue
			}
			p.pos = save
		}
		return alts, nil
	}
}

func (p *gbnfParser) sequence(nested bool, depth int) ([]gElem, error) {
	var seq []gElem
	for p.pos < len(p.src) {
		at := p.pos
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			var text []rune
			for p.peek() != '"' {
				if p.pos >= len(p.src) {
					return nil, p.errorf("unterminated string")
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				if utf8.RuneLen(r) < 0 { // a surrogate: no UTF-8 text holds one
					return nil, p.errorf("%U in a string is a surrogate, not a character", r)
				}
				text = append(text, r)
			}
			p.pos++
			seq = append(seq, gElem{kind: gLit, text: text, at: at})
		case c == '[':
			p.pos++
			negate := false
			if p.peek() == '^' {
				negate = true
				p.pos++
			}
			var rs []rx.RuneRange
			for p.peek() != ']' {
				if p.pos >= len(p.src) {
					return nil, p.errorf("unterminated character class")
				}
				lo, err := p.char()
				if err != nil {
					return nil, err
				}
				hi := lo
				if p.peek() == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
					p.pos++
					if hi, err = p.char(); err != nil {
						return nil, err
					}
				}
				rs = append(rs, rx.RuneRange{Lo: lo, Hi: hi})
			}
			p.pos++
			if negate {
				rs = rx.Negate(rs)
			}
			seq = append(seq, gElem{kind: gClass, runes: rx.Normalize(rs), at: at})
		case c == '<':
			end := p.pos + 1
			for end < len(p.src) && p.src[end] != '>' {
				end++
			}
			if end >= len(p.src) {
				return nil, p.errorf("unterminated token reference")
			}
			text := p.src[p.pos+1 : end]
			if len(text) > 0 && text[0] == '[' {
				return nil, p.errorf("token ids (<[id]>) are not supported: name special tokens by their text")
			}
			p.pos = end + 1
			seq = append(seq, gElem{kind: gToken, token: "<" + text + ">", at: at})
		case c == '!':
			return nil, p.errorf("inverse tokens (!<...>) are not supported")
		case isWordChar(c):
			name, err := p.name()
			if err != nil {
				return nil, err
			}
			seq = append(seq, gElem{kind: gRef, ref: name, at: at})
		case c == '(':
			p.pos++
			p.space(true)
			alts, err := p.alternates(true, depth+1)
			if err != nil {
				return nil, err
			}
			if p.peek() != ')' {
				return nil, p.errorf("expected )")
			}
			p.pos++
			seq = append(seq, gElem{kind: gGroup, alts: alts, at: at})
		case c == '.':
			p.pos++
			seq = append(seq, gElem{kind: gClass, runes: rx.AnyRune, at: at})
		case c == '*' || c == '+' || c == '?' || c == '{':
			if len(seq) == 0 {
				return nil, p.errorf("nothing to repeat")
			}
			min, max := 0, -1
			switch c {
			case '*':
				p.pos++
			case '+':
				min = 1
				p.pos++
			case '?':
				max = 1
				p.pos++
			case '{':
				p.pos++
				p.space(nested)
				var err error
				if min, err = p.int(); err != nil {
					return nil, err
				}
				p.space(nested)
				switch p.peek() {
				case '}':
					max = min
				case ',':
					p.pos++
					p.space(nested)
					max = -1
					if d := p.peek(); d >= '0' && d <= '9' {
						if max, err = p.int(); err != nil {
							return nil, err
						}
						p.space(nested)
					}
					if p.peek() != '}' {
						return nil, p.errorf("expected }")
					}
				default:
					return nil, p.errorf("expected , or }")
				}
				p.pos++
				if min > maxGBNFRepeat || max > maxGBNFRepeat {
					return nil, p.errorf("repetition over %d", maxGBNFRepeat)
				}
				if max >= 0 && max < min {
					return nil, p.errorf("repetition {%d,%d} out of order", min, max)
				}
			}
			last := seq[len(seq)-1]
			seq[len(seq)-1] = gElem{kind: gRep, sub: &last, min: min, max: max, at: at}
		default:
			return seq, nil
		}
		p.space(nested)
	}
	return seq, nil
}

func (p *gbnfParser) int() (int, error) {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == start {
		return 0, p.errorf("expected a number")
	}
	if p.pos-start > 9 { // more than Atoi needs to hold any count allowed
		return 0, p.errorf("repetition over %d", maxGBNFRepeat)
	}
	n, _ := strconv.Atoi(p.src[start:p.pos])
	return n, nil
}

// char reads one character of a literal or class, escapes included.
func (p *gbnfParser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return r, nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, p.errorf("unterminated escape")
	}
	e := p.src[p.pos+1]
	p.pos += 2
	hex := func(n int) (rune, error) {
		if p.pos+n > len(p.src) {
			return 0, p.errorf("expected %d hex digits", n)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil {
			return 0, p.errorf("expected %d hex digits", n)
		}
		if v > unicode.MaxRune {
			return 0, p.errorf("\\%c%s is beyond U+10FFFF, the last code point", e, p.src[p.pos:p.pos+n])
		}
		p.pos += n
		return rune(v), nil
	}
	switch e {
	case 'x':
		return hex(2)
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'n':
		return '\n', nil
	case '\\', '"', '[', ']', '-':
		return rune(e), nil
	}
	return 0, p.errorf("unknown escape \\%c", e)
}

// gbnfCompiler turns parsed rules into a grammar: rules that do not recurse
// become regular expressions, so runs of them become single lexemes.
type gbnfCompiler struct {
	b       *builder
	rules   map[string][][]gElem
	regular map[string]bool
	rx      map[string]*rx.Node
	syms    map[string]sym
}

// findRegular marks the rules that reach no cycle of rule references (and
// name no special token): their language is regular.
func (c *gbnfCompiler) findRegular(order []string) {
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var visit func(name string) bool
	visit = func(name string) bool {
		switch state[name] {
		case visiting:
			return false // a cycle
		case done:
			return c.regular[name]
		}
		state[name] = visiting
		ok := true
		for _, alt := range c.rules[name] {
			if !c.seqRegular(alt, visit) {
				ok = false
			}
		}
		state[name] = done
		c.regular[name] = ok
		return ok
	}
	for _, name := range order {
		visit(name)
	}
	// A rule in a cycle may have been marked regular by a visit that
	// stopped at the cycle; cycles are never regular here.
	for changed := true; changed; {
		changed = false
		for _, name := range order {
			if !c.regular[name] {
				continue
			}
			for _, alt := range c.rules[name] {
				if !c.seqRegular(alt, func(r string) bool { return c.regular[r] }) {
					c.regular[name], changed = false, true
					break
				}
			}
		}
	}
}

func (c *gbnfCompiler) seqRegular(seq []gElem, ruleOK func(string) bool) bool {
	for i := range seq {
		if !c.elemRegular(&seq[i], ruleOK) {
			return false
		}
	}
	return true
}

func (c *gbnfCompiler) elemRegular(e *gElem, ruleOK func(string) bool) bool {
	switch e.kind {
	case gRef:
		return ruleOK(e.ref)
	case gGroup:
		ok := true
		for _, a := range e.alts {
			if !c.seqRegular(a, ruleOK) {
				ok = false
			}
		}
		return ok
	case gRep:
		return c.elemRegular(e.sub, ruleOK)
	case gToken:
		return false
	}
	return true
}

// ruleSym returns the grammar symbol of a rule.
func (c *gbnfCompiler) ruleSym(name string) sym {
	if s, ok := c.syms[name]; ok {
		return s
	}
	if c.regular[name] {
		s := c.b.lexeme(rx.Lower(c.b.pool, c.ruleNode(name), rx.UTF8Encoding{}))
		c.syms[name] = s
		return s
	}
	r := c.b.rule(name)
	c.syms[name] = r
	for _, alt := range c.rules[name] {
		c.b.add(r, c.seqSyms(alt)...)
	}
	return r
}

// ruleNode is the regular expression of a regular rule.
func (c *gbnfCompiler) ruleNode(name string) *rx.Node {
	if n, ok := c.rx[name]; ok {
		return n
	}
	var alts []*rx.Node
	for _, alt := range c.rules[name] {
		alts = append(alts, c.seqNode(alt))
	}
	n := rx.Alt(alts...)
	c.rx[name] = n
	return n
}

func (c *gbnfCompiler) seqNode(seq []gElem) *rx.Node {
	var parts []*rx.Node
	for i := range seq {
		parts = append(parts, c.elemNode(&seq[i]))
	}
	return rx.Cat(parts...)
}

func (c *gbnfCompiler) elemNode(e *gElem) *rx.Node {
	switch e.kind {
	case gLit:
		return rx.Lit(string(e.text))
	case gClass:
		return rx.Chars(e.runes...)
	case gRef:
		return c.ruleNode(e.ref)
	case gGroup:
		var alts []*rx.Node
		for _, a := range e.alts {
			alts = append(alts, c.seqNode(a))
		}
		return rx.Alt(alts...)
	case gRep:
		return rx.Rep(c.elemNode(e.sub), e.min, e.max)
	}
	panic("gbnf: element is not regular")
}

// seqSyms turns a sequence into symbols, each run of regular elements
// becoming one lexeme.
func (c *gbnfCompiler) seqSyms(seq []gElem) []sym {
	var out []sym
	var run []*rx.Node
	flush := func() {
		if len(run) > 0 {
			out = append(out, c.b.lexeme(rx.Lower(c.b.pool, rx.Cat(run...), rx.UTF8Encoding{})))
			run = run[:0]
		}
	}
	isRegular := func(r string) bool { return c.regular[r] }
	for i := range seq {
		e := &seq[i]
		if c.elemRegular(e, isRegular) {
			run = append(run, c.elemNode(e))
			continue
		}
		flush()
		out = append(out, c.elemSym(e))
	}
	flush()
	return out
}

// elemSym is the symbol of an element that is not regular.
func (c *gbnfCompiler) elemSym(e *gElem) sym {
	switch e.kind {
	case gRef:
		return c.ruleSym(e.ref)
	case gToken:
		c.b.specials = append(c.b.specials, e.token)
		return c.b.lexeme(c.b.pool.Concat(c.b.pool.Byte(SpecialMarker), c.b.pool.Literal(e.token)))
	case gGroup:
		r := c.b.rule("")
		for _, a := range e.alts {
			c.b.add(r, c.seqSyms(a)...)
		}
		return r
	case gRep:
		item := c.b.seq(c.seqSyms([]gElem{*e.sub})...)
		return c.b.repeat(item, e.min, e.max, 0, false)
	}
	return c.b.seq(c.seqSyms([]gElem{*e})...)
}
