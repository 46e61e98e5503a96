package jinja

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// filterFunc implements one filter: v is the input, args and kwargs the
// call's arguments.
type filterFunc func(r *renderer, v any, args []any, kwargs []kwval) (any, error)

// filters is the registration table of the filters templates may use:
// jinja2's built-ins that chat templates need, Hugging Face's tojson, and
// from_json (which some templates call to parse tool-call arguments).
var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"abs":         fAbs,
		"attr":        fAttr,
		"capitalize":  strFilter(capitalize),
		"center":      fCenter,
		"count":       fLength,
		"d":           fDefault,
		"default":     fDefault,
		"dictsort":    fDictsort,
		"e":           fEscape,
		"escape":      fEscape,
		"first":       fFirst,
		"float":       fFloat,
		"forceescape": fForceEscape,
		"format":      fFormat,
		"from_json":   fFromJSON,
		"indent":      fIndent,
		"int":         fInt,
		"items":       fItems,
		"join":        fJoin,
		"last":        fLast,
		"length":      fLength,
		"list":        fList,
		"lower":       strFilter(strings.ToLower),
		"map":         fMap,
		"max":         fMinMax(1),
		"min":         fMinMax(-1),
		"reject":      fSelect(false, false),
		"rejectattr":  fSelect(false, true),
		"replace":     fReplace,
		"reverse":     fReverse,
		"round":       fRound,
		"safe":        fSafe,
		"select":      fSelect(true, false),
		"selectattr":  fSelect(true, true),
		"sort":        fSort,
		"string":      fString,
		"sum":         fSum,
		"title":       strFilter(jinjaTitle),
		"tojson":      fToJSON,
		"trim":        fTrim,
		"truncate":    fTruncate,
		"unique":      fUnique,
		"upper":       strFilter(strings.ToUpper),
		"wordcount":   fWordcount,
	}
}

// filter applies filter f (its arguments evaluated in s) to v.
func (r *renderer) filter(f *filterExpr, v any, s *scope) (any, error) {
	fn, ok := filters[f.name]
	if !ok {
		return nil, fmt.Errorf("unsupported template feature: the '%s' filter", f.name)
	}
	args, kwargs, err := r.evalArgs(f.args, f.kwargs, s)
	if err != nil {
		return nil, err
	}
	if err := r.step(); err != nil {
		return nil, err
	}
	return fn(r, v, args, kwargs)
}

func bind(fn string, params []string, args []any, kwargs []kwval) (argSpec, error) {
	return bindArgs(fn, params, args, kwargs)
}

// softStr is jinja2's soft_str: a string (Markup kept) or str(v).
func softStr(v any) any {
	if m, ok := v.(markup); ok {
		return m
	}
	return toStr(v)
}

// strFilter makes a filter from a string function; Markup stays Markup.
func strFilter(fn func(string) string) filterFunc {
	return func(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
		if len(args)+len(kwargs) > 0 {
			return nil, errors.New("filter takes no arguments")
		}
		switch x := softStr(v).(type) {
		case markup:
			return markup(fn(string(x))), nil
		case string:
			return fn(x), nil
		}
		return nil, nil
	}
}

// jinjaTitle is jinja2's title filter: each word (after whitespace, "-",
// or an opening bracket) starts upper case, the rest lower case.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, c := range s {
		if isSpace(c) || strings.ContainsRune("-({[<", c) {
			start = true
			b.WriteRune(c)
			continue
		}
		if start {
			b.WriteRune(unicode.ToUpper(c))
		} else {
			b.WriteRune(unicode.ToLower(c))
		}
		start = false
	}
	return b.String()
}

func fAbs(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			if x == math.MinInt64 {
				return nil, errors.New("integer overflow")
			}
			return -x, nil
		}
		return x, nil
	case bool:
		i, _ := intOf(x)
		return i, nil
	case float64:
		return math.Abs(x), nil
	}
	return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
}

