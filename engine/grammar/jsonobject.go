package grammar

import (
	"fmt"
	"slices"

	"github.com/ruvllm/ruvllm/engine/grammar/rx"
)

// object is the symbol of the JSON objects allowed by m's object keywords:
// the listed properties in the order the schema lists them (each once,
// optional ones may be left out), then any number of other properties,
// each checked against additionalProperties or the patternProperties its
// name matches.
func (c *schemaCompiler) object(m *merged) sym {
	p := c.b.pool
	parts := m.objParts
	var names []string
	seen := map[string]bool{}
	required := map[string]bool{}
	minP, maxP := 0, -1
	for _, pt := range parts {
		for _, kw := range []string{"dependencies", "dependentRequired", "dependentSchemas", "unevaluatedProperties"} {
			if v := pt.get(kw); v != nil && !(v.kind == jObj && len(v.keys) == 0) && !(kw == "unevaluatedProperties" && v.kind == jBool && v.b) {
				c.unsupported(pt, kw, "")
				return c.b.nothing()
			}
		}
		if props := pt.get("properties"); props != nil {
			if props.kind != jObj {
				c.invalid(pt, "properties is not an object")
				return c.b.nothing()
			}
			for _, k := range props.keys {
				if !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
		if v := pt.get("minProperties"); v != nil {
			x, ok := nonNegInt(v)
			if !ok {
				c.invalid(pt, "minProperties is not a non-negative integer")
				return c.b.nothing()
			}
			minP = max(minP, x)
		}
		if v := pt.get("maxProperties"); v != nil {
			x, ok := nonNegInt(v)
			if !ok {
				c.invalid(pt, "maxProperties is not a non-negative integer")
				return c.b.nothing()
			}
			if maxP < 0 || x < maxP {
				maxP = x
			}
		}
	}
	for _, pt := range parts {
		if req := pt.get("required"); req != nil {
			if req.kind != jArr {
				c.invalid(pt, "required is not an array")
				return c.b.nothing()
			}
			for _, r := range req.arr {
				if r.kind != jStr {
					c.invalid(pt, "required holds a non-string")
					return c.b.nothing()
				}
				required[r.s] = true
				if !seen[r.s] {
					seen[r.s] = true
					names = append(names, r.s)
				}
			}
		}
	}
	if maxP >= 0 && minP > maxP {
		return c.b.nothing()
	}
	// Patterns of all parts, and each part's property-name language.
	type pat struct {
		part int
		src  string
		name rx.ID // matches a decoded name (UTF-8)
		key  rx.ID // matches a quoted key (JSON-encoded)
		val  *jvalue
	}
	var pats []pat
	keyNames := make([]rx.ID, len(parts)) // quoted keys allowed by propertyNames (Nothing: no limit)
	for i, pt := range parts {
		if pp := pt.get("patternProperties"); pp != nil {
			if pp.kind != jObj {
				c.invalid(pt, "patternProperties is not an object")
				return c.b.nothing()
			}
			for j, src := range pp.keys {
				n, err := c.pattern(src)
				if err != nil {
					c.unsupported(pt, "patternProperties", err.Error())
					return c.b.nothing()
				}
				pats = append(pats, pat{part: i, src: src, name: rx.Lower(p, n, rx.UTF8Encoding{}),
					key: p.Seq(p.Byte('"'), rx.Lower(p, n, rx.JSONStringEncoding{}), p.Byte('"')), val: pp.vals[j]})
			}
		}
		if pn := pt.get("propertyNames"); pn != nil {
			keyNames[i] = c.propertyNames(pn)
			if c.err != nil {
				return c.b.nothing()
			}
		}
	}
	// The listed properties.
	type member struct {
		name     string
		required bool
		val      sym
	}
	var members []member
	for _, name := range names {
		var vc conj
		forbidden := false
		quoted := appendJSONString(nil, name)
		for i, pt := range parts {
			if kn := keyNames[i]; kn != rx.Nothing && !p.Match(kn, quoted) {
				forbidden = true
				break
			}
			matched := false
			if props := pt.get("properties"); props != nil && props.has(name) {
				vc = append(vc, part{n: props.get(name)})
				matched = true
			}
			for _, pa := range pats {
				if pa.part == i && p.Match(pa.name, []byte(name)) {
					vc = append(vc, part{n: pa.val})
					matched = true
				}
			}
			if !matched {
				if ap := pt.get("additionalProperties"); ap != nil {
					if ap.kind == jBool && !ap.b {
						forbidden = true
						break
					}
					vc = append(vc, part{n: ap})
				}
			}
		}
		if !forbidden && len(vc) > 0 && c.alwaysFalse(vc) {
			forbidden = true
		}
		if forbidden {
			if required[name] {
				return c.b.nothing()
			}
			continue
		}
		v := c.any()
		if len(vc) > 0 {
			v = c.compile(vc)
		}
		members = append(members, member{name, required[name], v})
	}
	// Other properties, by which patterns their names match.
	if len(pats) > maxPatternClasses {
		c.unsupported(parts[0], "patternProperties", fmt.Sprintf("more than %d patterns on one object", maxPatternClasses))
		return c.b.nothing()
	}
	anyKey := p.Seq(p.Byte('"'), p.Star(c.keyChar), p.Byte('"'))
	var listed []rx.ID
	for _, name := range names {
		listed = append(listed, rx.Lower(p, rx.Lit(name), rx.JSONStringEncoding{}))
	}
	baseKey := anyKey
	if len(listed) > 0 {
		baseKey = p.And(anyKey, p.Not(p.Seq(p.Byte('"'), p.Or(listed...), p.Byte('"'))))
	}
	for _, kn := range keyNames {
		if kn != rx.Nothing {
			baseKey = p.And(baseKey, kn)
		}
	}
	type extra struct {
		key rx.ID
		val sym
	}
	var extras []extra
	for mask := 0; mask < 1<<len(pats); mask++ {
		key := baseKey
		var vc conj
		forbidden := false
		for j, pa := range pats {
			if mask&(1<<j) != 0 {
				key = p.And(key, pa.key)
				vc = append(vc, part{n: pa.val})
			} else {
				key = p.And(key, p.Not(pa.key))
			}
		}
		for i, pt := range parts {
			own := false
			for j, pa := range pats {
				if pa.part == i && mask&(1<<j) != 0 {
					own = true
				}
			}
			if own {
				continue
			}
			if ap := pt.get("additionalProperties"); ap != nil {
				if ap.kind == jBool && !ap.b {
					forbidden = true
					break
				}
				vc = append(vc, part{n: ap})
			}
		}
		if forbidden || !p.Live(key) || len(vc) > 0 && c.alwaysFalse(vc) {
			continue
		}
		v := c.any()
		if len(vc) > 0 {
			v = c.compile(vc)
		}
		extras = append(extras, extra{key, v})
	}
	if c.err != nil {
		return c.b.nothing()
	}

	// The members in order, counting them when minProperties or
	// maxProperties asks: state (i, count, started).
	counting := minP > 0 || maxP >= 0
	limit := minP
	if maxP >= 0 {
		limit = maxP
	}
	if counting && (len(members)+1)*(limit+2) > maxCountStates {
		c.unsupported(parts[0], "maxProperties", "too many properties to count")
		return c.b.nothing()
	}
	firstKey := func(i int) sym { return c.b.lit(string(appendJSONString(nil, members[i].name)) + ":") }
	nextKey := func(i int) sym { return c.b.lit("," + string(appendJSONString(nil, members[i].name)) + ":") }
	extraFirst, extraNext := c.b.nothing(), c.b.nothing()
	if len(extras) > 0 {
		var fs, ns []sym
		for _, e := range extras {
			fs = append(fs, c.b.seq(c.b.lexeme(p.Seq(e.key, p.Byte(':'))), e.val))
			ns = append(ns, c.b.seq(c.b.lexeme(p.Seq(p.Byte(','), e.key, p.Byte(':'))), e.val))
		}
		extraFirst, extraNext = c.b.alt(fs...), c.b.alt(ns...)
	}
	type state struct {
		i, n    int
		started bool
	}
	memo := map[state]sym{}
	capN := func(n int) int {
		if !counting {
			return 0
		}
		if maxP < 0 && n > minP {
			return minP
		}
		return n
	}
	var tail func(n int, started bool) sym // the other properties
	tailMemo := map[state]sym{}
	tail = func(n int, started bool) sym {
		k := state{-1, n, started}
		if s, ok := tailMemo[k]; ok {
			return s
		}
		r := c.b.rule("")
		tailMemo[k] = r
		if len(extras) == 0 || !counting {
			if !counting || n >= minP {
				if len(extras) == 0 {
					c.b.add(r)
					return r
				}
				more := c.b.star(extraNext)
				if started {
					c.b.add(r, more)
				} else {
					c.b.add(r)
					c.b.add(r, extraFirst, more)
				}
			}
			return r
		}
		if n >= minP {
			c.b.add(r)
		}
		if maxP < 0 || n < maxP {
			next := extraNext
			if !started {
				next = extraFirst
			}
			c.b.add(r, next, tail(capN(n+1), true))
		}
		return r
	}
	var chain func(i, n int, started bool) sym
	chain = func(i, n int, started bool) sym {
		k := state{i, n, started}
		if s, ok := memo[k]; ok {
			return s
		}
		if i == len(members) {
			s := tail(n, started)
			memo[k] = s
			return s
		}
		r := c.b.rule("")
		memo[k] = r
		mem := members[i]
		if !counting || maxP < 0 || n < maxP {
			key := firstKey(i)
			if started {
				key = nextKey(i)
			}
			c.b.add(r, key, mem.val, chain(i+1, capN(n+1), true))
		}
		if !mem.required {
			c.b.add(r, chain(i+1, n, started))
		}
		return r
	}
	return c.b.seq(c.litSym("{"), chain(0, 0, false), c.litSym("}"))
}

// alwaysFalse reports whether a conjunction is a plain false schema.
func (c *schemaCompiler) alwaysFalse(vc conj) bool {
	for _, x := range vc {
		if x.n.kind == jBool && !x.n.b {
			return true
		}
	}
	return false
}

// propertyNames returns the quoted keys a propertyNames schema allows.
func (c *schemaCompiler) propertyNames(pn *jvalue) rx.ID {
	p := c.b.pool
	alts := c.expand(conj{{n: pn}})
	if c.err != nil {
		return rx.Nothing
	}
	var out []rx.ID
	for _, a := range alts {
		m := c.merge(a)
		if c.err != nil {
			return rx.Nothing
		}
		if len(m.objParts) > 0 || len(m.arrParts) > 0 {
			// Object and array keywords do not constrain a string.
		}
		if m.types&tString == 0 {
			continue
		}
		var strExcl, numExcl []*jvalue
		types := m.types
		for _, nt := range m.nots {
			types = c.applyNot(m, nt, types, &strExcl, &numExcl)
		}
		if types&tString == 0 || c.err != nil {
			continue
		}
		t := c.stringTerm(m.str, strExcl)
		if m.hasEnum {
			var lits []rx.ID
			for _, v := range m.enum {
				if v.kind == jStr {
					lits = append(lits, p.Literal(string(appendJSONString(nil, v.s))))
				}
			}
			t = p.And(t, p.Or(lits...))
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return p.Byte(0) // no name at all: a language no quoted key is in
	}
	return p.Or(out...)
}

// array is the symbol of the JSON arrays allowed by m's array keywords.
func (c *schemaCompiler) array(m *merged) sym {
	parts := m.arrParts
	minI, maxI := 0, -1
	type shape struct {
		tuple []*jvalue
		rest  *jvalue // nil: any
	}
	var shapes []shape
	unique := false
	for _, pt := range parts {
		for _, kw := range []string{"contains", "minContains", "maxContains", "unevaluatedItems"} {
			if v := pt.get(kw); v != nil && !(kw == "unevaluatedItems" && v.kind == jBool && v.b) {
				c.unsupported(pt, kw, "")
				return c.b.nothing()
			}
		}
		if u := pt.get("uniqueItems"); u != nil && u.kind == jBool && u.b {
			unique = true
		}
		if v := pt.get("minItems"); v != nil {
			x, ok := nonNegInt(v)
			if !ok {
				c.invalid(pt, "minItems is not a non-negative integer")
				return c.b.nothing()
			}
			minI = max(minI, x)
		}
		if v := pt.get("maxItems"); v != nil {
			x, ok := nonNegInt(v)
			if !ok {
				c.invalid(pt, "maxItems is not a non-negative integer")
				return c.b.nothing()
			}
			if maxI < 0 || x < maxI {
				maxI = x
			}
		}
		var sh shape
		items, prefix := pt.get("items"), pt.get("prefixItems")
		switch {
		case prefix != nil && prefix.kind == jArr:
			sh.tuple = prefix.arr
			if items != nil && items.kind != jArr {
				sh.rest = items
			}
		case items != nil && items.kind == jArr:
			sh.tuple = items.arr
			sh.rest = pt.get("additionalItems")
		case items != nil:
			sh.rest = items
		}
		shapes = append(shapes, sh)
	}
	if maxI >= 0 && minI > maxI {
		return c.b.nothing()
	}
	k := 0
	for _, sh := range shapes {
		k = max(k, len(sh.tuple))
	}
	if maxI >= 0 {
		k = min(k, maxI)
	}
	at := func(sh shape, i int) *jvalue {
		if i < len(sh.tuple) {
			return sh.tuple[i]
		}
		return sh.rest
	}
	valSym := func(i int) (sym, bool) { // i < 0: the rest
		var vc conj
		for _, sh := range shapes {
			var s *jvalue
			if i < 0 {
				s = sh.rest
			} else {
				s = at(sh, i)
			}
			if s == nil {
				continue
			}
			if s.kind == jBool && !s.b {
				return 0, false
			}
			vc = append(vc, part{n: s})
		}
		if len(vc) == 0 {
			return c.any(), true
		}
		return c.compile(vc), true
	}
	var pos []sym
	for i := 0; i < k; i++ {
		s, ok := valSym(i)
		if !ok {
			maxI = i
			if minI > maxI {
				return c.b.nothing()
			}
			break
		}
		pos = append(pos, s)
	}
	k = len(pos)
	if unique && (maxI < 0 || maxI > 1) {
		c.unsupported(parts[0], "uniqueItems", "")
		return c.b.nothing()
	}
	restSym, restOK := valSym(-1)
	comma := c.litSym(",")
	var rest sym
	switch {
	case !restOK || maxI >= 0 && maxI <= k:
		rest = c.b.empty()
		if minI > k {
			return c.b.nothing()
		}
	case k == 0:
		rest = c.b.repeat(restSym, minI, maxI, comma, true)
	default:
		hi := -1
		if maxI >= 0 {
			hi = maxI - k
		}
		rest = c.b.repeat(c.b.seq(comma, restSym), max(0, minI-k), hi, 0, false)
	}
	// Positions of the tuple, from the last back.
	next := rest
	for i := k - 1; i >= 0; i-- {
		r := c.b.rule("")
		if i >= minI {
			c.b.add(r)
		}
		if i == 0 {
			c.b.add(r, pos[i], next)
		} else {
			c.b.add(r, comma, pos[i], next)
		}
		next = r
	}
	if k == 0 {
		next = rest
	}
	return c.b.seq(c.litSym("["), next, c.litSym("]"))
}

// oneOfAlternatives is the anyOf that a oneOf means: its own alternatives
// where no two overlap, else exactOneOf's rewriting. The answer is kept per
// oneOf, since a schema may use one oneOf in many places through $ref and
// the pairwise check costs the square of the alternatives.
func (c *schemaCompiler) oneOfAlternatives(n *jvalue, alts []*jvalue) []*jvalue {
	if out, ok := c.oneOfMemo[n]; ok {
		return out
	}
	out := alts
	if !c.oneOfDisjoint(n, alts) {
		out = c.exactOneOf(n, alts)
	}
	c.oneOfMemo[n] = out
	return out
}

// oneOfDisjoint reports whether no value can match two of the
// alternatives, which makes oneOf the same as anyOf.
func (c *schemaCompiler) oneOfDisjoint(n *jvalue, alts []*jvalue) bool {
	for i := range alts {
		for j := i + 1; j < len(alts); j++ {
			if !c.disjoint(alts[i], alts[j], 0) {
				return false
			}
		}
	}
	return true
}

// exactOneOf rewrites a oneOf whose alternatives may overlap as the anyOf
// of each alternative with the negations of the others, which is what
// oneOf means. The negations compile where "not" of their form is exact
// (types, values, patterns, one required property, and anyOf of those);
// otherwise the schema does not compile, naming oneOf.
func (c *schemaCompiler) exactOneOf(n *jvalue, alts []*jvalue) []*jvalue {
	out := make([]*jvalue, len(alts))
	for i, a := range alts {
		parts := []*jvalue{a}
		for j, b := range alts {
			if j == i || c.disjoint(a, b, 0) {
				continue
			}
			neg := &jvalue{kind: jObj, keys: []string{"not"}, vals: []*jvalue{b}}
			c.oneOfNots[b] = n
			parts = append(parts, neg)
		}
		out[i] = &jvalue{kind: jObj, keys: []string{"allOf"}, vals: []*jvalue{{kind: jArr, arr: parts}}}
		c.base[out[i]], c.path[out[i]] = c.base[n], c.pathOf(n)
	}
	return out
}

// deref follows $ref chains of a schema that is only a $ref.
func (c *schemaCompiler) deref(s *jvalue) *jvalue {
	for k := 0; k < 32 && s != nil && s.kind == jObj; k++ {
		r := s.get("$ref")
		if r == nil || r.kind != jStr {
			return s
		}
		if c.draft >= 2019 && len(s.keys) > 1 {
			return s
		}
		t := c.resolve(s, r.s)
		if t == nil {
			c.err = nil // a bad ref is reported when compiled
			return s
		}
		s = t
	}
	return s
}

// typesOf over-approximates the JSON types a schema accepts.
func (c *schemaCompiler) typesOf(s *jvalue, depth int) uint8 {
	s = c.deref(s)
	if s == nil || depth > 8 {
		return tAll
	}
	if s.kind == jBool {
		if s.b {
			return tAll
		}
		return 0
	}
	if s.kind != jObj {
		return tAll
	}
	t := tAll
	if ty := s.get("type"); ty != nil {
		var x uint8
		if ty.kind == jStr {
			x = typeNames[ty.s]
		} else if ty.kind == jArr {
			for _, e := range ty.arr {
				if e.kind == jStr {
					x |= typeNames[e.s]
				}
			}
		}
		if nb := s.get("nullable"); nb != nil && nb.kind == jBool && nb.b {
			x |= tNull
		}
		t &= x
	}
	if vals := enumValues(s); vals != nil {
		var x uint8
		for _, v := range vals {
			x |= kindType(v)
		}
		t &= x
	}
	if all := s.get("allOf"); all != nil && all.kind == jArr {
		for _, a := range all.arr {
			t &= c.typesOf(a, depth+1)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if any := s.get(kw); any != nil && any.kind == jArr {
			var x uint8
			for _, a := range any.arr {
				x |= c.typesOf(a, depth+1)
			}
			t &= x
		}
	}
	return t
}

func kindType(v *jvalue) uint8 {
	switch v.kind {
	case jNull:
		return tNull
	case jBool:
		return tBool
	case jStr:
		return tString
	case jArr:
		return tArray
	case jObj:
		return tObject
	}
	if isIntegerLiteral(v.s) {
		return tInteger
	}
	return tNumber
}

func isIntegerLiteral(s string) bool {
	d, err := rxDecimal(s)
	return err == nil && d
}

// rxDecimal reports whether a number literal is an integer.
func rxDecimal(s string) (bool, error) {
	r, ok := newRat(s)
	if !ok {
		return false, fmt.Errorf("bad number %q", s)
	}
	return r.IsInt(), nil
}

func enumValues(s *jvalue) []*jvalue {
	if e := s.get("const"); e != nil {
		return []*jvalue{e}
	}
	if e := s.get("enum"); e != nil && e.kind == jArr {
		return e.arr
	}
	return nil
}

// disjoint reports whether no value can match both a and b (false when
// that cannot be shown).
func (c *schemaCompiler) disjoint(a, b *jvalue, depth int) bool {
	if depth > 6 {
		return false
	}
	a, b = c.deref(a), c.deref(b)
	if a == nil || b == nil {
		return false
	}
	ta, tb := c.typesOf(a, 0), c.typesOf(b, 0)
	if ta&tb == 0 {
		return true
	}
	if ea, eb := enumValues(a), enumValues(b); ea != nil && eb != nil {
		common := false
		for _, x := range ea {
			for _, y := range eb {
				if jsonEqual(x, y) {
					common = true
				}
			}
		}
		if !common {
			return true
		}
	}
	// Objects told apart by a property both require: disjoint values, or
	// one forbids what the other requires.
	if ta&tb == tObject && a.kind == jObj && b.kind == jObj {
		ra, rb := requiredSet(a), requiredSet(b)
		pa, pb := a.get("properties"), b.get("properties")
		for name := range ra {
			if rb[name] && pa != nil && pb != nil && pa.has(name) && pb.has(name) &&
				c.disjoint(pa.get(name), pb.get(name), depth+1) {
				return true
			}
			if forbids(b, name) {
				return true
			}
		}
		for name := range rb {
			if forbids(a, name) {
				return true
			}
		}
	}
	return false
}

func requiredSet(s *jvalue) map[string]bool {
	out := map[string]bool{}
	if r := s.get("required"); r != nil && r.kind == jArr {
		for _, x := range r.arr {
			if x.kind == jStr {
				out[x.s] = true
			}
		}
	}
	return out
}

// forbids reports whether schema s rejects every object with property name.
func forbids(s *jvalue, name string) bool {
	if props := s.get("properties"); props != nil && props.has(name) {
		v := props.get(name)
		return v.kind == jBool && !v.b
	}
	if pp := s.get("patternProperties"); pp != nil && len(pp.keys) > 0 {
		return false
	}
	ap := s.get("additionalProperties")
	return ap != nil && ap.kind == jBool && !ap.b
}

var _ = slices.Contains[[]string]
