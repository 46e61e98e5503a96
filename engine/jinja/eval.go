package jinja

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// scope holds the variables of one level: the template, a loop iteration,
// a macro call. Lookups walk up to the globals.
type scope struct {
	vars   map[string]any
	parent *scope
}

func newScope(parent *scope) *scope { return &scope{vars: map[string]any{}, parent: parent} }

func (s *scope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// ctrl is how a statement list ended: normally, or by break or continue.
type ctrl uint8

const (
	ctrlNone ctrl = iota
	ctrlBreak
	ctrlContinue
)

// renderer is the state of one Render call: limits and counters.
type renderer struct {
	ctx   context.Context
	lim   Limits
	now   func() time.Time // the clock of strftime_now
	steps int
	depth int   // macro calls and recursive loops in progress
	alloc int64 // bytes of strings and list slots made so far
}

// step counts one unit of work against the limit and checks the context
// now and then.
func (r *renderer) step() error {
	r.steps++
	if r.steps > r.lim.MaxSteps {
		return fmt.Errorf("%w: more than %d steps", ErrLimit, r.lim.MaxSteps)
	}
	if r.steps&1023 == 0 {
		return r.ctx.Err()
	}
	return nil
}

// charge counts n bytes of new strings or list slots against the
// allocation limit, and n alone against the size limit of one value.
func (r *renderer) charge(n int) error {
	if n > r.lim.MaxOutput {
		return fmt.Errorf("%w: a value of more than %d bytes", ErrLimit, r.lim.MaxOutput)
	}
	r.alloc += int64(n)
	if r.alloc > r.lim.MaxAlloc {
		return fmt.Errorf("%w: more than %d bytes allocated", ErrLimit, r.lim.MaxAlloc)
	}
	return nil
}

// chargeItems charges a new list of n items at 16 bytes each, as
// repeatList does, before it is made: a string's characters, each a
// string of its own, take many times the string's bytes.
func (r *renderer) chargeItems(n int) error {
	if n > r.lim.MaxOutput/16 {
		return fmt.Errorf("%w: a list of more than %d items", ErrLimit, r.lim.MaxOutput/16)
	}
	return r.charge(n * 16)
}

// write appends s to out within the output limit.
func (r *renderer) write(out *strings.Builder, s string) error {
	if out.Len()+len(s) > r.lim.MaxOutput {
		return fmt.Errorf("%w: output longer than %d bytes", ErrLimit, r.lim.MaxOutput)
	}
	out.WriteString(s)
	return nil
}

// lineError attaches a line number to an error that has none.
func lineError(line int, err error) error {
	var e *Error
	var re *RaiseError
	if err == nil || errors.As(err, &e) || errors.As(err, &re) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &Error{Line: line, Msg: err.Error(), err: err}
}

func (r *renderer) exec(nodes []node, s *scope, out *strings.Builder) (ctrl, error) {
	for _, n := range nodes {
		if err := r.step(); err != nil {
			return ctrlNone, lineError(n.nodeLine(), err)
		}
		c, err := r.execOne(n, s, out)
		if err != nil {
			return ctrlNone, lineError(n.nodeLine(), err)
		}
		if c != ctrlNone {
			return c, nil
		}
	}
	return ctrlNone, nil
}

func (r *renderer) execOne(n node, s *scope, out *strings.Builder) (ctrl, error) {
	switch n := n.(type) {
	case *textNode:
		return ctrlNone, r.write(out, n.text)
	case *outputNode:
		v, err := r.eval(n.x, s)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, r.write(out, toStr(v))
	case *ifNode:
		for i, c := range n.conds {
			v, err := r.eval(c, s)
			if err != nil {
				return ctrlNone, err
			}
			if truthy(v) {
				return r.exec(n.bodies[i], s, out)
			}
		}
		return r.exec(n.els, s, out)
	case *forNode:
		return ctrlNone, r.forLoop(n, s, out)
	case *setNode:
		v, err := r.eval(n.x, s)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, r.assign(n.target, v, s)
	case *setBlockNode:
		var b strings.Builder
		if _, err := r.exec(n.body, newScope(s), &b); err != nil {
			return ctrlNone, err
		}
		v, err := r.applyFilters(n.filters, b.String(), s)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, r.assign(n.target, v, s)
	case *macroNode:
		s.vars[n.m.name] = &macro{def: n.m, closure: s}
		return ctrlNone, nil
	case *callBlockNode:
		v, err := r.call(n.call, s, kwval{"caller", &macro{def: n.caller, closure: s}})
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, r.write(out, toStr(v))
	case *filterBlockNode:
		var b strings.Builder
		if _, err := r.exec(n.body, newScope(s), &b); err != nil {
			return ctrlNone, err
		}
		v, err := r.applyFilters(n.filters, b.String(), s)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, r.write(out, toStr(v))
	case *withNode:
		inner := newScope(s)
		for i, t := range n.targets {
			v, err := r.eval(n.values[i], s)
			if err != nil {
				return ctrlNone, err
			}
			if err := r.assign(t, v, inner); err != nil {
				return ctrlNone, err
			}
		}
		return r.exec(n.body, inner, out)
	case *scopeNode:
		return r.exec(n.body, newScope(s), out)
	case *breakNode:
		return ctrlBreak, nil
	case *continueNode:
		return ctrlContinue, nil
	}
	return ctrlNone, fmt.Errorf("internal error: unknown statement %T", n)
}

// applyFilters runs v through a filter or set block's filters.
func (r *renderer) applyFilters(filters []*filterExpr, v any, s *scope) (any, error) {
	for _, f := range filters {
		var err error
		if v, err = r.filter(f, v, s); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// assign binds t to v in scope s.
func (r *renderer) assign(t target, v any, s *scope) error {
	switch t := t.(type) {
	case *nameTarget:
		s.vars[t.name] = v
		return nil
	case *nsTarget:
		obj, _ := s.lookup(t.name)
		ns, ok := obj.(*namespace)
		if !ok {
			return fmt.Errorf("cannot assign attribute on non-namespace object '%s'", t.name)
		}
		ns.d.set(t.attr, v)
		return nil
	case *tupleTarget:
		items, err := r.iterate(v)
		if err != nil {
			return err
		}
		if len(items) != len(t.items) {
			return fmt.Errorf("cannot unpack %d values into %d names", len(items), len(t.items))
		}
		for i, sub := range t.items {
			if err := r.assign(sub, items[i], s); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("internal error: unknown target %T", t)
}

// iterate returns the items a for loop over v visits: a list's items, a
// dict's keys, a string's characters; nothing for undefined.
func (r *renderer) iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case *List:
		return x.Items, nil
	case *Dict:
		return append([]any(nil), x.keys...), nil
	case string:
		if err := r.chargeItems(utf8.RuneCountInString(x)); err != nil {
			return nil, err
		}
		return chars(x, false), nil
	case markup:
		if err := r.chargeItems(utf8.RuneCountInString(string(x))); err != nil {
			return nil, err
		}
		return chars(string(x), true), nil
	case undefined:
		return nil, nil
	case *namespace:
		return nil, fmt.Errorf("'Namespace' object is not iterable")
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// chars splits a string into its characters (code points).
func chars(s string, safe bool) []any {
	out := make([]any, 0, len(s))
	for _, c := range s {
		if safe {
			out = append(out, markup(string(c)))
		} else {
			out = append(out, string(c))
		}
	}
	return out
}

func (r *renderer) forLoop(n *forNode, s *scope, out *strings.Builder) error {
	v, err := r.eval(n.iter, s)
	if err != nil {
		return err
	}
	return r.loopOver(n, v, s, out, 1)
}

// loopOver runs a for loop's body over v at recursion depth depth.
func (r *renderer) loopOver(n *forNode, v any, s *scope, out *strings.Builder, depth int) error {
	items, err := r.iterate(v)
	if err != nil {
		return err
	}
	if n.cond != nil {
		var kept []any
		for _, it := range items {
			if err := r.step(); err != nil {
				return err
			}
			inner := newScope(s)
			if err := r.assign(n.target, it, inner); err != nil {
				return err
			}
			ok, err := r.eval(n.cond, inner)
			if err != nil {
				return err
			}
			if truthy(ok) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		_, err := r.exec(n.els, newScope(s), out)
		return err
	}
	loop := &loopInfo{items: items, depth: depth}
	if n.recursive {
		loop.recurse = func(v any) (string, error) {
			r.depth++
			defer func() { r.depth-- }()
			if r.depth > r.lim.MaxDepth {
				return "", fmt.Errorf("%w: recursion deeper than %d", ErrLimit, r.lim.MaxDepth)
			}
			var b strings.Builder
			err := r.loopOver(n, v, s, &b, depth+1)
			return b.String(), err
		}
	}
	for i, it := range items {
		if err := r.step(); err != nil {
			return err
		}
		loop.i = i
		inner := newScope(s)
		if err := r.assign(n.target, it, inner); err != nil {
			return err
		}
		inner.vars["loop"] = loop
		c, err := r.exec(n.body, inner, out)
		if err != nil {
			return err
		}
		if c == ctrlBreak {
			break
		}
	}
	return nil
}

// loopInfo is the "loop" variable inside a for loop.
type loopInfo struct {
	items   []any
	i       int
	depth   int
	recurse func(any) (string, error) // loop(...) in a recursive loop
	changed []any                     // last arguments of loop.changed
	hasLast bool
}

func (l *loopInfo) attr(name string) (any, bool) {
	n := int64(len(l.items))
	i := int64(l.i)
	switch name {
	case "index":
		return i + 1, true
	case "index0":
		return i, true
	case "revindex":
		return n - i, true
	case "revindex0":
		return n - i - 1, true
	case "first":
		return i == 0, true
	case "last":
		return i == n-1, true
	case "length":
		return n, true
	case "depth":
		return int64(l.depth), true
	case "depth0":
		return int64(l.depth - 1), true
	case "previtem":
		if i == 0 {
			return undefined{"there is no previous item"}, true
		}
		return l.items[i-1], true
	case "nextitem":
		if i == n-1 {
			return undefined{"there is no next item"}, true
		}
		return l.items[i+1], true
	case "cycle", "changed":
		return &boundMethod{recv: l, method: name}, true
	}
	return nil, false
}

func (r *renderer) eval(x expr, s *scope) (any, error) {
	switch x := x.(type) {
	case *constExpr:
		return x.v, nil
	case *nameExpr:
		if v, ok := s.lookup(x.name); ok {
			return v, nil
		}
		return undefined{fmt.Sprintf("'%s' is undefined", x.name)}, nil
	case *listExpr:
		l := &List{Items: make([]any, len(x.items)), tuple: x.tuple}
		for i, it := range x.items {
			v, err := r.eval(it, s)
			if err != nil {
				return nil, err
			}
			l.Items[i] = v
		}
		return l, r.charge(len(l.Items) * 16)
	case *dictExpr:
		d := NewDict()
		for i, k := range x.keys {
			kv, err := r.eval(k, s)
			if err != nil {
				return nil, err
			}
			if !isHashable(dictKey(kv)) {
				return nil, fmt.Errorf("unhashable type: '%s'", typeName(kv))
			}
			vv, err := r.eval(x.vals[i], s)
			if err != nil {
				return nil, err
			}
			d.set(kv, vv)
		}
		return d, r.charge(len(d.keys) * 32)
	case *getattrExpr:
		obj, err := r.eval(x.x, s)
		if err != nil {
			return nil, err
		}
		return getAttr(obj, x.name)
	case *getitemExpr:
		obj, err := r.eval(x.x, s)
		if err != nil {
			return nil, err
		}
		key, err := r.eval(x.index, s)
		if err != nil {
			return nil, err
		}
		return getItem(obj, key)
	case *sliceExpr:
		return r.slice(x, s)
	case *callExpr:
		return r.call(x, s)
	case *filterExpr:
		v, err := r.eval(x.x, s)
		if err != nil {
			return nil, err
		}
		return r.filter(x, v, s)
	case *testExpr:
		return r.test(x, s)
	case *unaryExpr:
		v, err := r.eval(x.x, s)
		if err != nil {
			return nil, err
		}
		return unary(x.op, v)
	case *binExpr:
		l, err := r.eval(x.l, s)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "and":
			if !truthy(l) {
				return l, nil
			}
			return r.eval(x.r, s)
		case "or":
			if truthy(l) {
				return l, nil
			}
			return r.eval(x.r, s)
		}
		rv, err := r.eval(x.r, s)
		if err != nil {
			return nil, err
		}
		return r.binary(x.op, l, rv)
	case *compareExpr:
		l, err := r.eval(x.first, s)
		if err != nil {
			return nil, err
		}
		for i, op := range x.ops {
			rv, err := r.eval(x.rest[i], s)
			if err != nil {
				return nil, err
			}
			ok, err := compareOp(op, l, rv)
			if err != nil || !ok {
				return false, err
			}
			l = rv
		}
		return true, nil
	case *concatExpr:
		var b strings.Builder
		for _, p := range x.parts {
			v, err := r.eval(p, s)
			if err != nil {
				return nil, err
			}
			str := toStr(v)
			if err := r.charge(b.Len() + len(str)); err != nil {
				return nil, err
			}
			b.WriteString(str)
		}
		return b.String(), nil
	case *condExpr:
		t, err := r.eval(x.test, s)
		if err != nil {
			return nil, err
		}
		if truthy(t) {
			return r.eval(x.yes, s)
		}
		if x.no == nil {
			return undefined{"the inline if-expression evaluated to false and no else section was defined"}, nil
		}
		return r.eval(x.no, s)
	}
	return nil, fmt.Errorf("internal error: unknown expression %T", x)
}

// undefinedError is the error for using an undefined value where a real
// one is needed.
func undefinedError(u undefined) error {
	if u.hint == "" {
		return errors.New("value is undefined")
	}
	return errors.New(u.hint)
}

// getAttr is obj.name: a Python attribute (a method) first, then an item.
func getAttr(obj any, name string) (any, error) {
	switch o := obj.(type) {
	case undefined:
		return nil, undefinedError(o)
	case *Dict:
		if isMethod(obj, name) {
			return &boundMethod{recv: obj, method: name}, nil
		}
		if v, ok := o.get(name); ok {
			return v, nil
		}
		return undefined{fmt.Sprintf("'dict object' has no attribute '%s'", name)}, nil
	case *namespace:
		if v, ok := o.d.get(name); ok {
			return v, nil
		}
	case *loopInfo:
		if v, ok := o.attr(name); ok {
			return v, nil
		}
	default:
		if isMethod(obj, name) {
			return &boundMethod{recv: obj, method: name}, nil
		}
	}
	return undefined{fmt.Sprintf("'%s object' has no attribute '%s'", typeName(obj), name)}, nil
}

// getItem is obj[key]: an item first, then an attribute for string keys.
func getItem(obj any, key any) (any, error) {
	switch o := obj.(type) {
	case undefined:
		return nil, undefinedError(o)
	case *Dict:
		if v, ok := o.get(key); ok {
			return v, nil
		}
	case *List:
		if i, ok := intOf(key); ok {
			n := int64(len(o.Items))
			if i < 0 {
				i += n
			}
			if i >= 0 && i < n {
				return o.Items[i], nil
			}
			return undefined{fmt.Sprintf("%s index %d out of range", typeName(o), i)}, nil
		}
	case string, markup:
		if i, ok := intOf(key); ok {
			str, _ := asString(o)
			rs := []rune(str)
			n := int64(len(rs))
			if i < 0 {
				i += n
			}
			if i >= 0 && i < n {
				if _, safe := o.(markup); safe {
					return markup(string(rs[i])), nil
				}
				return string(rs[i]), nil
			}
			return undefined{"string index out of range"}, nil
		}
	}
	if name, ok := asString(key); ok {
		switch obj.(type) {
		case *Dict:
			if isMethod(obj, name) {
				return &boundMethod{recv: obj, method: name}, nil
			}
			return undefined{fmt.Sprintf("'dict object' has no attribute '%s'", name)}, nil
		}
		return getAttr(obj, name)
	}
	return undefined{fmt.Sprintf("'%s object' has no element %s", typeName(obj), repr(key))}, nil
}

// slice is x[lo:hi:step] on a list or string.
func (r *renderer) slice(x *sliceExpr, s *scope) (any, error) {
	obj, err := r.eval(x.x, s)
	if err != nil {
		return nil, err
	}
	bound := func(e expr) (int64, bool, error) {
		if e == nil {
			return 0, false, nil
		}
		v, err := r.eval(e, s)
		if err != nil || v == nil {
			return 0, false, err
		}
		i, ok := intOf(v)
		if !ok {
			return 0, false, fmt.Errorf("slice indices must be integers or None, not %s", typeName(v))
		}
		return i, true, nil
	}
	lo, hasLo, err := bound(x.lo)
	if err != nil {
		return nil, err
	}
	hi, hasHi, err := bound(x.hi)
	if err != nil {
		return nil, err
	}
	step, hasStep, err := bound(x.step)
	if err != nil {
		return nil, err
	}
	if !hasStep {
		step = 1
	}
	if step == 0 {
		return nil, errors.New("slice step cannot be zero")
	}
	var items []any
	var str []rune
	var safe bool
	switch o := obj.(type) {
	case undefined:
		return nil, undefinedError(o)
	case *List:
		items = o.Items
	case string:
		str = []rune(o)
	case markup:
		str, safe = []rune(string(o)), true
	default:
		return nil, fmt.Errorf("'%s' object is not subscriptable", typeName(obj))
	}
	n := int64(len(items))
	if items == nil {
		n = int64(len(str))
	}
	idx := sliceIndices(n, lo, hasLo, hi, hasHi, step)
	if items != nil || str == nil {
		l := &List{Items: make([]any, len(idx))}
		for i, j := range idx {
			l.Items[i] = items[j]
		}
		if lst, ok := obj.(*List); ok {
			l.tuple = lst.tuple
		}
		return l, r.charge(len(idx) * 16)
	}
	out := make([]rune, len(idx))
	for i, j := range idx {
		out[i] = str[j]
	}
	if safe {
		return markup(string(out)), nil
	}
	return string(out), nil
}

// sliceIndices is Python's slice.indices followed by range.
func sliceIndices(n, lo int64, hasLo bool, hi int64, hasHi bool, step int64) []int64 {
	clamp := func(i int64, def int64, has bool, lower, upper int64) int64 {
		if !has {
			return def
		}
		if i < 0 {
			i += n
			if i < lower {
				i = lower
			}
		} else if i > upper {
			i = upper
		}
		return i
	}
	var start, stop int64
	if step > 0 {
		start = clamp(lo, 0, hasLo, 0, n)
		stop = clamp(hi, n, hasHi, 0, n)
	} else {
		start = clamp(lo, n-1, hasLo, -1, n-1)
		stop = clamp(hi, -1, hasHi, -1, n-1)
	}
	var out []int64
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return out
}

// kwval is a keyword argument's name and value.
type kwval struct {
	name string
	v    any
}

// call evaluates a call expression; extra are keyword arguments added by
// a call block (caller).
func (r *renderer) call(x *callExpr, s *scope, extra ...kwval) (any, error) {
	fn, err := r.eval(x.fn, s)
	if err != nil {
		return nil, err
	}
	args, kwargs, err := r.evalArgs(x.args, x.kwargs, s)
	if err != nil {
		return nil, err
	}
	kwargs = append(kwargs, extra...)
	switch f := fn.(type) {
	case undefined:
		return nil, undefinedError(f)
	case callable:
		return f.call(r, args, kwargs)
	}
	return nil, fmt.Errorf("'%s' object is not callable", typeName(fn))
}

func (r *renderer) evalArgs(xs []expr, kws []kwarg, s *scope) ([]any, []kwval, error) {
	args := make([]any, len(xs))
	for i, a := range xs {
		v, err := r.eval(a, s)
		if err != nil {
			return nil, nil, err
		}
		args[i] = v
	}
	var kwargs []kwval
	for _, k := range kws {
		v, err := r.eval(k.x, s)
		if err != nil {
			return nil, nil, err
		}
		kwargs = append(kwargs, kwval{k.name, v})
	}
	return args, kwargs, nil
}

// callable is anything a template can call.
type callable interface {
	name() string
	call(r *renderer, args []any, kwargs []kwval) (any, error)
}

// macro is a {% macro %} bound to the scope it was defined in.
type macro struct {
	def     *macroDef
	closure *scope
}

func (m *macro) name() string { return m.def.name }

func (m *macro) call(r *renderer, args []any, kwargs []kwval) (any, error) {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > r.lim.MaxDepth {
		return nil, fmt.Errorf("%w: macro calls nested deeper than %d", ErrLimit, r.lim.MaxDepth)
	}
	s := newScope(m.closure)
	d := m.def
	for i, p := range d.params {
		if i < len(args) {
			s.vars[p] = args[i]
		}
	}
	var varargs []any
	if len(args) > len(d.params) {
		varargs = args[len(d.params):]
	}
	kw := NewDict()
	for _, k := range kwargs {
		if k.name == "caller" {
			s.vars["caller"] = k.v
			continue
		}
		i := indexOf(d.params, k.name)
		switch {
		case i < 0:
			kw.set(k.name, k.v)
		case i < len(args):
			return nil, fmt.Errorf("macro '%s' got multiple values for argument '%s'", d.name, k.name)
		default:
			s.vars[k.name] = k.v
		}
	}
	for i, p := range d.params {
		if _, ok := s.vars[p]; ok {
			continue
		}
		if d.defaults[i] == nil {
			s.vars[p] = undefined{fmt.Sprintf("parameter '%s' was not provided", p)}
			continue
		}
		v, err := r.eval(d.defaults[i], s)
		if err != nil {
			return nil, err
		}
		s.vars[p] = v
	}
	s.vars["varargs"] = &List{Items: varargs, tuple: true}
	s.vars["kwargs"] = kw
	var b strings.Builder
	if _, err := r.exec(d.body, s, &b); err != nil {
		return nil, err
	}
	return b.String(), nil
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

// builtin is a global function (range, namespace, raise_exception, ...).
type builtin struct {
	n  string
	fn func(r *renderer, args []any, kwargs []kwval) (any, error)
}

func (b *builtin) name() string { return b.n }
func (b *builtin) call(r *renderer, args []any, kwargs []kwval) (any, error) {
	return b.fn(r, args, kwargs)
}
