package jinja

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Template values are plain Go values with Python's meaning:
//
//	nil        None
//	undefined  a name or attribute that does not exist
//	bool       True / False
//	int64      int
//	float64    float
//	string     str
//	markup     a string marked safe (|safe): adding a str to it escapes that str
//	*List      list or tuple
//	*Dict      dict, keys in insertion order
//	*namespace namespace()
//	callable   macros, globals and bound methods
//	*loopInfo  the loop variable
//
// Values from callers enter through ValueOf.

// undefined is the value of a missing name, attribute or item. hint names
// what was missing, for the error raised when it is used.
type undefined struct{ hint string }

// markup is a string that jinja2's markupsafe treats as already escaped.
type markup string

// List is a template list (or tuple). Templates see it as a Python list.
type List struct {
	Items []any
	tuple bool
}

// NewList returns a list of the given values (each converted by ValueOf).
func NewList(items ...any) *List {
	l := &List{Items: make([]any, len(items))}
	for i, v := range items {
		l.Items[i] = ValueOf(v)
	}
	return l
}

// Dict is a template dict: string (or other scalar) keys in insertion
// order, as Python dicts keep them, so that tojson writes keys in the
// order they came.
type Dict struct {
	keys []any
	vals map[any]any
}

// NewDict returns an empty dict.
func NewDict() *Dict { return &Dict{vals: map[any]any{}} }

// Set sets key k to v (converted by ValueOf), keeping the position of an
// existing key.
func (d *Dict) Set(k string, v any) { d.set(k, ValueOf(v)) }

// Get returns the value of key k.
func (d *Dict) Get(k string) (any, bool) {
	v, ok := d.vals[k]
	return v, ok
}

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

func (d *Dict) set(k, v any) {
	k = dictKey(k)
	if _, ok := d.vals[k]; !ok {
		d.keys = append(d.keys, k)
	}
	d.vals[k] = v
}

func (d *Dict) get(k any) (any, bool) {
	k = dictKey(k)
	if !isHashable(k) {
		return nil, false
	}
	v, ok := d.vals[k]
	return v, ok
}

func (d *Dict) del(k any) {
	k = dictKey(k)
	if _, ok := d.vals[k]; !ok {
		return
	}
	delete(d.vals, k)
	d.keys = slices.DeleteFunc(d.keys, func(x any) bool { return x == k })
}

// dictKey maps equal Python keys to one Go map key: a markup string is a
// string; True is 1 and 1.0 is 1, as Python's hashing makes them.
func dictKey(k any) any {
	switch v := k.(type) {
	case markup:
		return string(v)
	case bool:
		if v {
			return int64(1)
		}
		return int64(0)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<62 {
			return int64(v)
		}
	}
	return k
}

func isHashable(k any) bool {
	switch k.(type) {
	case nil, string, int64, float64, bool:
		return true
	}
	return false
}

// namespace is the mutable object namespace() returns.
type namespace struct{ d *Dict }

// ValueOf converts a Go value into a template value: nil, bool, integers,
// floats, strings, slices, maps with string keys (keys sorted, since a Go
// map has no order: use *Dict or json.RawMessage to keep an order),
// json.RawMessage (decoded with its key order), *List and *Dict.
// Other types become their fmt.Sprint string.
func ValueOf(v any) any {
	switch x := v.(type) {
	case nil, bool, int64, float64, string, *List, *Dict, undefined, markup, *namespace, callable, *loopInfo:
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x)
		}
		return float64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return float64(x)
	case float32:
		return float64(x)
	case json.Number:
		return numberValue(string(x))
	case json.RawMessage:
		d, err := ParseJSON(x)
		if err != nil {
			return string(x)
		}
		return d
	case []any:
		return NewList(x...)
	case []string:
		l := &List{Items: make([]any, len(x))}
		for i, s := range x {
			l.Items[i] = s
		}
		return l
	case map[string]any:
		d := NewDict()
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			d.Set(k, x[k])
		}
		return d
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		l := &List{Items: make([]any, rv.Len())}
		for i := range l.Items {
			l.Items[i] = ValueOf(rv.Index(i).Interface())
		}
		return l
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			m := map[string]any{}
			for it := rv.MapRange(); it.Next(); {
				m[it.Key().String()] = it.Value().Interface()
			}
			return ValueOf(m)
		}
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return ValueOf(rv.Elem().Interface())
	case reflect.String:
		return rv.String()
	}
	return fmt.Sprint(v)
}

// numberValue parses a JSON number as Python's json module does: an int
// unless it has a fraction or exponent.
func numberValue(s string) any {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// typeName is the Python type name of v, for error messages.
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "NoneType"
	case undefined:
		return "Undefined"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case markup:
		return "Markup"
	case *List:
		if x.tuple {
			return "tuple"
		}
		return "list"
	case *Dict:
		return "dict"
	case *namespace:
		return "Namespace"
	case *loopInfo:
		return "LoopContext"
	case callable:
		return "function"
	}
	return fmt.Sprintf("%T", v)
}

// truthy is Python's bool(v).
func truthy(v any) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case markup:
		return x != ""
	case *List:
		return len(x.Items) > 0
	case *Dict:
		return len(x.keys) > 0
	}
	return true
}

