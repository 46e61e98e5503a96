package jinja

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// boundMethod is obj.method, waiting to be called.
type boundMethod struct {
	recv   any
	method string
}

func (m *boundMethod) name() string { return m.method }

var (
	strMethods = []string{
		"strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "replace",
		"upper", "lower", "title", "capitalize", "swapcase", "casefold", "find", "rfind", "index", "rindex",
		"count", "join", "format", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
		"isnumeric", "isdecimal", "istitle", "removeprefix", "removesuffix", "zfill", "center", "ljust",
		"rjust", "partition", "rpartition", "expandtabs",
	}
	dictMethods = []string{"get", "items", "keys", "values", "copy", "pop", "update", "setdefault"}
	listMethods = []string{"append", "pop", "extend", "insert", "index", "count", "copy"}
)

// isMethod reports whether obj has a Python method called name that
// templates may use.
func isMethod(obj any, name string) bool {
	switch obj.(type) {
	case string, markup:
		return slices.Contains(strMethods, name)
	case *Dict:
		return slices.Contains(dictMethods, name)
	case *List:
		return slices.Contains(listMethods, name)
	}
	return false
}

func (m *boundMethod) call(r *renderer, args []any, kwargs []kwval) (any, error) {
	switch recv := m.recv.(type) {
	case string:
		return r.strMethod(recv, m.method, args, kwargs)
	case markup:
		// markupsafe escapes string arguments and keeps the result safe.
		esc := make([]any, len(args))
		for i, a := range args {
			if _, ok := asString(a); ok {
				esc[i] = string(escapeValue(a))
			} else {
				esc[i] = a
			}
		}
		v, err := r.strMethod(string(recv), m.method, esc, kwargs)
		if err != nil {
			return nil, err
		}
		return markSafe(v), nil
	case *Dict:
		return r.dictMethod(recv, m.method, args, kwargs)
	case *List:
		return r.listMethod(recv, m.method, args, kwargs)
	case *loopInfo:
		return recv.method(m.method, args)
	}
	return nil, fmt.Errorf("'%s' object has no method '%s'", typeName(m.recv), m.method)
}

// markSafe turns the strings in a string method's result into Markup.
func markSafe(v any) any {
	switch x := v.(type) {
	case string:
		return markup(x)
	case *List:
		for i, it := range x.Items {
			if s, ok := it.(string); ok {
				x.Items[i] = markup(s)
			}
		}
	}
	return v
}

func (l *loopInfo) method(name string, args []any) (any, error) {
	switch name {
	case "cycle":
		if len(args) == 0 {
			return nil, errors.New("no items for cycling given")
		}
		return args[l.i%len(args)], nil
	case "changed":
		if l.hasLast && len(args) == len(l.changed) {
			same := true
			for i := range args {
				if !equal(args[i], l.changed[i]) {
					same = false
					break
				}
			}
			if same {
				return false, nil
			}
		}
		l.changed, l.hasLast = args, true
		return true, nil
	}
	return nil, fmt.Errorf("loop has no method '%s'", name)
}

func (l *loopInfo) name() string { return "loop" }

func (l *loopInfo) call(r *renderer, args []any, kwargs []kwval) (any, error) {
	if l.recurse == nil {
		return nil, errors.New("loop() can only be called in a loop marked recursive")
	}
	if len(args) != 1 || len(kwargs) != 0 {
		return nil, errors.New("loop() takes exactly one argument")
	}
	return l.recurse(args[0])
}

// argSpec binds positional and keyword arguments to parameter names.
// Missing ones are left nil with ok false.
type argSpec struct {
	vals []any
	set  []bool
}

