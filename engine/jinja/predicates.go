package jinja

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// testFunc implements one "is" test.
type testFunc func(r *renderer, v any, args []any) (bool, error)

// tests is the registration table of jinja2's tests.
var tests map[string]testFunc

func init() {
	cmp := func(op string) testFunc {
		return func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("test '%s' takes one argument", op)
			}
			return compareOp(op, v, args[0])
		}
	}
	tests = map[string]testFunc{
		"defined":   func(r *renderer, v any, _ []any) (bool, error) { _, u := v.(undefined); return !u, nil },
		"undefined": func(r *renderer, v any, _ []any) (bool, error) { _, u := v.(undefined); return u, nil },
		"none":      func(r *renderer, v any, _ []any) (bool, error) { return v == nil, nil },
		"true":      func(r *renderer, v any, _ []any) (bool, error) { return v == true, nil },
		"false":     func(r *renderer, v any, _ []any) (bool, error) { return v == false, nil },
		"boolean":   func(r *renderer, v any, _ []any) (bool, error) { _, ok := v.(bool); return ok, nil },
		"string":    func(r *renderer, v any, _ []any) (bool, error) { _, ok := asString(v); return ok, nil },
		"mapping":   func(r *renderer, v any, _ []any) (bool, error) { _, ok := v.(*Dict); return ok, nil },
		"number": func(r *renderer, v any, _ []any) (bool, error) {
			_, ok := number(v)
			return ok, nil
		},
		"integer": func(r *renderer, v any, _ []any) (bool, error) { _, ok := v.(int64); return ok, nil },
		"float":   func(r *renderer, v any, _ []any) (bool, error) { _, ok := v.(float64); return ok, nil },
		"callable": func(r *renderer, v any, _ []any) (bool, error) {
			_, ok := v.(callable)
			return ok, nil
		},
		// Undefined is iterable and a sequence in jinja2 (it has __iter__,
		// __len__ and __getitem__), and so is a dict.
		"iterable": func(r *renderer, v any, _ []any) (bool, error) {
			switch v.(type) {
			case string, markup, *List, *Dict, undefined:
				return true, nil
			}
			return false, nil
		},
		"sequence": func(r *renderer, v any, _ []any) (bool, error) {
			switch v.(type) {
			case string, markup, *List, *Dict, undefined:
				return true, nil
			}
			return false, nil
		},
		"escaped": func(r *renderer, v any, _ []any) (bool, error) { _, ok := v.(markup); return ok, nil },
		"lower": func(r *renderer, v any, _ []any) (bool, error) {
			s := toStr(v)
			return strings.ToLower(s) == s && strings.IndexFunc(s, unicode.IsLetter) >= 0, nil
		},
		"upper": func(r *renderer, v any, _ []any) (bool, error) {
			s := toStr(v)
			return strings.ToUpper(s) == s && strings.IndexFunc(s, unicode.IsLetter) >= 0, nil
		},
		"odd": func(r *renderer, v any, _ []any) (bool, error) {
			i, ok := intOf(v)
			if !ok {
				return false, fmt.Errorf("test 'odd' needs an integer, got %s", typeName(v))
			}
			return i%2 != 0, nil
		},
		"even": func(r *renderer, v any, _ []any) (bool, error) {
			i, ok := intOf(v)
			if !ok {
				return false, fmt.Errorf("test 'even' needs an integer, got %s", typeName(v))
			}
			return i%2 == 0, nil
		},
		"divisibleby": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("test 'divisibleby' takes one argument")
			}
			m, err := arith("%", v, args[0])
			if err != nil {
				return false, err
			}
			return equal(m, int64(0)), nil
		},
		"sameas": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("test 'sameas' takes one argument")
			}
			switch x := v.(type) {
			case nil, bool:
				return v == args[0], nil
			case *List, *Dict, *namespace:
				return v == args[0], nil
			default:
				_ = x
				return equal(v, args[0]), nil
			}
		},
		"in": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("test 'in' takes one argument")
			}
			return contains(args[0], v)
		},
		"eq": cmp("=="), "equalto": cmp("=="), "==": cmp("=="),
		"ne": cmp("!="), "!=": cmp("!="),
		"lt": cmp("<"), "lessthan": cmp("<"), "<": cmp("<"),
		"le": cmp("<="), "<=": cmp("<="),
		"gt": cmp(">"), "greaterthan": cmp(">"), ">": cmp(">"),
		"ge": cmp(">="), ">=": cmp(">="),
	}
}

func (r *renderer) test(x *testExpr, s *scope) (any, error) {
	fn, ok := tests[x.name]
	if !ok {
		return nil, fmt.Errorf("unsupported template feature: the '%s' test", x.name)
	}
	v, err := r.eval(x.x, s)
	if err != nil {
		return nil, err
	}
	args, _, err := r.evalArgs(x.args, nil, s)
	if err != nil {
		return nil, err
	}
	ok, err = fn(r, v, args)
	if err != nil {
		return nil, err
	}
	return ok != x.negate, nil
}