func fAttr(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("attr", []string{"name"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	name, err := a.str("attr", 0)
	if err != nil {
		return nil, err
	}
	return getAttr(v, name)
}

func fCenter(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("center", []string{"width"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	w, err := a.int("center", 0, 80)
	if err != nil {
		return nil, err
	}
	if err := r.charge(int(min(w, int64(r.lim.MaxOutput)+1))); err != nil {
		return nil, err
	}
	return pad(toStr(v), "center", int(w), " "), nil
}

func fDefault(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("default", []string{"default_value", "boolean"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	def := any("")
	if a.set[0] {
		def = a.vals[0]
	}
	_, undef := v.(undefined)
	if undef || a.set[1] && truthy(a.vals[1]) && !truthy(v) {
		return def, nil
	}
	return v, nil
}

// sortKey is the key jinja2's sorting filters compare: strings lower
// case unless caseSensitive.
func sortKey(v any, caseSensitive bool) any {
	if s, ok := asString(v); ok && !caseSensitive {
		return strings.ToLower(s)
	}
	return v
}

// sortValues sorts items stably by key(item) with Python's ordering.
func sortValues(items []any, key func(any) (any, error), reverse bool) ([]any, error) {
	type kv struct{ k, v any }
	ks := make([]kv, len(items))
	for i, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		ks[i] = kv{k, it}
	}
	var sortErr error
	slices.SortStableFunc(ks, func(a, b kv) int {
		c, err := compare(a.k, b.k)
		if err != nil && sortErr == nil {
			sortErr = err
		}
		if reverse {
			return -c
		}
		return c
	})
	if sortErr != nil {
		return nil, sortErr
	}
	out := make([]any, len(ks))
	for i, x := range ks {
		out[i] = x.v
	}
	return out, nil
}

func fDictsort(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("dictsort", []string{"case_sensitive", "by", "reverse"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		if u, ok := v.(undefined); ok {
			return nil, undefinedError(u)
		}
		return nil, errors.New("You can only sort by either \"key\" or \"value\"")
	}
	pos := 0
	if a.set[1] {
		switch by, _ := asString(a.vals[1]); by {
		case "key":
		case "value":
			pos = 1
		default:
			return nil, errors.New("You can only sort by either \"key\" or \"value\"")
		}
	}
	cs := a.set[0] && truthy(a.vals[0])
	items, err := r.dictItems(d)
	if err != nil {
		return nil, err
	}
	sorted, err := sortValues(items.Items, func(it any) (any, error) {
		return sortKey(it.(*List).Items[pos], cs), nil
	}, a.set[2] && truthy(a.vals[2]))
	return &List{Items: sorted}, err
}

func fEscape(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	return escapeValue(v), nil
}

func fForceEscape(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	return markup(escapeHTML(toStr(v))), nil
}

func fFirst(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{"No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func fLast(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{"No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

func fFloat(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("float", []string{"default"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	def := any(0.0)
	if a.set[0] {
		def = a.vals[0]
	}
	if f, ok := pyFloat(v); ok {
		return f, nil
	}
	return def, nil
}

// pyFloat is Python's float(v) for numbers and numeric strings.
func pyFloat(v any) (float64, bool) {
	if f, ok := number(v); ok {
		return f, true
	}
	if s, ok := asString(v); ok {
		s = strings.ReplaceAll(strings.TrimFunc(s, isSpace), "_", "")
		switch strings.ToLower(s) {
		case "inf", "+inf", "infinity", "+infinity":
			return math.Inf(1), true
		case "-inf", "-infinity":
			return math.Inf(-1), true
		case "nan", "+nan", "-nan":
			return math.NaN(), true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpP") {
			return f, true
		}
	}
	return 0, false
}

func fFormat(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	s := toStr(v)
	if len(kwargs) > 0 {
		d := NewDict()
		for _, k := range kwargs {
			d.set(k.name, k.v)
		}
		return r.percentFormat(s, d)
	}
	return r.percentFormat(s, &List{Items: args, tuple: true})
}

func fFromJSON(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	s, ok := asString(v)
	if !ok {
		return nil, fmt.Errorf("from_json: expected a string, got %s", typeName(v))
	}
	if err := r.charge(len(s) * 2); err != nil {
		return nil, err
	}
	return ParseJSON([]byte(s))
}

func fIndent(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("indent", []string{"width", "first", "blank"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	indent := "    "
	if a.set[0] {
		if s, ok := asString(a.vals[0]); ok {
			indent = s
		} else {
			w, err := a.int("indent", 0, 4)
			if err != nil {
				return nil, err
			}
			if w > int64(r.lim.MaxOutput) {
				return nil, fmt.Errorf("%w: indent width %d", ErrLimit, w)
			}
			indent = strings.Repeat(" ", int(max(w, 0)))
		}
	}
	sv := softStr(v)
	s, _ := asString(sv)
	lines := splitLines(s+"\n", false)
	if err := r.charge(len(s) + len(lines)*len(indent)); err != nil {
		return nil, err
	}
	var b strings.Builder
	if a.set[1] && truthy(a.vals[1]) {
		b.WriteString(indent)
	}
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
			if line != "" || a.set[2] && truthy(a.vals[2]) {
				b.WriteString(indent)
			}
		}
		b.WriteString(line)
	}
	if _, safe := sv.(markup); safe {
		return markup(b.String()), nil
	}
	return b.String(), nil
}

func fInt(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("int", []string{"default", "base"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	def := any(int64(0))
	if a.set[0] {
		def = a.vals[0]
	}
	base, err := a.int("int", 1, 10)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case int64:
		return x, nil
	case bool:
		i, _ := intOf(x)
		return i, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1<<63 {
			return def, nil
		}
		return int64(x), nil
	}
	if s, ok := asString(v); ok {
		t := strings.ReplaceAll(strings.TrimFunc(s, isSpace), "_", "")
		if base >= 2 && base <= 36 {
			if i, err := strconv.ParseInt(t, int(base), 64); err == nil {
				return i, nil
			}
		}
		if f, ok := pyFloat(s); ok && !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 1<<63 {
			return int64(f), nil
		}
	}
	return def, nil
}

func fItems(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	switch x := v.(type) {
	case undefined:
		return &List{}, nil
	case *Dict:
		return r.dictItems(x)
	}
	return nil, errors.New("Can only get item pairs from a mapping.")
}

// attrGetter returns the value at a dotted attribute path ("a.b", "0")
// of an item, as jinja2's make_attrgetter does; def replaces undefined.
func attrGetter(path any, def any, hasDef bool) (func(any) (any, error), error) {
	var parts []any
	switch p := path.(type) {
	case string, markup:
		s, _ := asString(p)
		for _, part := range strings.Split(s, ".") {
			if n, err := strconv.ParseInt(part, 10, 64); err == nil {
				parts = append(parts, n)
			} else {
				parts = append(parts, part)
			}
		}
	case int64:
		parts = []any{p}
	default:
		return nil, fmt.Errorf("attribute must be a string or int, not %s", typeName(path))
	}
	return func(v any) (any, error) {
		for _, part := range parts {
			var err error
			if v, err = getItem(v, part); err != nil {
				return nil, err
			}
		}
		if _, undef := v.(undefined); undef && hasDef {
			return def, nil
		}
		return v, nil
	}, nil
}

func fJoin(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("join", []string{"d", "attribute"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	sep := ""
	if a.set[0] {
		sep = toStr(a.vals[0])
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if a.has(1) {
		items = append([]any(nil), items...) // iterate may return the list's own items
		get, err := attrGetter(a.vals[1], nil, false)
		if err != nil {
			return nil, err
		}
		for i := range items {
			if items[i], err = get(items[i]); err != nil {
				return nil, err
			}
		}
	}
	var b strings.Builder
	for i, it := range items {
		s := toStr(it)
		if err := r.charge(b.Len() + len(s) + len(sep)); err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func fLength(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	switch x := v.(type) {
	case undefined:
		return int64(0), nil
	case string:
		return int64(utf8.RuneCountInString(x)), nil
	case markup:
		return int64(utf8.RuneCountInString(string(x))), nil
	case *List:
		return int64(len(x.Items)), nil
	case *Dict:
		return int64(len(x.keys)), nil
	case *namespace:
		return int64(len(x.d.keys)), nil
	}
	return nil, fmt.Errorf("object of type '%s' has no len()", typeName(v))
}

func fList(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	return &List{Items: append([]any(nil), items...)}, r.charge(len(items) * 16)
}

func fMap(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	if !truthy(v) { // as in jinja2, a falsy input maps to nothing
		return &List{}, nil
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	out := &List{Items: make([]any, len(items))}
	if len(args) == 0 {
		a, err := bind("map", []string{"attribute", "default"}, nil, kwargs)
		if err != nil {
			return nil, err
		}
		if !a.set[0] {
			return nil, errors.New("map requires a filter name or an attribute")
		}
		get, err := attrGetter(a.vals[0], a.vals[1], a.set[1])
		if err != nil {
			return nil, err
		}
		for i, it := range items {
			if out.Items[i], err = get(it); err != nil {
				return nil, err
			}
		}
		return out, r.charge(len(items) * 16)
	}
	name, ok := asString(args[0])
	if !ok {
		return nil, errors.New("map: the filter name must be a string")
	}
	fn, ok := filters[name]
	if !ok {
		return nil, fmt.Errorf("unsupported template feature: the '%s' filter", name)
	}
	for i, it := range items {
		if err := r.step(); err != nil {
			return nil, err
		}
		if out.Items[i], err = fn(r, it, args[1:], kwargs); err != nil {
			return nil, err
		}
	}
	return out, r.charge(len(items) * 16)
}

func fMinMax(sign int) filterFunc {
	return func(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
		a, err := bind("min", []string{"case_sensitive", "attribute"}, args, kwargs)
		if err != nil {
			return nil, err
		}
		items, err := r.iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return undefined{"No aggregated item, sequence was empty."}, nil
		}
		get := func(x any) (any, error) { return x, nil }
		if a.has(1) {
			if get, err = attrGetter(a.vals[1], nil, false); err != nil {
				return nil, err
			}
		}
		cs := a.set[0] && truthy(a.vals[0])
		best := items[0]
		bestKey, err := get(best)
		if err != nil {
			return nil, err
		}
		bestKey = sortKey(bestKey, cs)
		for _, it := range items[1:] {
			k, err := get(it)
			if err != nil {
				return nil, err
			}
			k = sortKey(k, cs)
			c, err := compare(k, bestKey)
			if err != nil {
				return nil, err
			}
			if c*sign > 0 {
				best, bestKey = it, k
			}
		}
		return best, nil
	}
}

// fSelect makes select/reject (keep is whether a passing item stays)
// and their attribute forms.
func fSelect(keep, byAttr bool) filterFunc {
	return func(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
		if !truthy(v) { // jinja2 yields nothing for a falsy input, None included
			return &List{}, nil
		}
		items, err := r.iterate(v)
		if err != nil {
			return nil, err
		}
		get := func(x any) (any, error) { return x, nil }
		if byAttr {
			if len(args) == 0 {
				return nil, errors.New("missing parameter for attribute name")
			}
			if get, err = attrGetter(args[0], nil, false); err != nil {
				return nil, err
			}
			args = args[1:]
		}
		check := func(x any) (bool, error) { return truthy(x), nil }
		if len(args) > 0 {
			name, ok := asString(args[0])
			if !ok {
				return nil, errors.New("the test name must be a string")
			}
			fn, ok := tests[name]
			if !ok {
				return nil, fmt.Errorf("unsupported template feature: the '%s' test", name)
			}
			targs := args[1:]
			check = func(x any) (bool, error) { return fn(r, x, targs) }
		}
		out := &List{}
		for _, it := range items {
			if err := r.step(); err != nil {
				return nil, err
			}
			x, err := get(it)
			if err != nil {
				return nil, err
			}
			ok, err := check(x)
			if err != nil {
				return nil, err
			}
			if ok == keep {
				out.Items = append(out.Items, it)
			}
		}
		return out, r.charge(len(out.Items) * 16)
	}
}

func fReplace(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("replace", []string{"old", "new", "count"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	if !a.set[0] || !a.set[1] {
		return nil, errors.New("replace() needs old and new")
	}
	rargs := []any{toStr(a.vals[0]), toStr(a.vals[1])}
	if a.has(2) {
		rargs = append(rargs, a.vals[2])
	}
	return r.strMethod(toStr(v), "replace", rargs, nil)
}

func fReverse(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	if s, ok := asString(v); ok {
		rs := []rune(s)
		slices.Reverse(rs)
		if _, safe := v.(markup); safe {
			return markup(string(rs)), nil
		}
		return string(rs), nil
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	out := append([]any(nil), items...)
	slices.Reverse(out)
	return &List{Items: out}, r.charge(len(out) * 16)
}

func fRound(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("round", []string{"precision", "method"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	p, err := a.int("round", 0, 0)
	if err != nil {
		return nil, err
	}
	method := "common"
	if a.set[1] {
		method = toStr(a.vals[1])
	}
	f, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("round: expected a number, got %s", typeName(v))
	}
	if _, isInt := intOf(v); isInt && method == "common" && p >= 0 {
		return v, nil
	}
	scale := math.Pow(10, float64(p))
	switch method {
	case "common":
		return math.RoundToEven(f*scale) / scale, nil
	case "ceil":
		return math.Ceil(f*scale) / scale, nil
	case "floor":
		return math.Floor(f*scale) / scale, nil
	}
	return nil, errors.New("method must be common, ceil or floor")
}

func fSafe(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	if m, ok := v.(markup); ok {
		return m, nil
	}
	return markup(toStr(v)), nil
}

func fSort(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("sort", []string{"reverse", "case_sensitive", "attribute"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	cs := a.set[1] && truthy(a.vals[1])
	var getters []func(any) (any, error)
	if a.has(2) {
		paths := []any{a.vals[2]}
		if s, ok := asString(a.vals[2]); ok {
			paths = nil
			for _, p := range strings.Split(s, ",") {
				paths = append(paths, strings.TrimSpace(p))
			}
		}
		for _, p := range paths {
			g, err := attrGetter(p, nil, false)
			if err != nil {
				return nil, err
			}
			getters = append(getters, g)
		}
	}
	sorted, err := sortValues(items, func(it any) (any, error) {
		if len(getters) == 0 {
			return sortKey(it, cs), nil
		}
		key := &List{tuple: true}
		for _, g := range getters {
			k, err := g(it)
			if err != nil {
				return nil, err
			}
			key.Items = append(key.Items, sortKey(k, cs))
		}
		if len(key.Items) == 1 {
			return key.Items[0], nil
		}
		return key, nil
	}, a.set[0] && truthy(a.vals[0]))
	if err != nil {
		return nil, err
	}
	return &List{Items: sorted}, r.charge(len(sorted) * 16)
}

func fString(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	return softStr(v), nil
}

func fSum(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("sum", []string{"attribute", "start"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	total := any(int64(0))
	if a.set[1] {
		total = a.vals[1]
	}
	get := func(x any) (any, error) { return x, nil }
	if a.has(0) {
		if get, err = attrGetter(a.vals[0], nil, false); err != nil {
			return nil, err
		}
	}
	for _, it := range items {
		x, err := get(it)
		if err != nil {
			return nil, err
		}
		if total, err = r.binary("+", total, x); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func fToJSON(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("tojson", []string{"ensure_ascii", "indent", "separators", "sort_keys"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	o := jsonOptions{itemSep: ", ", keySep: ": "}
	o.ensureASCII = a.set[0] && truthy(a.vals[0])
	if a.has(1) {
		o.hasIndent = true
		o.itemSep = ","
		if s, ok := asString(a.vals[1]); ok {
			o.indent = s
		} else {
			n, err := a.int("tojson", 1, 0)
			if err != nil {
				return nil, err
			}
			if n > 1024 {
				return nil, fmt.Errorf("%w: tojson indent %d", ErrLimit, n)
			}
			o.indent = strings.Repeat(" ", int(max(n, 0)))
		}
	}
	if a.has(2) {
		seps, ok := a.vals[2].(*List)
		if !ok || len(seps.Items) != 2 {
			return nil, errors.New("tojson: separators must be a pair of strings")
		}
		is, ok1 := asString(seps.Items[0])
		ks, ok2 := asString(seps.Items[1])
		if !ok1 || !ok2 {
			return nil, errors.New("tojson: separators must be a pair of strings")
		}
		o.itemSep, o.keySep = is, ks
	}
	o.sortKeys = a.set[3] && truthy(a.vals[3])
	s, err := r.toJSON(v, o)
	if err != nil {
		return nil, err
	}
	return s, r.charge(len(s))
}

func fTrim(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("trim", []string{"chars"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	var margs []any
	if a.has(0) {
		margs = []any{a.vals[0]}
	}
	sv := softStr(v)
	if m, ok := sv.(markup); ok {
		return (&boundMethod{recv: m, method: "strip"}).call(r, margs, nil)
	}
	return r.strMethod(sv.(string), "strip", margs, nil)
}

func fTruncate(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("truncate", []string{"length", "killwords", "end", "leeway"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	length, err := a.int("truncate", 0, 255)
	if err != nil {
		return nil, err
	}
	end := "..."
	if a.set[2] {
		end = toStr(a.vals[2])
	}
	leeway, err := a.int("truncate", 3, 5)
	if err != nil {
		return nil, err
	}
	rs := []rune(toStr(v))
	if int64(len(rs)) <= length+leeway {
		return string(rs), nil
	}
	cut := max(length-int64(utf8.RuneCountInString(end)), 0)
	if a.set[1] && truthy(a.vals[1]) {
		return string(rs[:cut]) + end, nil
	}
	head := string(rs[:cut])
	if i := strings.LastIndex(head, " "); i >= 0 {
		head = head[:i]
	}
	return head + end, nil
}

func fUnique(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	a, err := bind("unique", []string{"case_sensitive", "attribute"}, args, kwargs)
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	get := func(x any) (any, error) { return x, nil }
	if a.has(1) {
		if get, err = attrGetter(a.vals[1], nil, false); err != nil {
			return nil, err
		}
	}
	cs := a.set[0] && truthy(a.vals[0])
	out := &List{}
	var seen []any
	for _, it := range items {
		if err := r.step(); err != nil {
			return nil, err
		}
		k, err := get(it)
		if err != nil {
			return nil, err
		}
		k = sortKey(k, cs)
		if slices.ContainsFunc(seen, func(s any) bool { return equal(s, k) }) {
			continue
		}
		seen = append(seen, k)
		out.Items = append(out.Items, it)
	}
	return out, r.charge(len(out.Items) * 16)
}

func fWordcount(r *renderer, v any, args []any, kwargs []kwval) (any, error) {
	n := 0
	in := false
	for _, c := range toStr(v) {
		w := unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_'
		if w && !in {
			n++
		}
		in = w
	}
	return int64(n), nil
}