func bindArgs(fn string, params []string, args []any, kwargs []kwval) (argSpec, error) {
	a := argSpec{vals: make([]any, len(params)), set: make([]bool, len(params))}
	if len(args) > len(params) {
		return a, fmt.Errorf("%s() takes at most %d arguments (%d given)", fn, len(params), len(args))
	}
	for i, v := range args {
		a.vals[i], a.set[i] = v, true
	}
	for _, k := range kwargs {
		i := indexOf(params, k.name)
		if i < 0 {
			return a, fmt.Errorf("%s() got an unexpected keyword argument '%s'", fn, k.name)
		}
		if a.set[i] {
			return a, fmt.Errorf("%s() got multiple values for argument '%s'", fn, k.name)
		}
		a.vals[i], a.set[i] = k.v, true
	}
	return a, nil
}

// has reports whether parameter i was given and is not None.
func (a argSpec) has(i int) bool { return a.set[i] && a.vals[i] != nil }

func (a argSpec) str(fn string, i int) (string, error) {
	s, ok := asString(a.vals[i])
	if !ok {
		return "", fmt.Errorf("%s() argument must be str, not %s", fn, typeName(a.vals[i]))
	}
	return s, nil
}

func (a argSpec) int(fn string, i int, def int64) (int64, error) {
	if !a.has(i) {
		return def, nil
	}
	n, ok := intOf(a.vals[i])
	if !ok {
		return 0, fmt.Errorf("%s() argument must be int, not %s", fn, typeName(a.vals[i]))
	}
	return n, nil
}

