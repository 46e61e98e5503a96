package jinja

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

func unary(op string, v any) (any, error) {
	if u, ok := v.(undefined); ok && op != "not" {
		return nil, undefinedError(u)
	}
	switch op {
	case "not":
		return !truthy(v), nil
	case "-":
		if i, ok := intOf(v); ok {
			if i == math.MinInt64 {
				return nil, errors.New("integer overflow")
			}
			return -i, nil
		}
		if f, ok := v.(float64); ok {
			return -f, nil
		}
	case "+":
		if i, ok := intOf(v); ok {
			return i, nil
		}
		if f, ok := v.(float64); ok {
			return f, nil
		}
	}
	return nil, fmt.Errorf("bad operand type for unary %s: '%s'", op, typeName(v))
}

// escapeHTML is markupsafe's escape.
func escapeHTML(s string) string {
	if !strings.ContainsAny(s, `&<>"'`) {
		return s
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// escapeValue is markupsafe's escape(v): Markup stays, anything else is
// its str() escaped.
func escapeValue(v any) markup {
	if m, ok := v.(markup); ok {
		return m
	}
	return markup(escapeHTML(toStr(v)))
}

func (r *renderer) binary(op string, a, b any) (any, error) {
	for _, v := range []any{a, b} {
		if u, ok := v.(undefined); ok {
			return nil, undefinedError(u)
		}
	}
	ma, aSafe := a.(markup)
	mb, bSafe := b.(markup)
	if aSafe || bSafe {
		switch op {
		case "+":
			// Markup + str escapes the str (markupsafe's __add__ and
			// __radd__), whichever side the Markup is on.
			_, aStr := asString(a)
			_, bStr := asString(b)
			if aStr && bStr {
				var out markup
				switch {
				case aSafe && bSafe:
					out = ma + mb
				case aSafe:
					out = ma + escapeValue(b)
				default:
					out = escapeValue(a) + mb
				}
				return out, r.charge(len(out))
			}
		case "%":
			if aSafe {
				args := b
				if l, ok := b.(*List); ok && l.tuple {
					esc := make([]any, len(l.Items))
					for i, it := range l.Items {
						esc[i] = escapeValue(it)
					}
					args = &List{Items: esc, tuple: true}
				} else {
					args = escapeValue(b)
				}
				s, err := r.percentFormat(string(ma), args)
				return markup(s), err
			}
		}
	}
	sa, aStr := asString(a)
	sb, bStr := asString(b)
	switch op {
	case "+":
		if aStr && bStr {
			if err := r.charge(len(sa) + len(sb)); err != nil {
				return nil, err
			}
			return sa + sb, nil
		}
		if la, ok := a.(*List); ok {
			if lb, ok := b.(*List); ok && la.tuple == lb.tuple {
				if err := r.charge((len(la.Items) + len(lb.Items)) * 16); err != nil {
					return nil, err
				}
				items := append(append(make([]any, 0, len(la.Items)+len(lb.Items)), la.Items...), lb.Items...)
				return &List{Items: items, tuple: la.tuple}, nil
			}
		}
	case "*":
		if aStr || bStr {
			s, nv := sa, b
			if !aStr {
				s, nv = sb, a
			}
			if n, ok := intOf(nv); ok {
				if n <= 0 {
					return "", nil
				}
				if n > int64(r.lim.MaxOutput) || int64(len(s))*n > int64(r.lim.MaxOutput) {
					return nil, fmt.Errorf("%w: a value of more than %d bytes", ErrLimit, r.lim.MaxOutput)
				}
				if err := r.charge(len(s) * int(n)); err != nil {
					return nil, err
				}
				return strings.Repeat(s, int(n)), nil
			}
		}
		if l, ok := a.(*List); ok {
			if n, ok := intOf(b); ok {
				return r.repeatList(l, n)
			}
		}
		if l, ok := b.(*List); ok {
			if n, ok := intOf(a); ok {
				return r.repeatList(l, n)
			}
		}
	case "%":
		if aStr {
			s, err := r.percentFormat(sa, b)
			return s, err
		}
	}
	return arith(op, a, b)
}

func (r *renderer) repeatList(l *List, n int64) (any, error) {
	if n <= 0 {
		return &List{tuple: l.tuple}, nil
	}
	if n > int64(r.lim.MaxOutput) || int64(len(l.Items))*n*16 > int64(r.lim.MaxOutput) {
		return nil, fmt.Errorf("%w: a list of more than %d items", ErrLimit, r.lim.MaxOutput/16)
	}
	if err := r.charge(len(l.Items) * int(n) * 16); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(l.Items)*int(n))
	for range n {
		out = append(out, l.Items...)
	}
	return &List{Items: out, tuple: l.tuple}, nil
}

// arith is Python arithmetic on ints (bools count) and floats.
func arith(op string, a, b any) (any, error) {
	ia, aInt := intOf(a)
	ib, bInt := intOf(b)
	fa, aNum := number(a)
	fb, bNum := number(b)
	if !aNum || !bNum {
		return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	}
	if aInt && bInt {
		switch op {
		case "+":
			s := ia + ib
			if (s > ia) != (ib > 0) {
				return nil, errors.New("integer overflow")
			}
			return s, nil
		case "-":
			s := ia - ib
			if (s < ia) != (ib > 0) {
				return nil, errors.New("integer overflow")
			}
			return s, nil
		case "*":
			if ia != 0 && ib != 0 {
				p := ia * ib
				if p/ib != ia || (ia == -1 && ib == math.MinInt64) || (ib == -1 && ia == math.MinInt64) {
					return nil, errors.New("integer overflow")
				}
				return p, nil
			}
			return int64(0), nil
		case "//", "%":
			if ib == 0 {
				return nil, errors.New("integer division or modulo by zero")
			}
			if ia == math.MinInt64 && ib == -1 {
				return nil, errors.New("integer overflow")
			}
			q, m := ia/ib, ia%ib
			if m != 0 && (m < 0) != (ib < 0) {
				q--
				m += ib
			}
			if op == "//" {
				return q, nil
			}
			return m, nil
		case "**":
			switch {
			case ib >= 0 && (ia == 0 || ia == 1):
				if ib == 0 {
					return int64(1), nil
				}
				return ia, nil
			case ib >= 0 && ia == -1:
				if ib%2 == 0 {
					return int64(1), nil
				}
				return int64(-1), nil
			}
			if ib >= 0 {
				res := int64(1)
				for range ib {
					if res != 0 && (res*ia)/ia != res {
						return nil, errors.New("integer overflow")
					}
					res *= ia
				}
				return res, nil
			}
		}
	}
	switch op {
	case "+":
		return fa + fb, nil
	case "-":
		return fa - fb, nil
	case "*":
		return fa * fb, nil
	case "/":
		if fb == 0 {
			return nil, errors.New("division by zero")
		}
		return fa / fb, nil
	case "//":
		if fb == 0 {
			return nil, errors.New("float floor division by zero")
		}
		return math.Floor(fa / fb), nil
	case "%":
		if fb == 0 {
			return nil, errors.New("float modulo")
		}
		m := math.Mod(fa, fb)
		if m != 0 && (m < 0) != (fb < 0) {
			m += fb
		}
		return m, nil
	case "**":
		return math.Pow(fa, fb), nil
	}
	return nil, fmt.Errorf("unsupported operator %s", op)
}

// compareOp evaluates one comparison of a chain.
func compareOp(op string, a, b any) (bool, error) {
	switch op {
	case "==":
		return equal(a, b), nil
	case "!=":
		return !equal(a, b), nil
	case "in", "notin":
		ok, err := contains(b, a)
		if op == "notin" {
			ok = !ok
		}
		return ok, err
	}
	for _, v := range []any{a, b} {
		if u, ok := v.(undefined); ok {
			return false, undefinedError(u)
		}
	}
	c, err := compare(a, b)
	if err != nil {
		return false, fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// contains is Python's "x in container".
func contains(container, x any) (bool, error) {
	switch c := container.(type) {
	case string, markup:
		s, _ := asString(c)
		sub, ok := asString(x)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", typeName(x))
		}
		return strings.Contains(s, sub), nil
	case *List:
		for _, it := range c.Items {
			if equal(it, x) {
				return true, nil
			}
		}
		return false, nil
	case *Dict:
		_, ok := c.get(x)
		return ok, nil
	case *namespace:
		return false, fmt.Errorf("argument of type 'Namespace' is not iterable")
	case undefined:
		return false, nil
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", typeName(container))
}