// asString returns the text of a str or Markup value.
func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case markup:
		return string(x), true
	}
	return "", false
}

// toStr is Python's str(v) as jinja2 prints it; undefined prints empty.
func toStr(v any) string {
	switch x := v.(type) {
	case undefined:
		return ""
	case string:
		return x
	case markup:
		return string(x)
	}
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

// repr is Python's repr(v).
func repr(v any) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

// maxRepr bounds the text writeRepr makes: a list that contains itself
// twice would otherwise expand exponentially. Callers' size limits then
// reject the result.
const maxRepr = 16 << 20

// maxNesting bounds the recursion of repr, ==, < and the like through
// nested (or self-containing) lists and dicts.
const maxNesting = 100

func writeRepr(b *strings.Builder, v any, depth int) {
	if depth > maxNesting || b.Len() > maxRepr {
		b.WriteString("...")
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case undefined:
		b.WriteString("")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(formatFloat(x))
	case string:
		b.WriteString(pyQuote(x))
	case markup:
		b.WriteString("Markup(" + pyQuote(string(x)) + ")")
	case *List:
		open, close := "[", "]"
		if x.tuple {
			open, close = "(", ")"
		}
		b.WriteString(open)
		for i, it := range x.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, it, depth+1)
		}
		if x.tuple && len(x.Items) == 1 {
			b.WriteString(",")
		}
		b.WriteString(close)
	case *Dict:
		writeDictRepr(b, x, depth)
	case *namespace:
		b.WriteString("<Namespace ")
		writeDictRepr(b, x.d, depth)
		b.WriteString(">")
	case *loopInfo:
		b.WriteString("<LoopContext>")
	case callable:
		b.WriteString("<function " + x.name() + ">")
	default:
		fmt.Fprint(b, v)
	}
}

func writeDictRepr(b *strings.Builder, d *Dict, depth int) {
	b.WriteString("{")
	for i, k := range d.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		writeRepr(b, k, depth+1)
		b.WriteString(": ")
		writeRepr(b, d.vals[k], depth+1)
	}
	b.WriteString("}")
}

// pyQuote is Python's repr of a str: single quotes unless the text has a
// single quote and no double quote; backslash escapes for quotes,
// backslashes, \n \r \t and non-printable characters.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || (r != utf8.RuneError && unicode.IsPrint(r)):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// formatFloat is Python's repr of a float: the shortest digits that read
// back the same, in positional notation for exponents -5 < e < 16, with
// ".0" on integral values.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expStr)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if exp < -4 || exp >= 16 {
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		out += fmt.Sprintf("e%s%02d", sign, exp)
	} else if exp < 0 {
		out = "0." + strings.Repeat("0", -exp-1) + digits
	} else if exp+1 >= len(digits) {
		out = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	} else {
		out = digits[:exp+1] + "." + digits[exp+1:]
	}
	if neg {
		out = "-" + out
	}
	return out
}

// equal is Python's ==.
func equal(a, b any) bool { return equalDepth(a, b, 0) }

func equalDepth(a, b any, depth int) bool {
	if depth > maxNesting {
		return false // too deep (or cyclic) to tell: Python fails with RecursionError
	}
	if sa, ok := asString(a); ok {
		sb, ok := asString(b)
		return ok && sa == sb
	}
	if na, ok := number(a); ok {
		nb, ok := number(b)
		return ok && na == nb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case *List:
		y, ok := b.(*List)
		if !ok || len(x.Items) != len(y.Items) || x.tuple != y.tuple {
			return false
		}
		for i := range x.Items {
			if !equalDepth(x.Items[i], y.Items[i], depth+1) {
				return false
			}
		}
		return true
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		for _, k := range x.keys {
			v, ok := y.vals[k]
			if !ok || !equalDepth(x.vals[k], v, depth+1) {
				return false
			}
		}
		return true
	}
	return a == b
}

// number returns a numeric value (bool counts, as in Python) as float64
// for comparisons.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// compare orders a and b as Python's < does: numbers with numbers,
// strings by code point, lists element by element.
func compare(a, b any) (int, error) { return compareDepth(a, b, 0) }

func compareDepth(a, b any, depth int) (int, error) {
	if depth > maxNesting {
		return 0, errors.New("maximum recursion depth exceeded in comparison")
	}
	if na, ok := number(a); ok {
		if nb, ok := number(b); ok {
			ia, aInt := intOf(a)
			ib, bInt := intOf(b)
			if aInt && bInt {
				return cmpInt(ia, ib), nil
			}
			switch {
			case na < nb:
				return -1, nil
			case na > nb:
				return 1, nil
			}
			return 0, nil
		}
	}
	if sa, ok := asString(a); ok {
		if sb, ok := asString(b); ok {
			return strings.Compare(sa, sb), nil
		}
	}
	if la, ok := a.(*List); ok {
		if lb, ok := b.(*List); ok {
			for i := 0; i < len(la.Items) && i < len(lb.Items); i++ {
				if equalDepth(la.Items[i], lb.Items[i], depth+1) {
					continue
				}
				return compareDepth(la.Items[i], lb.Items[i], depth+1)
			}
			return cmpInt(int64(len(la.Items)), int64(len(lb.Items))), nil
		}
	}
	return 0, fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// intOf returns an int or bool as int64.
func intOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}
