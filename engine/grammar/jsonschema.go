package grammar

import (
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// ErrSchema is wrapped by errors for documents that are not valid JSON
// Schemas.
var ErrSchema = errors.New("invalid JSON schema")

// UnsupportedError reports a JSON Schema keyword (or a use of one) that the
// engine cannot enforce exactly. A schema that uses one does not compile:
// nothing in a schema is silently ignored, except annotations.
type UnsupportedError struct {
	Keyword string // the keyword, e.g. "uniqueItems"
	Path    string // JSON pointer of the schema that uses it
	Detail  string
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("unsupported JSON Schema keyword %q at %s", e.Keyword, e.Path)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// JSONOptions configures CompileJSONSchema.
type JSONOptions struct {
	// StrictFormats makes a "format" the engine does not know a compile
	// error. By default an unknown format is an annotation, as JSON Schema
	// specifies (validators ignore formats they do not know).
	StrictFormats bool
}

// Limits on the work one schema may cause.
const (
	maxSchemaAlternatives = 512   // branches of one anyOf/oneOf expansion
	maxSchemaNodes        = 20000 // distinct (merged) subschemas compiled
	maxPatternClasses     = 4     // patternProperties patterns over one object
	maxCountStates        = 50000 // property-count states of one object
	// maxExpandParts bounds the schemas that expanding $ref, allOf, anyOf
	// and oneOf copies into conjunctions, over a whole schema: each step
	// copies its conjunction, so a chain of n $refs (draft 2019 on, where a
	// $ref joins its siblings) costs n²/2. MaskBench's largest need is
	// about 60,000.
	maxExpandParts = 1 << 20
)

// CompileJSONSchema compiles a JSON Schema (draft 4 to 2020-12) into a
// grammar of the JSON values it accepts, written compactly (no whitespace),
// object properties in the order the schema lists them, then any other
// properties. Keywords that cannot be enforced exactly are an
// *UnsupportedError.
func CompileJSONSchema(schema []byte, o JSONOptions) (*Grammar, error) {
	root, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	if root.kind != jObj && root.kind != jBool {
		return nil, fmt.Errorf("%w: a schema is an object or a boolean", ErrSchema)
	}
	c := newSchemaCompiler(root, o)
	s, err := c.compileRoot()
	if err != nil {
		return nil, err
	}
	return c.b.build(s, fmt.Sprintf("json schema (%d subschemas)", len(c.flatMemo)))
}

// CompileJSON compiles "any JSON value" (objectOnly: any JSON object),
// compact: OpenAI's json_object and Ollama's "json" formats.
func CompileJSON(objectOnly bool) (*Grammar, error) {
	schema := `{}`
	if objectOnly {
		schema = `{"type":"object"}`
	}
	return CompileJSONSchema([]byte(schema), JSONOptions{})
}

type schemaCompiler struct {
	b     *builder
	root  *jvalue
	opts  JSONOptions
	draft int

	ids    map[string]*jvalue // absolute URI -> schema
	base   map[*jvalue]string // base URI of each schema
	path   map[*jvalue]string // JSON pointer of each schema
	nodeID map[*jvalue]int

	memo map[string]sym // conjunctions, before expansion
	// oneOfNots maps the negations exactOneOf makes to their oneOf, for
	// errors that name the keyword the schema wrote.
	oneOfNots map[*jvalue]*jvalue
	// oneOfMemo holds each oneOf's alternatives as oneOfAlternatives
	// decided them, once for all the places that use it.
	oneOfMemo map[*jvalue][]*jvalue
	flatMemo  map[string]sym // expanded conjunctions
	err       error
	// expandParts counts the schemas expand has copied (maxExpandParts).
	expandParts int

	// shared symbols and terms
	anyValue   sym
	hasAny     bool
	anyChar    rx.ID // one character of a JSON string body
	keyChar    rx.ID // one character of a key body (no \u escapes of printable characters)
	strBody    rx.ID
	patterns   map[string]*rx.Node
	litLexemes map[string]sym
}

func newSchemaCompiler(root *jvalue, o JSONOptions) *schemaCompiler {
	return newSchemaCompilerIn(newBuilder(), root, o)
}

// newSchemaCompilerIn compiles into an existing builder (to compose a
// schema with other parts of a grammar).
func newSchemaCompilerIn(b *builder, root *jvalue, o JSONOptions) *schemaCompiler {
	c := &schemaCompiler{b: b, root: root, opts: o, draft: 2020,
		ids: map[string]*jvalue{}, base: map[*jvalue]string{}, path: map[*jvalue]string{}, nodeID: map[*jvalue]int{},
		memo: map[string]sym{}, flatMemo: map[string]sym{}, oneOfNots: map[*jvalue]*jvalue{}, oneOfMemo: map[*jvalue][]*jvalue{}, patterns: map[string]*rx.Node{}, litLexemes: map[string]sym{}}
	if s := root.get("$schema"); s != nil && s.kind == jStr {
		switch {
		case strings.Contains(s.s, "draft-03"), strings.Contains(s.s, "draft-04"):
			c.draft = 4
		case strings.Contains(s.s, "draft-06"):
			c.draft = 6
		case strings.Contains(s.s, "draft-07"):
			c.draft = 7
		case strings.Contains(s.s, "2019-09"):
			c.draft = 2019
		}
	}
	p := c.b.pool
	c.anyChar = rx.JSONStringEncoding{}.Char(p, rx.AnyRune)
	// Keys are written without \u escapes of printable characters, so that
	// a key has one spelling per name (besides "\/"), which lets the
	// grammar tell listed properties from the others.
	c.keyChar = rx.JSONStringEncoding{Narrow: true}.Char(p, rx.AnyRune)
	c.strBody = p.Star(c.anyChar)
	c.index(root, "root:///schema.json", "#")
	return c
}

// index records base URIs, $id/id locations and anchors of every schema
// reachable through schema keywords.
func (c *schemaCompiler) index(n *jvalue, base, path string) {
	if n == nil || n.kind != jObj {
		if n != nil && n.kind == jBool {
			c.base[n], c.path[n] = base, path
		}
		return
	}
	if _, seen := c.base[n]; seen {
		return
	}
	if len(c.base) > 100000 {
		return
	}
	idKey := "$id"
	if c.draft == 4 {
		idKey = "id"
	}
	if id := n.get(idKey); id != nil && id.kind == jStr {
		if u, err := resolveURI(base, id.s); err == nil {
			if strings.HasPrefix(id.s, "#") && c.draft <= 7 {
				c.ids[u] = n // a draft-4..7 plain-name fragment: an anchor
			} else {
				base = stripFragment(u)
				c.ids[base] = n
			}
		}
	}
	if a := n.get("$anchor"); a != nil && a.kind == jStr {
		c.ids[base+"#"+a.s] = n
	}
	c.base[n], c.path[n] = base, path
	c.nodeID[n] = len(c.nodeID)
	for i, k := range n.keys {
		v := n.vals[i]
		p := path + "/" + escapePointer(k)
		switch k {
		case "properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies":
			if v.kind == jObj {
				for j, name := range v.keys {
					c.index(v.vals[j], base, p+"/"+escapePointer(name))
				}
			}
		case "items", "prefixItems", "allOf", "anyOf", "oneOf", "additionalItems":
			if v.kind == jArr {
				for j, x := range v.arr {
					c.index(x, base, p+"/"+strconv.Itoa(j))
				}
			} else {
				c.index(v, base, p)
			}
		case "not", "if", "then", "else", "additionalProperties", "propertyNames", "contains",
			"unevaluatedProperties", "unevaluatedItems", "contentSchema":
			c.index(v, base, p)
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func resolveURI(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(r).String(), nil
}

func stripFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

func (c *schemaCompiler) unsupported(n *jvalue, kw, detail string) {
	if c.err == nil {
		c.err = &UnsupportedError{Keyword: kw, Path: c.pathOf(n), Detail: detail}
	}
}

// patternError reports a pattern (of keyword kw) that does not compile:
// a malformed regex makes the schema invalid, a feature the matcher does
// not have is unsupported.
func (c *schemaCompiler) patternError(n *jvalue, kw, pattern string, err error) {
	if errors.Is(err, rx.ErrSyntax) {
		c.invalid(n, "pattern %q is not a valid regular expression: %v", pattern, err)
		return
	}
	c.unsupported(n, kw, err.Error())
}

func (c *schemaCompiler) invalid(n *jvalue, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w at %s: %s", ErrSchema, c.pathOf(n), fmt.Sprintf(format, args...))
	}
}

func (c *schemaCompiler) pathOf(n *jvalue) string {
	if p, ok := c.path[n]; ok {
		return p
	}
	return "#"
}

// resolve finds the schema a $ref names, relative to the schema holding it.
func (c *schemaCompiler) resolve(holder *jvalue, ref string) *jvalue {
	base := c.base[holder]
	if base == "" {
		base = "root:///schema.json"
	}
	u, err := resolveURI(base, ref)
	if err != nil {
		c.invalid(holder, "bad $ref %q", ref)
		return nil
	}
	doc, frag, _ := strings.Cut(u, "#")
	var target *jvalue
	if doc == "root:///schema.json" {
		target = c.root
	} else if n, ok := c.ids[doc]; ok {
		target = n
	} else {
		c.unsupported(holder, "$ref", fmt.Sprintf("reference %q outside the schema", ref))
		return nil
	}
	if frag == "" {
		return target
	}
	if !strings.HasPrefix(frag, "/") {
		if n, ok := c.ids[doc+"#"+frag]; ok {
			return n
		}
		// %-decoded anchors
		if d, err := url.PathUnescape(frag); err == nil {
			if n, ok := c.ids[doc+"#"+d]; ok {
				return n
			}
		}
		c.invalid(holder, "$ref %q: unknown anchor", ref)
		return nil
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		if d, err := url.PathUnescape(tok); err == nil {
			tok = d
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch target.kind {
		case jObj:
			target = target.get(tok)
		case jArr:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(target.arr) {
				target = nil
			} else {
				target = target.arr[i]
			}
		default:
			target = nil
		}
		if target == nil {
			c.invalid(holder, "$ref %q: no such location", ref)
			return nil
		}
	}
	if _, ok := c.base[target]; !ok {
		c.index(target, base, "#"+frag)
	}
	return target
}

// part is one schema of a conjunction, with the keywords already expanded
// and the number of schemas its expansions inserted after it.
type part struct {
	n    *jvalue
	done uint8
	kids int
}

const (
	doneRef uint8 = 1 << iota
	doneAllOf
	doneAnyOf
	doneOneOf
)

type conj []part

func (c *schemaCompiler) id(n *jvalue) int {
	if id, ok := c.nodeID[n]; ok {
		return id
	}
	id := len(c.nodeID)
	c.nodeID[n] = id
	return id
}

func (c *schemaCompiler) key(cj conj) string {
	ks := make([]string, len(cj))
	for i, p := range cj {
		ks[i] = strconv.Itoa(c.id(p.n)) + ":" + strconv.Itoa(int(p.done))
	}
	slices.Sort(ks)
	ks = slices.Compact(ks)
	return strings.Join(ks, ",")
}

func (c *schemaCompiler) compileRoot() (sym, error) {
	s := c.compile(conj{{n: c.root}})
	if c.err != nil {
		return 0, c.err
	}
	return s, nil
}

// compile returns the symbol of the JSON values valid against every schema
// of cj.
func (c *schemaCompiler) compile(cj conj) sym {
	if c.err != nil {
		return c.b.nothing()
	}
	k := c.key(cj)
	if s, ok := c.memo[k]; ok {
		return s
	}
	r := c.b.rule("")
	c.memo[k] = r
	alts := c.expand(cj)
	if len(alts) > maxSchemaAlternatives {
		c.unsupported(cj[0].n, "anyOf", fmt.Sprintf("more than %d alternatives after expanding anyOf/oneOf", maxSchemaAlternatives))
	}
	if c.err != nil {
		return r
	}
	for _, a := range alts {
		if c.err != nil {
			break
		}
		c.b.add(r, c.compileFlat(a))
	}
	return r
}

// expand resolves $ref and allOf, and splits anyOf and oneOf into
// alternatives, giving conjunctions of schemas without them.
func (c *schemaCompiler) expand(cj conj) []conj {
	var out []conj
	var rec func(cj conj)
	rec = func(cj conj) {
		if c.err != nil || len(out) > maxSchemaAlternatives {
			return
		}
		if c.expandParts += len(cj); c.expandParts > maxExpandParts {
			c.fail(fmt.Errorf("%w: $ref, allOf, anyOf and oneOf expand to more than %d schemas", ErrTooLarge, maxExpandParts))
			return
		}
		for i, p := range cj {
			n := p.n
			if n.kind != jObj {
				continue
			}
			// The combinators of a schema expand in the order the schema
			// writes them, each inserting its schemas after those already
			// inserted: properties are generated in the text's order.
			for _, k := range n.keys {
				switch {
				case k == "$ref" && p.done&doneRef == 0:
					ref := n.get("$ref")
					if ref.kind != jStr {
						c.invalid(n, "$ref is not a string")
						return
					}
					t := c.resolve(n, ref.s)
					if t == nil {
						return
					}
					var next conj
					if c.draft <= 7 {
						next = slices.Clone(cj)
						next[i] = part{n: t} // draft 4-7: $ref replaces its siblings
					} else {
						next = insertAfter(cj, i, doneRef, t)
					}
					rec(dedupe(c, next))
					return
				case k == "allOf" && p.done&doneAllOf == 0:
					all := n.get("allOf")
					if all.kind != jArr {
						c.invalid(n, "allOf is not an array")
						return
					}
					rec(dedupe(c, insertAfter(cj, i, doneAllOf, all.arr...)))
					return
				case k == "anyOf" && p.done&doneAnyOf == 0, k == "oneOf" && p.done&doneOneOf == 0:
					flag := doneAnyOf
					if k == "oneOf" {
						flag = doneOneOf
					}
					list := n.get(k)
					if list.kind != jArr || len(list.arr) == 0 {
						c.invalid(n, "%s is not a non-empty array", k)
						return
					}
					if len(list.arr) > maxSchemaAlternatives {
						// Refused before oneOf's pairwise check, which costs
						// the square of the alternatives.
						c.unsupported(n, k, fmt.Sprintf("more than %d alternatives after expanding anyOf/oneOf", maxSchemaAlternatives))
						return
					}
					alts := list.arr
					if flag == doneOneOf {
						alts = c.oneOfAlternatives(n, list.arr)
					}
					for _, x := range alts {
						rec(dedupe(c, insertAfter(cj, i, flag, x)))
					}
					return
				}
			}
		}
		out = append(out, cj)
	}
	rec(cj)
	return out
}

// insertAfter returns cj with part i marked done with flag and schemas
// inserted right after it: the parts keep the order in which the schema
// text lists them, which is the order their properties are generated in.
func insertAfter(cj conj, i int, flag uint8, schemas ...*jvalue) conj {
	at := min(i+1+cj[i].kids, len(cj))
	next := make(conj, 0, len(cj)+len(schemas))
	next = append(next, cj[:at]...)
	next[i].done |= flag
	next[i].kids += len(schemas)
	for _, x := range schemas {
		next = append(next, part{n: x})
	}
	return append(next, cj[at:]...)
}

// dedupe drops repeated schemas of a conjunction (a schema and itself is
// the schema), keeping the most expanded copy.
func dedupe(c *schemaCompiler, cj conj) conj {
	seen := map[*jvalue]int{}
	out := cj[:0:0]
	for _, p := range cj {
		if i, ok := seen[p.n]; ok {
			out[i].done |= p.done
			continue
		}
		seen[p.n] = len(out)
		out = append(out, p)
	}
	return out
}

// compileFlat compiles a conjunction without $ref, allOf, anyOf or oneOf
// left to expand.
func (c *schemaCompiler) compileFlat(cj conj) sym {
	k := c.key(cj)
	if s, ok := c.flatMemo[k]; ok {
		return s
	}
	if len(c.flatMemo) >= maxSchemaNodes {
		c.fail(fmt.Errorf("%w: more than %d subschemas", ErrTooLarge, maxSchemaNodes))
		return c.b.nothing()
	}
	r := c.b.rule("")
	c.flatMemo[k] = r
	m := c.merge(cj)
	if c.err != nil {
		return r
	}
	for _, s := range c.emit(m) {
		c.b.add(r, s)
	}
	return r
}

func (c *schemaCompiler) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// The JSON types, as a bit set. tInteger is the integers among numbers:
// "number" allows tNumber|tInteger.
const (
	tNull uint8 = 1 << iota
	tBool
	tObject
	tArray
	tString
	tNumber  // numbers that may be non-integers
	tInteger // integers
	tAll     = tNull | tBool | tObject | tArray | tString | tNumber | tInteger
)

var typeNames = map[string]uint8{"null": tNull, "boolean": tBool, "object": tObject, "array": tArray,
	"string": tString, "number": tNumber | tInteger, "integer": tInteger}

// merged is a conjunction's constraints, keyword by keyword.
type merged struct {
	types    uint8
	enum     []*jvalue // nil: no enum
	hasEnum  bool
	str      strCons
	num      numCons
	objParts []*jvalue
	arrParts []*jvalue
	nots     []*jvalue
	at       *jvalue // a schema of the conjunction, for error paths
}

type strCons struct {
	min, max int // max < 0: none
	patterns []string
	formats  []string
	at       *jvalue
}

type numCons struct {
	lo, hi  *rx.Bound
	formats []string
}

// Keywords that do not constrain the instance.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "id": true, "$anchor": true, "$comment": true, "$defs": true, "definitions": true,
	"title": true, "description": true, "default": true, "examples": true, "example": true, "readOnly": true,
	"writeOnly": true, "deprecated": true, "contentEncoding": true, "contentMediaType": true, "contentSchema": true,
	"$vocabulary": true, "$dynamicAnchor": true, "$recursiveAnchor": true, "discriminator": true, "xml": true,
	"externalDocs": true,
}

// Keywords the compiler handles (besides annotations); any other keyword
// that JSON Schema defines is unsupported, and keywords JSON Schema does
// not define are ignored, as validators ignore them.
var jsonSchemaKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "$ref": true, "allOf": true, "anyOf": true, "oneOf": true, "not": true,
	"if": true, "then": true, "else": true, "multipleOf": true, "maximum": true, "exclusiveMaximum": true,
	"minimum": true, "exclusiveMinimum": true, "maxLength": true, "minLength": true, "pattern": true,
	"items": true, "prefixItems": true, "additionalItems": true, "unevaluatedItems": true, "contains": true,
	"minContains": true, "maxContains": true, "maxItems": true, "minItems": true, "uniqueItems": true,
	"maxProperties": true, "minProperties": true, "required": true, "properties": true, "patternProperties": true,
	"additionalProperties": true, "unevaluatedProperties": true, "propertyNames": true, "dependencies": true,
	"dependentRequired": true, "dependentSchemas": true, "format": true, "$dynamicRef": true, "$recursiveRef": true,
	"nullable": true,
}

var objectKeywords = []string{"properties", "patternProperties", "additionalProperties", "required", "propertyNames",
	"minProperties", "maxProperties", "dependencies", "dependentRequired", "dependentSchemas", "unevaluatedProperties"}
var arrayKeywords = []string{"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
	"contains", "minContains", "maxContains", "unevaluatedItems"}

// merge collects the constraints of a flat conjunction.
func (c *schemaCompiler) merge(cj conj) *merged {
	m := &merged{types: tAll, str: strCons{max: -1}}
	if len(cj) > 0 {
		m.at = cj[0].n
	}
	for _, p := range cj {
		n := p.n
		if n.kind == jBool {
			if !n.b {
				m.types = 0
			}
			continue
		}
		if n.kind != jObj {
			c.invalid(n, "a schema is an object or a boolean")
			return m
		}
		c.mergeOne(m, n)
		if c.err != nil {
			return m
		}
	}
	return m
}

func (c *schemaCompiler) mergeOne(m *merged, n *jvalue) {
	for i, k := range n.keys {
		v := n.vals[i]
		if annotations[k] || !jsonSchemaKeywords[k] {
			continue
		}
		switch k {
		case "$ref", "allOf", "anyOf", "oneOf":
			// expanded before merging
		case "type":
			var t uint8
			switch v.kind {
			case jStr:
				t = typeNames[v.s]
				if t == 0 {
					c.invalid(n, "unknown type %q", v.s)
					return
				}
			case jArr:
				for _, x := range v.arr {
					tx := uint8(0)
					if x.kind == jStr {
						tx = typeNames[x.s]
					}
					if tx == 0 {
						c.invalid(n, "bad type in list")
						return
					}
					t |= tx
				}
			default:
				c.invalid(n, "type is not a string or a list")
				return
			}
			if nb := n.get("nullable"); nb != nil && nb.kind == jBool && nb.b {
				t |= tNull
			}
			m.types &= t
		case "nullable":
			// OpenAPI: with "type", adds null (handled there).
		case "enum", "const":
			var vals []*jvalue
			if k == "const" {
				vals = []*jvalue{v}
			} else if v.kind == jArr {
				vals = v.arr
			} else {
				c.invalid(n, "enum is not an array")
				return
			}
			if n.has("nullable") && n.get("nullable").b && k == "enum" {
				vals = append(slices.Clone(vals), &jvalue{kind: jNull})
			}
			if !m.hasEnum {
				m.enum, m.hasEnum = vals, true
			} else {
				m.enum = enumIntersection(m.enum, vals)
			}
		case "minLength", "maxLength":
			x, ok := nonNegInt(v)
			if !ok {
				c.invalid(n, "%s is not a non-negative integer", k)
				return
			}
			if k == "minLength" {
				m.str.min = max(m.str.min, x)
			} else if m.str.max < 0 || x < m.str.max {
				m.str.max = x
			}
		case "pattern":
			if v.kind != jStr {
				c.invalid(n, "pattern is not a string")
				return
			}
			m.str.patterns = append(m.str.patterns, v.s)
			m.str.at = n
		case "format":
			if v.kind != jStr {
				continue
			}
			switch {
			case stringFormats[v.s] != "":
				m.str.formats = append(m.str.formats, v.s)
				m.str.at = n
			case v.s == "int32" || v.s == "int64":
				m.num.formats = append(m.num.formats, v.s)
			case unsupportedFormats[v.s]:
				c.unsupported(n, "format", fmt.Sprintf("format %q cannot be enforced", v.s))
				return
			case c.opts.StrictFormats:
				c.unsupported(n, "format", fmt.Sprintf("unknown format %q", v.s))
				return
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if v.kind == jBool {
				continue // draft 4: modifies minimum/maximum, read there
			}
			if v.kind != jNum {
				c.invalid(n, "%s is not a number", k)
				return
			}
			excl := strings.HasPrefix(k, "exclusive")
			if !excl {
				if e := n.get("exclusive" + strings.ToUpper(k[:1]) + k[1:]); e != nil && e.kind == jBool && e.b {
					excl = true
				}
			}
			b := &rx.Bound{Value: v.s, Exclusive: excl}
			if strings.HasSuffix(k, "inimum") {
				m.num.lo = tighter(m.num.lo, b, true)
			} else {
				m.num.hi = tighter(m.num.hi, b, false)
			}
		case "not":
			m.nots = append(m.nots, v)
		default:
			if slices.Contains(objectKeywords, k) {
				if !slices.Contains(m.objParts, n) {
					m.objParts = append(m.objParts, n)
				}
				continue
			}
			if slices.Contains(arrayKeywords, k) {
				if !slices.Contains(m.arrParts, n) {
					m.arrParts = append(m.arrParts, n)
				}
				continue
			}
			c.unsupported(n, k, "")
			return
		}
	}
}

func nonNegInt(v *jvalue) (int, bool) {
	if v.kind != jNum {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(v.s)
	if !ok || r.Sign() < 0 || !r.IsInt() {
		return 0, false
	}
	if !r.Num().IsInt64() || r.Num().Int64() > 1<<30 {
		return 1 << 30, true
	}
	return int(r.Num().Int64()), true
}

// tighter returns the more restrictive of two bounds.
func tighter(a, b *rx.Bound, lower bool) *rx.Bound {
	if a == nil {
		return b
	}
	ra, _ := new(big.Rat).SetString(a.Value)
	rb, _ := new(big.Rat).SetString(b.Value)
	if ra == nil {
		return b
	}
	if rb == nil {
		return a
	}
	cmp := ra.Cmp(rb)
	if !lower {
		cmp = -cmp
	}
	switch {
	case cmp > 0:
		return a
	case cmp < 0:
		return b
	}
	if a.Exclusive {
		return a
	}
	return b
}

// enumIntersection is the values of a that b holds too, in a's order.
// Scalars are found by their canonical spelling (two 20,000-value enums
// compared pair by pair took seconds); objects and arrays pair by pair.
func enumIntersection(a, b []*jvalue) []*jvalue {
	inB := map[string]bool{}
	var composite []*jvalue
	for _, y := range b {
		if k, ok := scalarKey(y); ok {
			inB[k] = true
		} else {
			composite = append(composite, y)
		}
	}
	var keep []*jvalue
	for _, x := range a {
		if k, ok := scalarKey(x); ok {
			if inB[k] {
				keep = append(keep, x)
			}
			continue
		}
		for _, y := range composite {
			if jsonEqual(x, y) {
				keep = append(keep, x)
				break
			}
		}
	}
	return keep
}

// scalarKey is a spelling of a scalar JSON value under which jsonEqual's
// equal values are equal (numbers by their exact rational value), and
// false for objects, arrays and numbers that do not parse.
func scalarKey(v *jvalue) (string, bool) {
	switch v.kind {
	case jNull:
		return "n", true
	case jBool:
		return "b" + strconv.FormatBool(v.b), true
	case jStr:
		return "s" + v.s, true
	case jNum:
		if r, ok := new(big.Rat).SetString(v.s); ok {
			return "#" + r.RatString(), true
		}
	}
	return "", false
}

// jsonEqual is JSON Schema's equality: numbers by value, objects
// regardless of member order.
func jsonEqual(a, b *jvalue) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case jNull:
		return true
	case jBool:
		return a.b == b.b
	case jStr:
		return a.s == b.s
	case jNum:
		x, ok1 := new(big.Rat).SetString(a.s)
		y, ok2 := new(big.Rat).SetString(b.s)
		return ok1 && ok2 && x.Cmp(y) == 0
	case jArr:
		if len(a.arr) != len(b.arr) {
			return false
		}
		for i := range a.arr {
			if !jsonEqual(a.arr[i], b.arr[i]) {
				return false
			}
		}
		return true
	}
	if len(a.keys) != len(b.keys) {
		return false
	}
	for i, k := range a.keys {
		y := b.get(k)
		if y == nil || !jsonEqual(a.vals[i], y) {
			return false
		}
	}
	return true
}

// emit returns the alternatives (one per JSON type allowed) of a merged
// conjunction.
func (c *schemaCompiler) emit(m *merged) []sym {
	if m.types == 0 {
		return nil
	}
	types := m.types
	// Negations first: they may remove types or add exclusions.
	var strExcl, numExcl []*jvalue
	for _, nt := range m.nots {
		types = c.applyNot(m, nt, types, &strExcl, &numExcl)
		if c.err != nil {
			return nil
		}
	}
	if m.hasEnum {
		return c.emitEnum(m, types, strExcl, numExcl)
	}
	var out []sym
	if types&tNull != 0 {
		out = append(out, c.litSym("null"))
	}
	if types&tBool != 0 {
		out = append(out, c.litSym("true"), c.litSym("false"))
	}
	if types&tString != 0 {
		if t := c.stringTerm(m.str, strExcl); t != rx.Nothing {
			out = append(out, c.b.lexeme(t))
		}
	}
	if types&(tNumber|tInteger) != 0 {
		if t := c.numberTerm(m, types, numExcl); t != rx.Nothing {
			out = append(out, c.b.lexeme(t))
		}
	}
	if types&tObject != 0 {
		out = append(out, c.object(m))
	}
	if types&tArray != 0 {
		out = append(out, c.array(m))
	}
	return out
}

func (c *schemaCompiler) litSym(s string) sym {
	if x, ok := c.litLexemes[s]; ok {
		return x
	}
	x := c.b.lit(s)
	c.litLexemes[s] = x
	return x
}

// applyNot narrows types (and collects excluded values) for "not": the
// forms with an exact meaning here are negated types, values, patterns and
// required properties; others are unsupported.
func (c *schemaCompiler) applyNot(m *merged, nt *jvalue, types uint8, strExcl, numExcl *[]*jvalue) uint8 {
	if nt.kind == jBool {
		if nt.b {
			return 0
		}
		return types
	}
	if nt.kind != jObj {
		c.invalid(nt, "not is not a schema")
		return types
	}
	if r := nt.get("$ref"); r != nil && r.kind == jStr && len(nt.keys) == 1 {
		if t := c.resolve(nt, r.s); t != nil {
			return c.applyNot(m, t, types, strExcl, numExcl)
		}
		return types
	}
	constrained := 0
	for _, k := range nt.keys {
		if !annotations[k] && jsonSchemaKeywords[k] {
			constrained++
		}
	}
	if constrained == 0 {
		return 0 // not {} matches nothing
	}
	if any := nt.get("anyOf"); any != nil && any.kind == jArr && constrained == 1 {
		for _, x := range any.arr {
			types = c.applyNot(m, x, types, strExcl, numExcl)
		}
		return types
	}
	if t := nt.get("type"); t != nil && constrained == 1 {
		var nt uint8
		if t.kind == jStr {
			nt = typeNames[t.s]
		} else if t.kind == jArr {
			for _, x := range t.arr {
				if x.kind == jStr {
					nt |= typeNames[x.s]
				}
			}
		}
		if nt == tInteger && types&tNumber != 0 {
			c.unsupported(nt2node(t), "not", "not integer among numbers")
			return types
		}
		return types &^ nt
	}
	var vals []*jvalue
	if e := nt.get("enum"); e != nil && e.kind == jArr && constrained == 1 {
		vals = e.arr
	} else if e := nt.get("const"); e != nil && constrained == 1 {
		vals = []*jvalue{e}
	}
	if vals != nil {
		for _, v := range vals {
			switch v.kind {
			case jStr:
				*strExcl = append(*strExcl, v)
			case jNum:
				*numExcl = append(*numExcl, v)
			case jNull:
				types &^= tNull
			case jBool:
				if types&tBool != 0 {
					c.unsupported(nt, "not", "not a boolean value")
				}
			default:
				if types&(tObject|tArray) != 0 {
					c.unsupported(nt, "not", "not an object or array value")
				}
			}
		}
		return types
	}
	if p := nt.get("pattern"); p != nil && p.kind == jStr && (constrained == 1 || constrained == 2 && nt.has("type") && nt.get("type").kind == jStr && nt.get("type").s == "string") {
		*strExcl = append(*strExcl, &jvalue{kind: jObj, keys: []string{"pattern"}, vals: []*jvalue{p}})
		if constrained == 1 {
			// A value that is not a string matches any pattern, so it
			// matches nothing under not.
			types &= tString
		}
		return types
	}
	if r := nt.get("required"); r != nil && r.kind == jArr && len(r.arr) == 1 && r.arr[0].kind == jStr && constrained == 1 {
		// The property must be absent: a schema part forbidding it. A value
		// that is not an object satisfies required, so not excludes it.
		name := r.arr[0]
		m.objParts = append(m.objParts, &jvalue{kind: jObj, keys: []string{"properties"},
			vals: []*jvalue{{kind: jObj, keys: []string{name.s}, vals: []*jvalue{{kind: jBool, b: false}}}}})
		return types & tObject
	}
	if on, ok := c.oneOfNots[nt]; ok {
		c.unsupported(on, "oneOf", "alternatives that may overlap and whose negation cannot be expressed")
		return types
	}
	c.unsupported(nt, "not", "only not type/enum/const/pattern/required-one/anyOf of those")
	return types
}

func nt2node(v *jvalue) *jvalue { return v }

// emitEnum restricts the allowed values to the enum's.
func (c *schemaCompiler) emitEnum(m *merged, types uint8, strExcl, numExcl []*jvalue) []sym {
	p := c.b.pool
	var out []sym
	var strs []rx.ID
	strCons := c.stringTerm(m.str, strExcl)
	for _, v := range m.enum {
		switch v.kind {
		case jNull:
			if types&tNull != 0 {
				out = append(out, c.litSym("null"))
			}
		case jBool:
			if types&tBool != 0 {
				out = append(out, c.litSym(strconv.FormatBool(v.b)))
			}
		case jStr:
			if types&tString != 0 && strCons != rx.Nothing {
				// The value's spelling is in the string term's language
				// (a walk over its cached rows; intersecting each value
				// with it and searching the product took a 20,000-value
				// enum 9 s).
				spelled := appendJSONString(nil, v.s)
				if p.Match(strCons, spelled) {
					strs = append(strs, p.Literal(string(spelled)))
				}
			}
		case jNum:
			if types&(tNumber|tInteger) == 0 {
				continue
			}
			node, err := rx.Number(&rx.Bound{Value: v.s}, &rx.Bound{Value: v.s}, false)
			if err != nil {
				c.invalid(m.at, "enum number %s: %v", v.s, err)
				return nil
			}
			spell := rx.Lower(p, node, rx.UTF8Encoding{})
			cons := c.numberTerm(m, types, numExcl)
			if t := p.And(spell, cons); t != rx.Nothing && p.Live(t) {
				out = append(out, c.b.lexeme(t))
			}
		case jObj, jArr:
			if v.kind == jObj && types&tObject == 0 || v.kind == jArr && types&tArray == 0 {
				continue
			}
			if v.kind == jObj && len(m.objParts) > 0 || v.kind == jArr && len(m.arrParts) > 0 {
				c.unsupported(m.at, "enum", "object or array values together with object or array keywords")
				return nil
			}
			out = append(out, c.b.lexeme(p.Literal(string(appendCompact(nil, v)))))
		}
	}
	if len(strs) > 0 {
		out = append(out, c.b.lexeme(p.Or(strs...)))
	}
	return out
}

// stringTerm is the lexeme (quotes included) of the strings satisfying s,
// minus the excluded values and patterns; Nothing when none does.
func (c *schemaCompiler) stringTerm(s strCons, excl []*jvalue) rx.ID {
	p := c.b.pool
	body := c.strBody
	var parts []rx.ID
	if s.min > 0 || s.max >= 0 {
		if s.max >= 0 && s.min > s.max {
			return rx.Nothing
		}
		parts = append(parts, p.Repeat(c.anyChar, s.min, s.max))
	}
	for _, pat := range s.patterns {
		n, err := c.pattern(pat)
		if err != nil {
			c.patternError(s.at, "pattern", pat, err)
			return rx.Nothing
		}
		parts = append(parts, rx.Lower(p, n, rx.JSONStringEncoding{}))
	}
	for _, f := range s.formats {
		n, err := c.pattern(stringFormats[f])
		if err != nil {
			c.fail(fmt.Errorf("format %q: %w", f, err))
			return rx.Nothing
		}
		parts = append(parts, rx.Lower(p, n, rx.JSONStringEncoding{}))
	}
	if len(parts) > 0 {
		body = p.And(parts...) // each is within strBody already
	}
	t := p.Seq(p.Byte('"'), body, p.Byte('"'))
	var ex []rx.ID
	for _, e := range excl {
		if e.kind == jStr {
			ex = append(ex, p.Literal(string(appendJSONString(nil, e.s))))
			continue
		}
		n, err := c.pattern(e.get("pattern").s)
		if err != nil {
			c.patternError(s.at, "not", e.get("pattern").s, err)
			return rx.Nothing
		}
		ex = append(ex, p.Seq(p.Byte('"'), rx.Lower(p, n, rx.JSONStringEncoding{}), p.Byte('"')))
	}
	if len(ex) > 0 {
		t = p.And(t, p.Not(p.Or(ex...)))
	}
	if t != rx.Nothing && !p.Live(t) {
		return rx.Nothing
	}
	return t
}

func (c *schemaCompiler) pattern(src string) (*rx.Node, error) {
	if n, ok := c.patterns[src]; ok {
		return n, nil
	}
	n, err := rx.ParsePattern(src)
	if err != nil {
		return nil, err
	}
	c.patterns[src] = n
	return n, nil
}

// numberTerm is the lexeme of the numbers allowed by m and types.
func (c *schemaCompiler) numberTerm(m *merged, types uint8, excl []*jvalue) rx.ID {
	p := c.b.pool
	integer := types&tNumber == 0
	lo, hi := m.num.lo, m.num.hi
	for _, f := range m.num.formats {
		if !integer {
			continue
		}
		if f == "int32" {
			lo, hi = tighter(lo, &rx.Bound{Value: "-2147483648"}, true), tighter(hi, &rx.Bound{Value: "2147483647"}, false)
		} else {
			lo, hi = tighter(lo, &rx.Bound{Value: "-9223372036854775808"}, true), tighter(hi, &rx.Bound{Value: "9223372036854775807"}, false)
		}
	}
	n, err := rx.Number(lo, hi, integer)
	if err != nil {
		c.invalid(m.at, "%v", err)
		return rx.Nothing
	}
	t := rx.Lower(p, n, rx.UTF8Encoding{})
	if len(excl) > 0 {
		var ex []rx.ID
		for _, e := range excl {
			node, err := rx.Number(&rx.Bound{Value: e.s}, &rx.Bound{Value: e.s}, false)
			if err != nil {
				c.invalid(m.at, "%v", err)
				return rx.Nothing
			}
			ex = append(ex, rx.Lower(p, node, rx.UTF8Encoding{}))
		}
		t = p.And(t, p.Not(p.Or(ex...)))
	}
	if t != rx.Nothing && !p.Live(t) {
		return rx.Nothing
	}
	return t
}

// any is the symbol of every JSON value.
func (c *schemaCompiler) any() sym {
	if !c.hasAny {
		c.hasAny = true
		c.anyValue = c.b.rule("any")
		c.b.add(c.anyValue, c.compile(conj{{n: &jvalue{kind: jBool, b: true}}}))
	}
	return c.anyValue
}