func (r *renderer) strMethod(s, name string, args []any, kwargs []kwval) (any, error) {
	spec := func(params ...string) (argSpec, error) { return bindArgs(name, params, args, kwargs) }
	switch name {
	case "strip", "lstrip", "rstrip":
		a, err := spec("chars")
		if err != nil {
			return nil, err
		}
		cut := isSpace
		if a.has(0) {
			set, err := a.str(name, 0)
			if err != nil {
				return nil, err
			}
			cut = func(r rune) bool { return strings.ContainsRune(set, r) }
		}
		switch name {
		case "lstrip":
			return strings.TrimLeftFunc(s, cut), nil
		case "rstrip":
			return strings.TrimRightFunc(s, cut), nil
		}
		return strings.TrimFunc(s, cut), nil
	case "split", "rsplit":
		a, err := spec("sep", "maxsplit")
		if err != nil {
			return nil, err
		}
		max, err := a.int(name, 1, -1)
		if err != nil {
			return nil, err
		}
		var parts []string
		if a.has(0) {
			sep, err := a.str(name, 0)
			if err != nil {
				return nil, err
			}
			if sep == "" {
				return nil, errors.New("empty separator")
			}
			parts = splitSep(s, sep, max, name == "rsplit")
		} else {
			parts = splitSpace(s, max, name == "rsplit")
		}
		return r.strList(parts)
	case "splitlines":
		a, err := spec("keepends")
		if err != nil {
			return nil, err
		}
		return r.strList(splitLines(s, a.set[0] && truthy(a.vals[0])))
	case "startswith", "endswith":
		a, err := spec("prefix", "start", "end")
		if err != nil {
			return nil, err
		}
		sub, err := runeRange(s, a, 1, 2, name)
		if err != nil {
			return nil, err
		}
		var cands []any
		if l, ok := a.vals[0].(*List); ok && l.tuple {
			cands = l.Items
		} else {
			cands = []any{a.vals[0]}
		}
		for _, c := range cands {
			p, ok := asString(c)
			if !ok {
				return nil, fmt.Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(c))
			}
			if name == "startswith" && strings.HasPrefix(sub, p) || name == "endswith" && strings.HasSuffix(sub, p) {
				return true, nil
			}
		}
		return false, nil
	case "replace":
		a, err := spec("old", "new", "count")
		if err != nil {
			return nil, err
		}
		old, err := a.str(name, 0)
		if err != nil {
			return nil, err
		}
		repl, err := a.str(name, 1)
		if err != nil {
			return nil, err
		}
		n, err := a.int(name, 2, -1)
		if err != nil {
			return nil, err
		}
		if n < 0 || n > int64(len(s))+1 {
			n = int64(len(s)) + 1
		}
		occ := strings.Count(s, old)
		if old == "" {
			occ = utf8.RuneCountInString(s) + 1
		}
		if err := r.charge(len(s) + min(occ, int(n))*len(repl)); err != nil {
			return nil, err
		}
		return strings.Replace(s, old, repl, int(n)), nil
	case "upper":
		return strings.ToUpper(s), nil
	case "lower", "casefold":
		return strings.ToLower(s), nil
	case "title":
		return pyTitle(s), nil
	case "capitalize":
		return capitalize(s), nil
	case "swapcase":
		return strings.Map(func(c rune) rune {
			if unicode.IsUpper(c) {
				return unicode.ToLower(c)
			}
			return unicode.ToUpper(c)
		}, s), nil
	case "find", "rfind", "index", "rindex", "count":
		a, err := spec("sub", "start", "end")
		if err != nil {
			return nil, err
		}
		sub, err := a.str(name, 0)
		if err != nil {
			return nil, err
		}
		hay, err := runeRange(s, a, 1, 2, name)
		if err != nil {
			return nil, err
		}
		offset := int64(0)
		if a.has(1) {
			start, _ := a.int(name, 1, 0)
			n := int64(utf8.RuneCountInString(s))
			if start < 0 {
				start = max(start+n, 0)
			}
			offset = min(start, n)
		}
		if name == "count" {
			if sub == "" {
				return int64(utf8.RuneCountInString(hay) + 1), nil
			}
			return int64(strings.Count(hay, sub)), nil
		}
		var i int
		if name == "find" || name == "index" {
			i = strings.Index(hay, sub)
		} else {
			i = strings.LastIndex(hay, sub)
		}
		if i < 0 {
			if name == "index" || name == "rindex" {
				return nil, errors.New("substring not found")
			}
			return int64(-1), nil
		}
		return offset + int64(utf8.RuneCountInString(hay[:i])), nil
	case "join":
		a, err := spec("iterable")
		if err != nil {
			return nil, err
		}
		items, err := r.iterate(a.vals[0])
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(items))
		total := 0
		for i, it := range items {
			str, ok := asString(it)
			if !ok {
				return nil, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
			}
			parts[i] = str
			total += len(str) + len(s)
		}
		if err := r.charge(total); err != nil {
			return nil, err
		}
		return strings.Join(parts, s), nil
	case "format":
		return r.strFormat(s, args, kwargs)
	case "isdigit", "isnumeric", "isdecimal":
		return s != "" && strings.IndexFunc(s, func(c rune) bool { return !unicode.IsDigit(c) }) < 0, nil
	case "isalpha":
		return s != "" && strings.IndexFunc(s, func(c rune) bool { return !unicode.IsLetter(c) }) < 0, nil
	case "isalnum":
		return s != "" && strings.IndexFunc(s, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) < 0, nil
	case "isspace":
		return s != "" && allSpace(s), nil
	case "islower", "isupper":
		cased := false
		for _, c := range s {
			if unicode.IsUpper(c) || unicode.IsLower(c) || unicode.IsTitle(c) {
				cased = true
				if name == "islower" && !unicode.IsLower(c) || name == "isupper" && !unicode.IsUpper(c) {
					return false, nil
				}
			}
		}
		return cased, nil
	case "istitle":
		return s != "" && pyTitle(s) == s, nil
	case "removeprefix", "removesuffix":
		a, err := spec("affix")
		if err != nil {
			return nil, err
		}
		p, err := a.str(name, 0)
		if err != nil {
			return nil, err
		}
		if name == "removeprefix" {
			return strings.TrimPrefix(s, p), nil
		}
		return strings.TrimSuffix(s, p), nil
	case "zfill", "center", "ljust", "rjust":
		a, err := spec("width", "fillchar")
		if err != nil {
			return nil, err
		}
		w, err := a.int(name, 0, 0)
		if err != nil {
			return nil, err
		}
		fill := " "
		if a.has(1) && name != "zfill" {
			if fill, err = a.str(name, 1); err != nil {
				return nil, err
			}
			if utf8.RuneCountInString(fill) != 1 {
				return nil, errors.New("the fill character must be exactly one character long")
			}
		}
		if err := r.charge(int(min(w, int64(r.lim.MaxOutput)+1)) * len(fill)); err != nil {
			return nil, err
		}
		return pad(s, name, int(w), fill), nil
	case "partition", "rpartition":
		a, err := spec("sep")
		if err != nil {
			return nil, err
		}
		sep, err := a.str(name, 0)
		if err != nil {
			return nil, err
		}
		if sep == "" {
			return nil, errors.New("empty separator")
		}
		var i int
		if name == "partition" {
			i = strings.Index(s, sep)
		} else {
			i = strings.LastIndex(s, sep)
		}
		if i < 0 {
			if name == "partition" {
				return &List{Items: []any{s, "", ""}, tuple: true}, nil
			}
			return &List{Items: []any{"", "", s}, tuple: true}, nil
		}
		return &List{Items: []any{s[:i], sep, s[i+len(sep):]}, tuple: true}, nil
	case "expandtabs":
		return strings.ReplaceAll(s, "\t", "        "), nil
	}
	return nil, fmt.Errorf("unsupported template feature: str.%s()", name)
}

