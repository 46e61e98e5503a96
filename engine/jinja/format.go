package jinja

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// strFormat is Python's str.format: {} and {0} take positional
// arguments, {name} keyword ones, with an optional !r/!s conversion and
// format spec; {{ and }} are literal braces.
func (r *renderer) strFormat(s string, args []any, kwargs []kwval) (any, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{', c == '}' && i+1 < len(s) && s[i+1] == '}':
			b.WriteByte(c)
			i += 2
			continue
		case c == '}':
			return nil, errors.New("single '}' encountered in format string")
		case c != '{':
			b.WriteByte(c)
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, errors.New("single '{' encountered in format string")
		}
		field := s[i+1 : i+end]
		i += end + 1
		field, spec, _ := strings.Cut(field, ":")
		field, conv, hasConv := strings.Cut(field, "!")
		var v any
		switch {
		case field == "":
			if auto >= len(args) {
				return nil, fmt.Errorf("Replacement index %d out of range for positional args tuple", auto)
			}
			v = args[auto]
			auto++
		case field[0] >= '0' && field[0] <= '9':
			n, err := strconv.Atoi(field)
			if err != nil || n >= len(args) {
				return nil, fmt.Errorf("Replacement index %s out of range for positional args tuple", field)
			}
			v = args[n]
		default:
			found := false
			for _, k := range kwargs {
				if k.name == field {
					v, found = k.v, true
				}
			}
			if !found {
				return nil, fmt.Errorf("KeyError: '%s'", field)
			}
		}
		if hasConv {
			switch conv {
			case "r", "a":
				v = repr(v)
			case "s":
				v = toStr(v)
			default:
				return nil, fmt.Errorf("unknown conversion specifier %s", conv)
			}
		}
		out, err := formatSpec(v, spec)
		if err != nil {
			return nil, err
		}
		if err := r.charge(b.Len() + len(out)); err != nil {
			return nil, err
		}
		b.WriteString(out)
	}
	return b.String(), nil
}

// formatSpec is Python's format(v, spec) for the common specs:
// [[fill]align][sign][0][width][,][.precision][type].
func formatSpec(v any, spec string) (string, error) {
	if spec == "" {
		return toStr(v), nil
	}
	fill, align := " ", byte(0)
	if n := utf8.RuneCountInString(spec); n >= 2 {
		c, w := utf8.DecodeRuneInString(spec)
		if w < len(spec) && strings.IndexByte("<>^=", spec[w]) >= 0 {
			fill, align, spec = string(c), spec[w], spec[w+1:]
		}
	}
	if align == 0 && spec != "" && strings.IndexByte("<>^=", spec[0]) >= 0 {
		align, spec = spec[0], spec[1:]
	}
	sign := byte('-')
	if spec != "" && strings.IndexByte("+- ", spec[0]) >= 0 {
		sign, spec = spec[0], spec[1:]
	}
	if spec != "" && spec[0] == '0' {
		if align == 0 {
			fill, align = "0", '='
		}
		spec = spec[1:]
	}
	i := 0
	for i < len(spec) && spec[i] >= '0' && spec[i] <= '9' {
		i++
	}
	width, _ := strconv.Atoi(spec[:i])
	if width > 1<<20 {
		return "", errors.New("format width too large")
	}
	spec = spec[i:]
	grouping := ""
	if spec != "" && (spec[0] == ',' || spec[0] == '_') {
		grouping, spec = spec[:1], spec[1:]
	}
	prec := -1
	if spec != "" && spec[0] == '.' {
		j := 1
		for j < len(spec) && spec[j] >= '0' && spec[j] <= '9' {
			j++
		}
		prec, _ = strconv.Atoi(spec[1:j])
		if prec > 1000 {
			return "", errors.New("format precision too large")
		}
		spec = spec[j:]
	}
	typ := byte(0)
	if len(spec) == 1 {
		typ = spec[0]
	} else if spec != "" {
		return "", fmt.Errorf("invalid format specifier")
	}
	var body string
	numeric := false
	neg := false
	if s, ok := asString(v); ok && (typ == 0 || typ == 's') {
		body = s
		if prec >= 0 {
			if rs := []rune(body); len(rs) > prec {
				body = string(rs[:prec])
			}
		}
	} else if f, ok := number(v); ok {
		numeric = true
		iv, isInt := intOf(v)
		neg = f < 0 || math.Signbit(f)
		switch typ {
		case 0, 'd', 'n':
			if isInt && (typ != 0 || prec < 0) {
				if iv < 0 {
					iv = -iv
				}
				body = strconv.FormatInt(iv, 10)
			} else if typ == 0 && prec < 0 {
				body = formatFloat(math.Abs(f))
			} else if typ == 0 {
				body = strconv.FormatFloat(math.Abs(f), 'g', prec, 64)
			} else {
				return "", fmt.Errorf("Unknown format code 'd' for object of type 'float'")
			}
		case 'f', 'F':
			body = strconv.FormatFloat(math.Abs(f), 'f', max(prec, 0)+boolInt(prec < 0)*6, 64)
		case 'e', 'E':
			p := prec
			if p < 0 {
				p = 6
			}
			body = pyExp(strconv.FormatFloat(math.Abs(f), 'e', p, 64))
			if typ == 'E' {
				body = strings.ToUpper(body)
			}
		case 'g', 'G':
			p := prec
			if p < 0 {
				p = 6
			}
			body = pyExp(strconv.FormatFloat(math.Abs(f), 'g', max(p, 1), 64))
		case '%':
			p := prec
			if p < 0 {
				p = 6
			}
			body = strconv.FormatFloat(math.Abs(f)*100, 'f', p, 64) + "%"
		case 'x', 'X', 'o', 'b':
			if !isInt {
				return "", fmt.Errorf("Unknown format code '%c' for object of type 'float'", typ)
			}
			if iv < 0 {
				iv = -iv
			}
			base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'b': 2}[typ]
			body = strconv.FormatInt(iv, base)
			if typ == 'X' {
				body = strings.ToUpper(body)
			}
		case 'c':
			body = string(rune(iv))
			numeric = false
		default:
			return "", fmt.Errorf("Unknown format code '%c'", typ)
		}
		if grouping != "" && numeric {
			body = group(body, grouping)
		}
	} else {
		return "", fmt.Errorf("unsupported format string passed to %s.__format__", typeName(v))
	}
	prefix := ""
	if numeric {
		switch {
		case neg:
			prefix = "-"
		case sign == '+':
			prefix = "+"
		case sign == ' ':
			prefix = " "
		}
	}
	if align == 0 {
		align = '<'
		if numeric {
			align = '>'
		}
	}
	n := utf8.RuneCountInString(prefix + body)
	if width <= n {
		return prefix + body, nil
	}
	padN := width - n
	switch align {
	case '<':
		return prefix + body + strings.Repeat(fill, padN), nil
	case '>':
		return strings.Repeat(fill, padN) + prefix + body, nil
	case '=':
		return prefix + strings.Repeat(fill, padN) + body, nil
	}
	left := padN / 2
	return strings.Repeat(fill, left) + prefix + body + strings.Repeat(fill, padN-left), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pyExp writes an exponent with at least two digits, as Python does.
