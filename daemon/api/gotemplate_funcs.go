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
	text := func(f func(args ...any) string) func(args ...any) (string, error) {
		return func(args ...any) (string, error) {
			s := f(args...)
			return s, m.charge(len(s))
		}
	}
	return template.FuncMap{
		"json": func(v any) (string, error) {
			b, _ := json.Marshal(v)
			return string(b), m.charge(len(b))
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
		"ge":       cmp(func(a, b reflect.Value) (bool, error) { ok, err := less(a, b); return !ok, err }),
		"print":    text(fmt.Sprint),
		"println":  text(fmt.Sprintln),
		"printf":   func(f string, args ...any) (string, error) { s := fmt.Sprintf(f, args...); return s, m.charge(len(s)) },
		"html":     text(template.HTMLEscaper),
		"js":       text(template.JSEscaper),
		"urlquery": text(template.URLQueryEscaper),
	}
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