func (r *renderer) strList(parts []string) (*List, error) {
	if err := r.charge(len(parts) * 16); err != nil {
		return nil, err
	}
	l := &List{Items: make([]any, len(parts))}
	for i, p := range parts {
		l.Items[i] = p
	}
	return l, nil
}

// runeRange returns s[start:end] in code points for the optional start
// and end arguments at positions si and ei.
func runeRange(s string, a argSpec, si, ei int, fn string) (string, error) {
	if !a.has(si) && !a.has(ei) {
		return s, nil
	}
	rs := []rune(s)
	n := int64(len(rs))
	start, err := a.int(fn, si, 0)
	if err != nil {
		return "", err
	}
	end, err := a.int(fn, ei, n)
	if err != nil {
		return "", err
	}
	norm := func(i int64) int64 {
		if i < 0 {
			i += n
		}
		return max(0, min(i, n))
	}
	start, end = norm(start), norm(end)
	if start >= end {
		return "", nil
	}
	return string(rs[start:end]), nil
}

// splitSep is str.split(sep, maxsplit) (or rsplit when fromRight).
func splitSep(s, sep string, max int64, fromRight bool) []string {
	if max < 0 {
		return strings.Split(s, sep)
	}
	if !fromRight {
		return strings.SplitN(s, sep, int(min(max, int64(len(s))))+1)
	}
	var out []string
	for ; max > 0; max-- {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		out = append(out, s[i+len(sep):])
		s = s[:i]
	}
	out = append(out, s)
	slices.Reverse(out)
	return out
}