func pyExp(s string) string {
	i := strings.IndexAny(s, "eE")
	if i < 0 || i+2 >= len(s) {
		return s
	}
	digits := s[i+2:]
	if len(digits) == 1 {
		return s[:i+2] + "0" + digits
	}
	return s
}

// group inserts a thousands separator into the integer part of body.
func group(body, sep string) string {
	intPart, rest := body, ""
	if i := strings.IndexAny(body, ".e%"); i >= 0 {
		intPart, rest = body[:i], body[i:]
	}
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(c)
	}
	return b.String() + rest
}

// percentFormat is Python's "format" % args: %s %r %d %i %f %e %g %x %o
// %c and %%, with flags, width, precision and %(name)s keys.
func (r *renderer) percentFormat(s string, args any) (string, error) {
	var positional []any
	var named *Dict
	switch a := args.(type) {
	case *List:
		if a.tuple {
			positional = a.Items
		} else {
			positional = []any{a}
		}
	case *Dict:
		named = a
		positional = []any{a}
	default:
		positional = []any{a}
	}
	next := 0
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		if i >= len(s) {
			return "", errors.New("incomplete format")
		}
		var v any
		hasV := false
		if s[i] == '(' {
			end := strings.IndexByte(s[i:], ')')
			if end < 0 || named == nil {
				return "", errors.New("format requires a mapping")
			}
			key := s[i+1 : i+end]
			var ok bool
			if v, ok = named.get(key); !ok {
				return "", fmt.Errorf("KeyError: '%s'", key)
			}
			hasV = true
			i += end + 1
		}
		j := i
		for j < len(s) && strings.IndexByte("-+ #0", s[j]) >= 0 {
			j++
		}
		flags := s[i:j]
		k := j
		for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k] == '.') {
			k++
		}
		if k >= len(s) {
			return "", errors.New("incomplete format")
		}
		widthPrec := s[j:k]
		typ := s[k]
		i = k + 1
		if typ == '%' {
			b.WriteByte('%')
			continue
		}
		if !hasV {
			if next >= len(positional) {
				return "", errors.New("not enough arguments for format string")
			}
			v = positional[next]
			next++
		}
		spec := ""
		switch {
		case strings.Contains(flags, "-"):
			spec = "<"
		case strings.Contains(flags, "0") && typ != 's' && typ != 'r':
			spec = "0"
		default:
			spec = ">"
		}
		if strings.Contains(flags, "+") {
			spec = strings.Replace(spec, "0", "", 1) + "+" + map[bool]string{true: "0", false: ""}[spec == "0"]
		} else if strings.Contains(flags, " ") {
			spec = strings.Replace(spec, "0", "", 1) + " " + map[bool]string{true: "0", false: ""}[spec == "0"]
		}
		spec += widthPrec
		var out string
		var err error
		switch typ {
		case 's':
			out, err = formatSpec(toStr(v), spec+"s")
		case 'r', 'a':
			out, err = formatSpec(repr(v), spec+"s")
		case 'd', 'i', 'u':
			f, ok := number(v)
			if !ok {
				return "", fmt.Errorf("%%%c format: a real number is required, not %s", typ, typeName(v))
			}
			iv, isInt := intOf(v)
			if !isInt {
				iv = int64(math.Trunc(f))
			}
			out, err = formatSpec(iv, spec+"d")
		case 'f', 'F', 'e', 'E', 'g', 'G':
			f, ok := number(v)
			if !ok {
				return "", fmt.Errorf("must be real number, not %s", typeName(v))
			}
			out, err = formatSpec(f, spec+string(typ))
		case 'x', 'X', 'o':
			out, err = formatSpec(v, spec+string(typ))
		case 'c':
			if str, ok := asString(v); ok {
				out = str
			} else {
				out, err = formatSpec(v, spec+"c")
			}
		default:
			return "", fmt.Errorf("unsupported format character '%c'", typ)
		}
		if err != nil {
			return "", err
		}
		if err := r.charge(b.Len() + len(out)); err != nil {
			return "", err
		}
		b.WriteString(out)
	}
	if named == nil && next < len(positional) {
		return "", errors.New("not all arguments converted during string formatting")
	}
	return b.String(), nil
}
