package jinja

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// maxJSONDepth bounds the nesting of JSON read by ParseJSON.
const maxJSONDepth = 512

// ParseJSON decodes JSON into template values, keeping the order of
// object keys (as Python's json.loads does), so that tojson writes them
// back in the order they came. Integers stay ints, other numbers floats.
func ParseJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeJSON(d, 0)
	if err != nil {
		return nil, fmt.Errorf("parse json: %w", err)
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("parse json: data after the value")
	}
	return v, nil
}

func decodeJSON(d *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			out := NewDict()
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				key, ok := k.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", k)
				}
				val, err := decodeJSON(d, depth+1)
				if err != nil {
					return nil, err
				}
				out.set(key, val)
			}
			_, err := d.Token()
			return out, err
		case '[':
			out := &List{}
			for d.More() {
				val, err := decodeJSON(d, depth+1)
				if err != nil {
					return nil, err
				}
				out.Items = append(out.Items, val)
			}
			_, err := d.Token()
			return out, err
		}
		return nil, fmt.Errorf("unexpected %v", v)
	case json.Number:
		return numberValue(string(v)), nil
	case string, bool, nil:
		return v, nil
	}
	return nil, fmt.Errorf("unexpected token %v", t)
}

// jsonOptions are the arguments of Hugging Face's tojson filter, which
// is Python's json.dumps with ensure_ascii=False by default.
type jsonOptions struct {
	ensureASCII bool
	indent      string
	hasIndent   bool
	itemSep     string
	keySep      string
	sortKeys    bool
}

// toJSON is json.dumps(v, ...) with opts. It fails on values JSON cannot
// hold (undefined, functions), as Python does.
func (r *renderer) toJSON(v any, o jsonOptions) (string, error) {
	var b strings.Builder
	if err := r.writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (r *renderer) writeJSON(b *strings.Builder, v any, o jsonOptions, depth int) error {
	if depth > maxJSONDepth {
		return errors.New("tojson: value nested too deep (circular reference?)")
	}
	if b.Len() > r.lim.MaxOutput {
		return fmt.Errorf("%w: a value of more than %d bytes", ErrLimit, r.lim.MaxOutput)
	}
	newline := func(d int) {
		if o.hasIndent {
			b.WriteByte('\n')
			for range d {
				b.WriteString(o.indent)
			}
		}
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(jsonFloat(x))
	case string:
		writeJSONString(b, x, o.ensureASCII)
	case markup:
		writeJSONString(b, string(x), o.ensureASCII)
	case *List:
		if len(x.Items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range x.Items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(depth + 1)
			if err := r.writeJSON(b, it, o, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte(']')
	case *Dict:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := x.keys
		if o.sortKeys {
			keys = append([]any(nil), keys...)
			var sortErr error
			sort.SliceStable(keys, func(i, j int) bool {
				c, err := compare(keys[i], keys[j])
				if err != nil {
					sortErr = err
				}
				return c < 0
			})
			if sortErr != nil {
				return sortErr
			}
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(depth + 1)
			var ks string
			switch kk := k.(type) {
			case string:
				ks = kk
			case nil:
				ks = "null"
			case int64:
				ks = strconv.FormatInt(kk, 10)
			case float64:
				ks = jsonFloat(kk)
			case bool:
				ks = strconv.FormatBool(kk)
			default:
				return fmt.Errorf("keys must be str, int, float, bool or None, not %s", typeName(k))
			}
			writeJSONString(b, ks, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := r.writeJSON(b, x.vals[k], o, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte('}')
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

// jsonFloat is how Python's json writes a float.
func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return formatFloat(f)
}

// writeJSONString writes s as Python's json does: quotes, backslashes
// and control characters escaped; other characters as they are, or as
// \uXXXX (with surrogate pairs) when ensureASCII is set.
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case c < 0x20:
				fmt.Fprintf(b, `\u%04x`, c)
			case !ensureASCII || c < 0x80:
				b.WriteRune(c)
			case c < 0x10000:
				fmt.Fprintf(b, `\u%04x`, c)
			default:
				c -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(c>>10), 0xdc00+(c&0x3ff))
			}
		}
	}
	b.WriteByte('"')
}
