package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"text/template"
)

// maxFuncBytes bounds the bytes one rendering's functions may compare or
// write (eq on two texts, print, json, ...): the node count bounds how
// often a template calls them, and this what each call costs, so that a
// template comparing a 6 MiB message in every turn of a long chat cannot
// run for hours where it cannot be stopped.
const maxFuncBytes = 1 << 30

// funcMeter counts what one rendering's functions cost.
type funcMeter struct{ used int }

var errFuncBudget = fmt.Errorf("the template's functions would compare or write more than %d bytes", maxFuncBytes)

func (m *funcMeter) charge(n int) error {
	m.used += n
	if m.used > maxFuncBytes {
		return errFuncBudget
	}
	return nil
}

// funcs are the functions of a rendering metered by m: Ollama's json and
// text/template's own that cost as much as the text they read (the
// comparisons, print and the escapers), with the same results.
func (m *funcMeter) funcs() template.FuncMap {
	cmp := func(op func(a, b reflect.Value) (bool, error)) func(a, b reflect.Value) (bool, error) {
		return func(a, b reflect.Value) (bool, error) {
			if err := m.charge(compareCost(a, b)); err != nil {
				return false, err
			}
			return op(a, b)
		}
	}
	// The text functions are charged what they may write before they
	// write it (printedBound), and what they wrote beyond that after: a
	// charge after the writing let one call build gigabytes first
	// (printf of a thousand 999,999-wide verbs, print of a doubled text).
	text := func(f func(args ...any) string) func(args ...any) (string, error) {
		return func(args ...any) (string, error) {
			pre := len(args)
			for _, a := range args {
				pre = addBound(pre, printedBound(reflect.ValueOf(a)))
			}
			return m.chargeAround(pre, func() string { return f(args...) })
		}
	}
	return template.FuncMap{
		"json": func(v any) (string, error) {
			return m.chargeAround(printedBound(reflect.ValueOf(v)), func() string {
				b, _ := json.Marshal(v)
				return string(b)
			})
		},
		"eq": func(a reflect.Value, bs ...reflect.Value) (bool, error) {
			if len(bs) == 0 {
				return false, errors.New("missing argument for comparison")
			}
			for _, b := range bs {
				if err := m.charge(compareCost(a, b)); err != nil {
					return false, err
				}
				if ok, err := equal(a, b); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		},
		"ne": cmp(func(a, b reflect.Value) (bool, error) { ok, err := equal(a, b); return !ok, err }),
		"lt": cmp(less),
		"le": cmp(func(a, b reflect.Value) (bool, error) {
			if ok, err := less(a, b); ok || err != nil {
				return ok, err
			}
			return equal(a, b)
		}),
		"gt": cmp(func(a, b reflect.Value) (bool, error) {
			if ok, err := less(a, b); ok || err != nil {
				return false, err
			}
			ok, err := equal(a, b)
			return !ok, err
		}),
		"ge":      cmp(func(a, b reflect.Value) (bool, error) { ok, err := less(a, b); return !ok, err }),
		"print":   text(fmt.Sprint),
		"println": text(fmt.Sprintln),
		"printf": func(f string, args ...any) (string, error) {
			return m.chargeAround(printfBound(f, args), func() string { return fmt.Sprintf(f, args...) })
		},
		"html":     text(template.HTMLEscaper),
		"js":       text(template.JSEscaper),
		"urlquery": text(template.URLQueryEscaper),
	}
}

// chargeAround charges pre, the most that write may write, before
// calling it, and what it wrote beyond pre after.
func (m *funcMeter) chargeAround(pre int, write func() string) (string, error) {
	if err := m.charge(pre); err != nil {
		return "", err
	}
	s := write()
	return s, m.charge(max(0, len(s)-pre))
}

// boundCap is where printedBound and printfBound stop counting: past
// it, any call is over the functions' budget.
const boundCap = maxFuncBytes + 1

// addBound is a + b, saturating at boundCap.
func addBound(a, b int) int { return min(a+b, boundCap) }

// printedBound is the most bytes fmt's verbs or json write for v: a text
// escaped at its worst (six bytes a byte, as JSON's \u003c), numbers
// at their longest, and the punctuation, names and separators of lists,
// maps and structs. It saturates at boundCap.
func printedBound(v reflect.Value) int {
	const scalar = 400 // a float64 written in full (%f of 1e308)
	switch v.Kind() {
	case reflect.Invalid:
		return len("<nil>")
	case reflect.String:
		return min(6*v.Len()+2, boundCap)
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return len("<nil>")
		}
		return printedBound(v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return min(6*v.Len()+2, boundCap)
		}
		n := 2
		for i := range v.Len() {
			if n = addBound(n, printedBound(v.Index(i))+1); n >= boundCap {
				break
			}
		}
		return n
	case reflect.Map:
		n := 2
		for it := v.MapRange(); it.Next(); {
			if n = addBound(n, printedBound(it.Key())+printedBound(it.Value())+2); n >= boundCap {
				break
			}
		}
		return n
	case reflect.Struct:
		n := 2
		for i := range v.NumField() {
			if n = addBound(n, len(v.Type().Field(i).Name)+printedBound(v.Field(i))+4); n >= boundCap {
				break
			}
		}
		return n
	}
	return scalar
}