// splitSpace is str.split() without a separator: runs of whitespace
// separate, and none is kept at the ends.
func splitSpace(s string, max int64, fromRight bool) []string {
	if max < 0 {
		return strings.FieldsFunc(s, isSpace)
	}
	var out []string
	if !fromRight {
		for {
			s = strings.TrimLeftFunc(s, isSpace)
			if s == "" {
				return out
			}
			if max == 0 {
				return append(out, s)
			}
			i := strings.IndexFunc(s, isSpace)
			if i < 0 {
				return append(out, s)
			}
			out = append(out, s[:i])
			s = s[i:]
			max--
		}
	}
	for {
		s = strings.TrimRightFunc(s, isSpace)
		if s == "" {
			break
		}
		if max == 0 {
			out = append(out, s)
			break
		}
		i := strings.LastIndexFunc(s, isSpace)
		if i < 0 {
			out = append(out, s)
			break
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		out = append(out, s[i+n:])
		s = s[:i]
		max--
	}
	slices.Reverse(out)
	return out
}

// splitLines is str.splitlines: every Unicode line boundary ends a line.
func splitLines(s string, keepEnds bool) []string {
	var out []string
	for len(s) > 0 {
		i, n := 0, 0
		for i < len(s) {
			c, w := utf8.DecodeRuneInString(s[i:])
			if isLineBreak(c) {
				n = w
				if c == '\r' && i+1 < len(s) && s[i+1] == '\n' {
					n = 2
				}
				break
			}
			i += w
		}
		if keepEnds {
			out = append(out, s[:i+n])
		} else {
			out = append(out, s[:i])
		}
		s = s[i+n:]
	}
	return out
}

func isLineBreak(c rune) bool {
	switch c {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// pyTitle is str.title: a letter after a non-letter is upper case, other
// letters lower case.
func pyTitle(s string) string {
	prevCased := false
	return strings.Map(func(c rune) rune {
		cased := unicode.IsLetter(c)
		defer func() { prevCased = cased }()
		if !cased {
			return c
		}
		if prevCased {
			return unicode.ToLower(c)
		}
		return unicode.ToTitle(c)
	}, s)
}

// capitalize is str.capitalize: the first character in title case, the
// rest lower case.
func capitalize(s string) string {
	c, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToTitle(c)) + strings.ToLower(s[n:])
}

// pad is str.center/ljust/rjust/zfill to width w (in code points).
func pad(s, how string, w int, fill string) string {
	n := utf8.RuneCountInString(s)
	if w <= n {
		return s
	}
	extra := w - n
	switch how {
	case "ljust":
		return s + strings.Repeat(fill, extra)
	case "rjust":
		return strings.Repeat(fill, extra) + s
	case "zfill":
		sign := ""
		if s != "" && (s[0] == '-' || s[0] == '+') {
			sign, s = s[:1], s[1:]
		}
		return sign + strings.Repeat("0", extra) + s
	}
	left := extra / 2
	if extra%2 == 1 && w%2 == 1 {
		left++
	}
	return strings.Repeat(fill, left) + s + strings.Repeat(fill, extra-left)
}

func (r *renderer) dictMethod(d *Dict, name string, args []any, kwargs []kwval) (any, error) {
	spec := func(params ...string) (argSpec, error) { return bindArgs(name, params, args, kwargs) }
	switch name {
	case "get":
		a, err := spec("key", "default")
		if err != nil {
			return nil, err
		}
		if !a.set[0] {
			return nil, errors.New("get() missing required argument 'key'")
		}
		if v, ok := d.get(a.vals[0]); ok {
			return v, nil
		}
		return a.vals[1], nil
	case "items":
		if _, err := spec(); err != nil {
			return nil, err
		}
		return r.dictItems(d)
	case "keys":
		if _, err := spec(); err != nil {
			return nil, err
		}
		return &List{Items: append([]any(nil), d.keys...)}, r.charge(len(d.keys) * 16)
	case "values":
		if _, err := spec(); err != nil {
			return nil, err
		}
		l := &List{Items: make([]any, len(d.keys))}
		for i, k := range d.keys {
			l.Items[i] = d.vals[k]
		}
		return l, r.charge(len(d.keys) * 16)
	case "copy":
		c := NewDict()
		for _, k := range d.keys {
			c.set(k, d.vals[k])
		}
		return c, r.charge(len(d.keys) * 32)
	case "pop":
		a, err := spec("key", "default")
		if err != nil {
			return nil, err
		}
		if v, ok := d.get(a.vals[0]); ok {
			d.del(a.vals[0])
			return v, nil
		}
		if a.set[1] {
			return a.vals[1], nil
		}
		return nil, fmt.Errorf("KeyError: %s", repr(a.vals[0]))
	case "setdefault":
		a, err := spec("key", "default")
		if err != nil {
			return nil, err
		}
		if v, ok := d.get(a.vals[0]); ok {
			return v, nil
		}
		if !isHashable(dictKey(a.vals[0])) {
			return nil, fmt.Errorf("unhashable type: '%s'", typeName(a.vals[0]))
		}
		d.set(a.vals[0], a.vals[1])
		return a.vals[1], nil
	case "update":
		if len(args) > 1 {
			return nil, errors.New("update expected at most 1 argument")
		}
		if len(args) == 1 {
			o, ok := args[0].(*Dict)
			if !ok {
				return nil, fmt.Errorf("update() argument must be a dict, not %s", typeName(args[0]))
			}
			for _, k := range o.keys {
				d.set(k, o.vals[k])
			}
		}
		for _, k := range kwargs {
			d.set(k.name, k.v)
		}
		return nil, r.charge((len(d.keys) + 1) * 32)
	}
	return nil, fmt.Errorf("unsupported template feature: dict.%s()", name)
}

// dictItems is d.items() as a list of (key, value) tuples.
func (r *renderer) dictItems(d *Dict) (*List, error) {
	l := &List{Items: make([]any, len(d.keys))}
	for i, k := range d.keys {
		l.Items[i] = &List{Items: []any{k, d.vals[k]}, tuple: true}
	}
	return l, r.charge(len(d.keys) * 48)
}

func (r *renderer) listMethod(l *List, name string, args []any, kwargs []kwval) (any, error) {
	spec := func(params ...string) (argSpec, error) { return bindArgs(name, params, args, kwargs) }
	if l.tuple && name != "index" && name != "count" {
		return nil, fmt.Errorf("'tuple' object has no attribute '%s'", name)
	}
	switch name {
	case "append":
		a, err := spec("object")
		if err != nil {
			return nil, err
		}
		if !a.set[0] {
			return nil, errors.New("append() takes exactly one argument")
		}
		if err := r.charge(16); err != nil {
			return nil, err
		}
		l.Items = append(l.Items, a.vals[0])
		return nil, nil
	case "extend":
		a, err := spec("iterable")
		if err != nil {
			return nil, err
		}
		items, err := r.iterate(a.vals[0])
		if err != nil {
			return nil, err
		}
		if err := r.charge(len(items) * 16); err != nil {
			return nil, err
		}
		l.Items = append(l.Items, items...)
		return nil, nil
	case "insert":
		a, err := spec("index", "object")
		if err != nil {
			return nil, err
		}
		i, err := a.int(name, 0, 0)
		if err != nil {
			return nil, err
		}
		n := int64(len(l.Items))
		if i < 0 {
			i = max(i+n, 0)
		}
		i = min(i, n)
		if err := r.charge(16); err != nil {
			return nil, err
		}
		l.Items = slices.Insert(l.Items, int(i), a.vals[1])
		return nil, nil
	case "pop":
		a, err := spec("index")
		if err != nil {
			return nil, err
		}
		n := int64(len(l.Items))
		i, err := a.int(name, 0, n-1)
		if err != nil {
			return nil, err
		}
		if i < 0 {
			i += n
		}
		if n == 0 || i < 0 || i >= n {
			return nil, errors.New("pop index out of range")
		}
		v := l.Items[i]
		l.Items = slices.Delete(l.Items, int(i), int(i)+1)
		return v, nil
	case "index", "count":
		a, err := spec("value")
		if err != nil {
			return nil, err
		}
		c := int64(0)
		for i, it := range l.Items {
			if equal(it, a.vals[0]) {
				if name == "index" {
					return int64(i), nil
				}
				c++
			}
		}
		if name == "index" {
			return nil, fmt.Errorf("%s is not in list", repr(a.vals[0]))
		}
		return c, nil
	case "copy":
		return &List{Items: append([]any(nil), l.Items...)}, r.charge(len(l.Items) * 16)
	}
	return nil, fmt.Errorf("unsupported template feature: list.%s()", name)
}
