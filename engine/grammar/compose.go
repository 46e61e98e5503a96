package grammar

import (
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// Part is a piece of a composed grammar: literal text, special tokens,
// JSON values by schema, regular expressions, and their sequences,
// choices and repetitions. Tool calling builds its grammars this way: a
// call in Hermes format is
//
//	Seq(Special("<tool_call>"), Lit("\n"), JSONValue(callSchema), Lit("\n"), Special("</tool_call>"))
//
// repeated for parallel calls. Parts are values; build them freely.
type Part struct {
	kind   partKind
	text   string
	schema []byte
	opts   JSONOptions
	parts  []Part
	min    int
	max    int
}

type partKind uint8

const (
	partLit partKind = iota
	partSpecial
	partJSON
	partRegex
	partGBNF
	partSeq
	partChoice
	partRepeat
	partWithout
)

// Lit matches exactly text.
func Lit(text string) Part { return Part{kind: partLit, text: text} }

// Special matches a special token by its text (e.g. "<|python_tag|>"):
// the control token itself, or the same text where the vocabulary has it
// as ordinary text.
func Special(name string) Part { return Part{kind: partSpecial, text: name} }

// JSONValue matches one JSON value valid against schema (compact, as
// CompileJSONSchema writes it); an empty schema matches any JSON value.
func JSONValue(schema []byte, o JSONOptions) Part {
	return Part{kind: partJSON, schema: schema, opts: o}
}

// Regex matches the whole of an ECMAScript regular expression.
func Regex(pattern string) Part { return Part{kind: partRegex, text: pattern} }

// GBNF matches the root rule of a GBNF grammar.
func GBNF(src string) Part { return Part{kind: partGBNF, text: src} }

// Without matches any text (any bytes, special tokens excluded) in which
// text does not occur: a thinking model's reasoning before the tag that
// ends it, say.
func Without(text string) Part { return Part{kind: partWithout, text: text} }

// Seq matches parts one after the other.
func Seq(parts ...Part) Part { return Part{kind: partSeq, parts: parts} }

// Choice matches any one of parts.
func Choice(parts ...Part) Part { return Part{kind: partChoice, parts: parts} }

// Repeat matches min..max copies of p (max < 0: no limit), with sep
// between them when sep is given.
func Repeat(p Part, min, max int, sep ...Part) Part {
	r := Part{kind: partRepeat, parts: []Part{p}, min: min, max: max}
	if len(sep) > 0 {
		r.parts = append(r.parts, Seq(sep...))
	}
	return r
}

// Opt matches p or nothing.
func Opt(p Part) Part { return Repeat(p, 0, 1) }

// Key is a string that identifies what p matches, for caching compiled
// grammars (equal keys, equal grammars).
func (p Part) Key() string {
	var sb strings.Builder
	p.key(&sb)
	return sb.String()
}

func (p Part) key(sb *strings.Builder) {
	fmt.Fprintf(sb, "%d", p.kind)
	switch p.kind {
	case partLit, partSpecial, partRegex, partGBNF, partWithout:
		fmt.Fprintf(sb, "%q", p.text)
	case partJSON:
		fmt.Fprintf(sb, "%q%v", p.schema, p.opts.StrictFormats)
	case partRepeat:
		fmt.Fprintf(sb, "{%d,%d}", p.min, p.max)
	}
	if len(p.parts) > 0 {
		sb.WriteByte('(')
		for i, x := range p.parts {
			if i > 0 {
				sb.WriteByte(',')
			}
			x.key(sb)
		}
		sb.WriteByte(')')
	}
}

// Compose compiles a composed grammar.
func Compose(p Part) (*Grammar, error) {
	b := newBuilder()
	s, err := composePart(b, p, 0)
	if err != nil {
		return nil, err
	}
	return b.build(s, "composed")
}

func composePart(b *builder, p Part, depth int) (sym, error) {
	if depth > 200 {
		return 0, fmt.Errorf("%w: parts nested too deeply", ErrTooLarge)
	}
	pool := b.pool
	switch p.kind {
	case partLit:
		return b.lit(p.text), nil
	case partSpecial:
		return b.lexeme(pool.Or(pool.Concat(pool.Byte(SpecialMarker), pool.Literal(p.text)), pool.Literal(p.text))), nil
	case partWithout:
		if p.text == "" {
			return 0, fmt.Errorf("grammar: Without needs a text")
		}
		text := pool.Star(pool.ByteRange(0, SpecialMarker-1))
		return b.lexeme(pool.And(text, pool.Not(pool.Seq(rx.All, pool.Literal(p.text), rx.All)))), nil
	case partRegex:
		n, err := rx.ParseFull(p.text)
		if err != nil {
			return 0, err
		}
		return b.lexeme(rx.Lower(pool, n, rx.UTF8Encoding{})), nil
	case partGBNF:
		rules, order, err := parseGBNF(p.text)
		if err != nil {
			return 0, err
		}
		if _, ok := rules["root"]; !ok {
			return 0, fmt.Errorf("%w: no root rule", ErrGBNF)
		}
		for _, name := range order {
			for _, alt := range rules[name] {
				if err := checkRefs(alt, rules); err != nil {
					return 0, err
				}
			}
		}
		c := &gbnfCompiler{b: b, rules: rules, regular: map[string]bool{}, rx: map[string]*rx.Node{}, syms: map[string]sym{}}
		c.findRegular(order)
		return c.ruleSym("root"), nil
	case partJSON:
		schema := p.schema
		if len(strings.TrimSpace(string(schema))) == 0 {
			schema = []byte("{}")
		}
		root, err := parseJSON(schema)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrSchema, err)
		}
		if root.kind != jObj && root.kind != jBool {
			return 0, fmt.Errorf("%w: a schema is an object or a boolean", ErrSchema)
		}
		return newSchemaCompilerIn(b, root, p.opts).compileRoot()
	case partSeq, partChoice:
		syms := make([]sym, len(p.parts))
		for i, x := range p.parts {
			s, err := composePart(b, x, depth+1)
			if err != nil {
				return 0, err
			}
			syms[i] = s
		}
		if p.kind == partChoice {
			if len(syms) == 0 {
				return b.nothing(), nil
			}
			return b.alt(syms...), nil
		}
		if len(syms) == 0 {
			return b.empty(), nil
		}
		return b.seq(syms...), nil
	case partRepeat:
		if p.max >= 0 && p.max < p.min || p.min > 100000 || p.max > 100000 {
			return 0, fmt.Errorf("grammar: repetition {%d,%d}", p.min, p.max)
		}
		item, err := composePart(b, p.parts[0], depth+1)
		if err != nil {
			return 0, err
		}
		if len(p.parts) > 1 {
			sep, err := composePart(b, p.parts[1], depth+1)
			if err != nil {
				return 0, err
			}
			return b.repeat(item, p.min, p.max, sep, true), nil
		}
		return b.repeat(item, p.min, p.max, 0, false), nil
	}
	return 0, fmt.Errorf("grammar: unknown part kind %d", p.kind)
}

// CompileRegex compiles an ECMAScript regular expression that the whole
// output must match.
func CompileRegex(pattern string) (*Grammar, error) {
	return Compose(Regex(pattern))
}
