package grammar

import (
	"fmt"
	"strings"
)

// Kind names a constraint language.
type Kind string

// The constraint languages.
const (
	KindJSONSchema Kind = "json_schema" // Source is a JSON Schema
	KindJSON       Kind = "json"        // any JSON value (Source empty)
	KindJSONObject Kind = "json_object" // any JSON object (Source empty)
	KindGBNF       Kind = "gbnf"        // Source is a GBNF grammar
	KindRegex      Kind = "regex"       // Source is an ECMAScript regex the whole output matches
)

// Spec is a constraint as a client states it.
type Spec struct {
	Kind   Kind
	Source string
}

// Compile compiles a spec.
func Compile(s Spec) (*Grammar, error) {
	switch s.Kind {
	case KindJSONSchema:
		return CompileJSONSchema([]byte(s.Source), JSONOptions{})
	case KindJSON:
		return CompileJSON(false)
	case KindJSONObject:
		return CompileJSON(true)
	case KindGBNF:
		return CompileGBNF(s.Source)
	case KindRegex:
		return CompileRegex(s.Source)
	}
	return nil, fmt.Errorf("grammar: unknown constraint kind %q", s.Kind)
}

// Part is the spec as a part of a composed grammar, matching what
// Compile(s) matches.
func (s Spec) Part() (Part, error) {
	switch s.Kind {
	case KindJSONSchema:
		return JSONValue([]byte(s.Source), JSONOptions{}), nil
	case KindJSON:
		return JSONValue([]byte(`{}`), JSONOptions{}), nil
	case KindJSONObject:
		return JSONValue([]byte(`{"type":"object"}`), JSONOptions{}), nil
	case KindGBNF:
		return GBNF(s.Source), nil
	case KindRegex:
		return Regex(s.Source), nil
	}
	return Part{}, fmt.Errorf("grammar: unknown constraint kind %q", s.Kind)
}

// cacheSize is how many compiled constraints a Vocab keeps, and
// cacheSymbols how large they may be together (symbols over their
// right-hand sides, about 70 bytes each once compiled): a schema a few
// hundred bytes long ("maxItems": 200000) compiles to some 40 MB, so 64 of
// them, one request each, held gigabytes.
const (
	cacheSize    = 64
	cacheSymbols = 2 * maxSymbols
)

// Constraint returns the compiled constraint for s over this vocabulary,
// compiling it on first use: repeated requests with the same schema or
// grammar reuse the compiled grammar and everything its masks cached.
// The cache keeps the most recently used constraints.
func (v *Vocab) Constraint(s Spec) (*Constraint, error) {
	key := string(s.Kind) + "\x00" + s.Source
	return v.Cached(key, func() (*Grammar, error) { return Compile(s) })
}

// Cached returns the constraint cached under key, or compiles one with
// build and caches it (for grammars built with Compose: use Part.Key in
// the key).
func (v *Vocab) Cached(key string, build func() (*Grammar, error)) (*Constraint, error) {
	v.mu.Lock()
	if c, ok := v.cache[key]; ok {
		v.touch(key)
		v.mu.Unlock()
		return c, nil
	}
	v.mu.Unlock()
	g, err := build()
	if err != nil {
		return nil, err
	}
	for _, name := range g.specials {
		if !v.names[name] {
			// No token could ever match it: the output would stop short
			// of the grammar, with nothing to say why.
			return nil, fmt.Errorf("%w: %s is no special token of this model's vocabulary", ErrGBNF, name)
		}
	}
	c := NewConstraint(g, v)
	v.mu.Lock()
	defer v.mu.Unlock()
	if old, ok := v.cache[key]; ok { // compiled meanwhile by another caller
		v.touch(key)
		return old, nil
	}
	v.cache[key] = c
	v.order = append(v.order, key)
	v.cachedSymbols += len(g.flat)
	// The oldest go first; the newest stays, whatever its size.
	for len(v.order) > 1 && (len(v.order) > cacheSize || v.cachedSymbols > v.cacheBudget) {
		v.cachedSymbols -= len(v.cache[v.order[0]].g.flat)
		delete(v.cache, v.order[0])
		v.order = v.order[1:]
	}
	return c, nil
}

func (v *Vocab) touch(key string) {
	for i, k := range v.order {
		if k == key {
			copy(v.order[i:], v.order[i+1:])
			v.order[len(v.order)-1] = key
			return
		}
	}
}

// String describes a spec briefly (for logs).
func (s Spec) String() string {
	src := strings.Join(strings.Fields(s.Source), " ")
	if len(src) > 60 {
		src = src[:60] + "..."
	}
	return fmt.Sprintf("%s %s", s.Kind, src)
}
