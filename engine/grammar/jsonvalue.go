package grammar

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrJSON is wrapped by errors for text that is not JSON.
var ErrJSON = errors.New("invalid JSON")

// maxJSONDepth bounds the nesting of a parsed document.
const maxJSONDepth = 512

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNum
	jStr
	jArr
	jObj
)

// jvalue is a parsed JSON value that keeps the order of object members
// (JSON Schema's properties are generated in the order they are written).
type jvalue struct {
	kind jkind
	b    bool
	s    string // string value, or a number's literal text
	arr  []*jvalue
	keys []string
	vals []*jvalue
}

// get returns the member key of an object (nil when absent or not an
// object; the last one when repeated, as most parsers do).
func (v *jvalue) get(key string) *jvalue {
	if v == nil || v.kind != jObj {
		return nil
	}
	for i := len(v.keys) - 1; i >= 0; i-- {
		if v.keys[i] == key {
			return v.vals[i]
		}
	}
	return nil
}

// has reports whether an object has member key.
func (v *jvalue) has(key string) bool { return v.get(key) != nil }

// parseJSON parses one JSON document.
func parseJSON(b []byte) (*jvalue, error) {
	p := &jsonParser{src: b}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, p.errorf("data after the value")
	}
	return v, nil
}

type jsonParser struct {
	src []byte
	pos int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrJSON, p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) space() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) lit(s string) bool {
	if strings.HasPrefix(string(p.src[p.pos:min(len(p.src), p.pos+len(s))]), s) {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *jsonParser) value(depth int) (*jvalue, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("nested too deeply")
	}
	if p.pos >= len(p.src) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		p.pos++
		v := &jvalue{kind: jObj}
		p.space()
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			return v, nil
		}
		for {
			p.space()
			if p.pos >= len(p.src) || p.src[p.pos] != '"' {
				return nil, p.errorf("expected a member name")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.pos >= len(p.src) || p.src[p.pos] != ':' {
				return nil, p.errorf("expected :")
			}
			p.pos++
			p.space()
			x, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.keys, v.vals = append(v.keys, k), append(v.vals, x)
			p.space()
			if p.pos < len(p.src) && p.src[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.src) && p.src[p.pos] == '}' {
				p.pos++
				return v, nil
			}
			return nil, p.errorf("expected , or }")
		}
	case c == '[':
		p.pos++
		v := &jvalue{kind: jArr}
		p.space()
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			return v, nil
		}
		for {
			p.space()
			x, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.arr = append(v.arr, x)
			p.space()
			if p.pos < len(p.src) && p.src[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.src) && p.src[p.pos] == ']' {
				p.pos++
				return v, nil
			}
			return nil, p.errorf("expected , or ]")
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &jvalue{kind: jStr, s: s}, nil
	case c == 't' && p.lit("true"):
		return &jvalue{kind: jBool, b: true}, nil
	case c == 'f' && p.lit("false"):
		return &jvalue{kind: jBool}, nil
	case c == 'n' && p.lit("null"):
		return &jvalue{kind: jNull}, nil
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		if c == '-' {
			p.pos++
		}
		digits := func() int {
			n := 0
			for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
				p.pos++
				n++
			}
			return n
		}
		intStart := p.pos
		if n := digits(); n == 0 || n > 1 && p.src[intStart] == '0' {
			return nil, p.errorf("bad number")
		}
		if p.pos < len(p.src) && p.src[p.pos] == '.' {
			p.pos++
			if digits() == 0 {
				return nil, p.errorf("bad number")
			}
		}
		if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
			p.pos++
			if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
				p.pos++
			}
			if digits() == 0 {
				return nil, p.errorf("bad number")
			}
		}
		return &jvalue{kind: jNum, s: string(p.src[start:p.pos])}, nil
	}
	return nil, p.errorf("unexpected %q", p.src[p.pos])
}

// str reads a string literal (at its opening quote).
func (p *jsonParser) str() (string, error) {
	p.pos++
	var sb strings.Builder
	for {
		if p.pos >= len(p.src) {
			return "", p.errorf("unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return sb.String(), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return "", p.errorf("unterminated escape")
			}
			e := p.src[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if p.pos+1 < len(p.src) && p.src[p.pos] == '\\' && p.src[p.pos+1] == 'u' {
						save := p.pos
						p.pos += 2
						if r2, err = p.hex4(); err != nil {
							return "", err
						}
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
						} else {
							p.pos = save
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				sb.WriteRune(r)
			default:
				return "", p.errorf("bad escape \\%c", e)
			}
		default:
			r, n := utf8.DecodeRune(p.src[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.errorf("invalid UTF-8")
			}
			sb.Write(p.src[p.pos : p.pos+n])
			p.pos += n
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	if p.pos+4 > len(p.src) {
		return 0, p.errorf("short \\u escape")
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.errorf("bad \\u escape")
	}
	p.pos += 4
	return rune(v), nil
}

// appendJSONString appends s as a compact JSON string literal: only the
// quote, the backslash and control characters escaped, as JSON encoders
// write them.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			dst = append(dst, '\\', '"')
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, fmt.Sprintf(`\u%04x`, c)...)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// appendCompact appends v as compact JSON (members in their order).
func appendCompact(dst []byte, v *jvalue) []byte {
	switch v.kind {
	case jNull:
		return append(dst, "null"...)
	case jBool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case jNum:
		return append(dst, v.s...)
	case jStr:
		return appendJSONString(dst, v.s)
	case jArr:
		dst = append(dst, '[')
		for i, x := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCompact(dst, x)
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	for i, k := range v.keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendCompact(dst, v.vals[i])
	}
	return append(dst, '}')
}

func newRat(s string) (*big.Rat, bool) { return new(big.Rat).SetString(s) }
