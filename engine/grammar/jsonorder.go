package grammar

import (
	"fmt"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// OrderJSON rewrites a JSON document compactly, with the members of each
// object in the order the schema lists their properties (members the
// schema does not list keep their order, after the listed ones): the order
// in which CompileJSONSchema's grammar generates them. It serves to check
// existing documents against the grammar (as MaskBench does) and to
// compare generated output with expected values.
func OrderJSON(schema, doc []byte) ([]byte, error) {
	root, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	v, err := parseJSON(doc)
	if err != nil {
		return nil, err
	}
	c := newSchemaCompiler(root, JSONOptions{})
	c.order(v, []*jvalue{root}, 0)
	return appendCompact(nil, v), nil
}

// order sorts v's object members by the property order of schemas (and of
// every schema they reach through $ref, allOf, anyOf, oneOf), recursively.
func (c *schemaCompiler) order(v *jvalue, schemas []*jvalue, depth int) {
	if depth > maxJSONDepth || len(schemas) == 0 {
		return
	}
	all := c.reach(schemas, v)
	switch v.kind {
	case jObj:
		var names []string
		seen := map[string]bool{}
		for _, s := range all {
			if props := s.get("properties"); props != nil && props.kind == jObj {
				for _, k := range props.keys {
					if !seen[k] {
						seen[k] = true
						names = append(names, k)
					}
				}
			}
		}
		// Then required names no properties list, as the compiler
		// generates them.
		for _, s := range all {
			if req := s.get("required"); req != nil && req.kind == jArr {
				for _, r := range req.arr {
					if r.kind == jStr && !seen[r.s] {
						seen[r.s] = true
						names = append(names, r.s)
					}
				}
			}
		}
		var keys []string
		var vals []*jvalue
		used := make([]bool, len(v.keys))
		for _, name := range names {
			for i, k := range v.keys {
				if !used[i] && k == name {
					used[i] = true
					keys, vals = append(keys, k), append(vals, v.vals[i])
				}
			}
		}
		for i, k := range v.keys {
			if !used[i] {
				keys, vals = append(keys, k), append(vals, v.vals[i])
			}
		}
		v.keys, v.vals = keys, vals
		for i, k := range v.keys {
			var sub []*jvalue
			for _, s := range all {
				if props := s.get("properties"); props != nil && props.has(k) {
					sub = append(sub, props.get(k))
					continue
				}
				if pp := s.get("patternProperties"); pp != nil && pp.kind == jObj {
					for j, src := range pp.keys {
						if n, err := c.pattern(src); err == nil && c.b.pool.Match(rx.Lower(c.b.pool, n, rx.UTF8Encoding{}), []byte(k)) {
							sub = append(sub, pp.vals[j])
						}
					}
				}
				if ap := s.get("additionalProperties"); ap != nil && ap.kind == jObj {
					sub = append(sub, ap)
				}
			}
			c.order(v.vals[i], sub, depth+1)
		}
	case jArr:
		for i, x := range v.arr {
			var sub []*jvalue
			for _, s := range all {
				items, prefix := s.get("items"), s.get("prefixItems")
				switch {
				case prefix != nil && prefix.kind == jArr && i < len(prefix.arr):
					sub = append(sub, prefix.arr[i])
				case items != nil && items.kind == jArr:
					if i < len(items.arr) {
						sub = append(sub, items.arr[i])
					} else if ai := s.get("additionalItems"); ai != nil {
						sub = append(sub, ai)
					}
				case items != nil:
					sub = append(sub, items)
				}
			}
			c.order(x, sub, depth+1)
		}
	}
}

// reach returns schemas and every schema they reach through $ref, allOf,
// and the alternative of each anyOf and oneOf that fits v best, in order,
// each once. Draft 4 to 7 ignore the siblings of $ref, as the compiler does.
func (c *schemaCompiler) reach(schemas []*jvalue, v *jvalue) []*jvalue {
	var out []*jvalue
	seen := map[*jvalue]bool{}
	var visit func(s *jvalue, depth int)
	visit = func(s *jvalue, depth int) {
		if s == nil || s.kind != jObj || seen[s] || depth > 64 {
			return
		}
		seen[s] = true
		if r := s.get("$ref"); r != nil && r.kind == jStr && c.draft <= 7 {
			t := c.resolve(s, r.s)
			c.err = nil
			visit(t, depth+1)
			return
		}
		out = append(out, s)
		// In the order the schema writes its combinators, as the compiler.
		for _, k := range s.keys {
			l := s.get(k)
			switch k {
			case "$ref":
				if l.kind == jStr {
					t := c.resolve(s, l.s)
					c.err = nil
					visit(t, depth+1)
				}
			case "allOf":
				if l.kind == jArr {
					for _, x := range l.arr {
						visit(x, depth+1)
					}
				}
			case "anyOf", "oneOf":
				if l.kind == jArr && len(l.arr) > 0 {
					best, bestScore := l.arr[0], -1<<30
					for _, x := range l.arr {
						if sc := c.fit(x, v); sc > bestScore {
							best, bestScore = x, sc
						}
					}
					visit(best, depth+1)
				}
			}
		}
	}
	for _, s := range schemas {
		visit(s, 0)
	}
	return out
}

// fit scores how well value v fits schema s, to pick the alternative of
// an anyOf or oneOf whose property order applies: the JSON type, the
// properties it lists that v has, the required ones v lacks, and const or
// enum values v's members contradict.
func (c *schemaCompiler) fit(s *jvalue, v *jvalue) int {
	if c.typesOf(s, 0)&kindType(v) == 0 && !(v.kind == jNum && c.typesOf(s, 0)&tNumber != 0) {
		return -1000
	}
	if v.kind != jObj {
		return 0
	}
	score := 0
	for _, x := range c.reach([]*jvalue{s}, &jvalue{kind: jNull}) {
		props := x.get("properties")
		for i, k := range v.keys {
			if props == nil || !props.has(k) {
				continue
			}
			score += 10
			if vals := enumValues(c.deref(props.get(k))); vals != nil {
				match := false
				for _, e := range vals {
					if jsonEqual(e, v.vals[i]) {
						match = true
					}
				}
				if !match {
					score -= 100
				}
			}
		}
		for name := range requiredSet(x) {
			if !v.has(name) {
				score -= 5
			}
		}
	}
	return score
}