// printfBound is the most bytes fmt.Sprintf(format, args...) writes: the
// format, each verb's width and precision (at most a million each, or
// fmt refuses them), and each argument as often as the verbs may print
// it (every verb may, with an explicit index: %[1]s%[1]s...), with what
// a verb of the wrong kind adds (%!d(string=...)).
func printfBound(format string, args []any) int {
	const pad = 64 // %!verb(type=...) around a misused argument
	const widest = 1_000_000
	n := len(format)
	verbs, indexed := 0, false
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		verbs++
		for i++; i < len(format); i++ {
			c := format[i]
			if c >= '0' && c <= '9' {
				num := 0
				for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
					num = min(num*10+int(format[i]-'0'), widest)
				}
				n = addBound(n, num)
				i--
				continue
			}
			switch c {
			case '*':
				n = addBound(n, widest)
				continue
			case '[':
				indexed = true
				continue
			case '+', '-', '#', ' ', '.', ']':
				continue
			}
			break // the verb
		}
	}
	args1, widestArg := len(args)*pad, 0
	for _, a := range args {
		b := printedBound(reflect.ValueOf(a)) + pad
		args1, widestArg = addBound(args1, b), max(widestArg, b)
	}
	n = addBound(n, args1)
	if indexed {
		n = addBound(n, min(verbs, boundCap)*min(widestArg, boundCap/max(verbs, 1)+1))
	}
	return n
}

// compareCost is what comparing a and b reads at most: the shorter of
// two texts.
func compareCost(a, b reflect.Value) int {
	a, b = indirect(a), indirect(b)
	if a.Kind() == reflect.String && b.Kind() == reflect.String {
		return min(a.Len(), b.Len())
	}
	return 1
}

// indirect is the value inside an interface.
func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	return v
}

// basic is a comparable value's class, as text/template's comparisons
// class them.
type basic int

const (
	badBasic basic = iota
	boolBasic
	intBasic
	uintBasic
	floatBasic
	stringBasic
)

func basicOf(v reflect.Value) basic {
	switch v.Kind() {
	case reflect.Bool:
		return boolBasic
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intBasic
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintBasic
	case reflect.Float32, reflect.Float64:
		return floatBasic
	case reflect.String:
		return stringBasic
	}
	return badBasic
}

// equal is text/template's eq of two values: basic values by their
// class (signed and unsigned integers by value), others with == where
// their type allows it.
func equal(a, b reflect.Value) (bool, error) {
	a, b = indirect(a), indirect(b)
	ka, kb := basicOf(a), basicOf(b)
	if ka != kb {
		switch {
		case ka == intBasic && kb == uintBasic:
			return a.Int() >= 0 && uint64(a.Int()) == b.Uint(), nil
		case ka == uintBasic && kb == intBasic:
			return b.Int() >= 0 && a.Uint() == uint64(b.Int()), nil
		case a.IsValid() && b.IsValid():
			return false, fmt.Errorf("incompatible types for comparison: %v and %v", a.Type(), b.Type())
		}
		return a.IsValid() == b.IsValid(), nil // one is nil
	}
	switch ka {
	case boolBasic:
		return a.Bool() == b.Bool(), nil
	case intBasic:
		return a.Int() == b.Int(), nil
	case uintBasic:
		return a.Uint() == b.Uint(), nil
	case floatBasic:
		return a.Float() == b.Float(), nil
	case stringBasic:
		return a.String() == b.String(), nil
	}
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid(), nil
	}
	if a.Type() != b.Type() || !a.Type().Comparable() {
		return false, fmt.Errorf("non-comparable types %v and %v", a.Type(), b.Type())
	}
	return a.Interface() == b.Interface(), nil
}

// less is text/template's lt of two basic values.
func less(a, b reflect.Value) (bool, error) {
	a, b = indirect(a), indirect(b)
	ka, kb := basicOf(a), basicOf(b)
	if ka != kb {
		switch {
		case ka == intBasic && kb == uintBasic:
			return a.Int() < 0 || uint64(a.Int()) < b.Uint(), nil
		case ka == uintBasic && kb == intBasic:
			return b.Int() >= 0 && a.Uint() < uint64(b.Int()), nil
		case ka == badBasic || kb == badBasic:
			return false, errors.New("invalid type for comparison")
		}
		return false, fmt.Errorf("incompatible types for comparison: %v and %v", a.Type(), b.Type())
	}
	switch ka {
	case intBasic:
		return a.Int() < b.Int(), nil
	case uintBasic:
		return a.Uint() < b.Uint(), nil
	case floatBasic:
		return a.Float() < b.Float(), nil
	case stringBasic:
		return a.String() < b.String(), nil
	}
	return false, errors.New("invalid type for comparison")
}
