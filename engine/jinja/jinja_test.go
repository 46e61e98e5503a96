package jinja

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestCases renders the small templates of testdata/cases.json, each
// exercising one part of the language, and compares with what jinja2
// (configured as Hugging Face does) rendered for them: testdata/
// gen_cases.py made the file.
func TestCases(t *testing.T) {
	raw, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	root := v.(*Dict)
	data, _ := root.Get("data")
	vars := map[string]any{}
	for _, k := range data.(*Dict).keys {
		vars[k.(string)] = data.(*Dict).vals[k]
	}
	cases, _ := root.Get("cases")
	n := 0
	for _, c := range cases.(*List).Items {
		c := c.(*Dict)
		name, _ := c.Get("name")
		src, _ := c.Get("src")
		t.Run(name.(string), func(t *testing.T) {
			n++
			tmpl, err := Parse(src.(string), &Options{Now: func() time.Time { return referenceNow }})
			if err != nil {
				t.Fatalf("parse %q: %v", src, err)
			}
			got, err := tmpl.Render(context.Background(), vars)
			if want, ok := c.Get("out"); ok {
				if err != nil {
					t.Fatalf("render %q: %v", src, err)
				}
				if got != want {
					t.Fatalf("render %q:\n got %q\nwant %q", src, got, want)
				}
				return
			}
			want, _ := c.Get("raises")
			var re *RaiseError
			if !errors.As(err, &re) || re.Message != want {
				t.Fatalf("render %q: got %q, %v; want raise_exception(%q)", src, got, err, want)
			}
		})
	}
	if n < 50 {
		t.Fatalf("only %d cases in testdata/cases.json", n)
	}
}

// TestErrors checks that bad templates and bad operations fail with a
// message naming the problem.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		vars      map[string]any
		want      string // substring of the error
	}{
		{"unclosed tag", "{{ x", nil, "unclosed tag"},
		{"unclosed block", "{% if x %}a", nil, "or 'endif'"},
		{"unclosed comment", "{# x", nil, "unclosed comment"},
		{"stray end", "{% endfor %}", nil, "unexpected 'endfor'"},
		{"unknown tag", "{% frobnicate %}", nil, "unknown tag 'frobnicate'"},
		{"include", "{% include 'x.jinja' %}", nil, "unsupported template feature: the 'include' tag"},
		{"extends", "{% extends 'base' %}", nil, "unsupported template feature: the 'extends' tag"},
		{"unknown filter", "{{ 1 | frob }}", nil, "unsupported template feature: the 'frob' filter"},
		{"unknown test", "{{ 1 is frob }}", nil, "unsupported template feature: the 'frob' test"},
		{"string method", "{{ 'a'.encode() }}", nil, "'str object' has no attribute 'encode'"},
		{"star args", "{{ f(*xs) }}", nil, "unsupported template feature: *args"},
		{"bad char", "{{ a $ b }}", nil, "unexpected character '$'"},
		{"unterminated string", "{{ 'abc }}", nil, "unterminated string"},
		{"undefined attribute", "{{ x.y }}", nil, "'x' is undefined"},
		{"undefined call", "{{ nofunc() }}", nil, "'nofunc' is undefined"},
		{"add str int", "{{ 'a' + 1 }}", nil, "unsupported operand type(s) for +: 'str' and 'int'"},
		{"divide by zero", "{{ 1 / 0 }}", nil, "division by zero"},
		{"not iterable", "{% for x in 5 %}{% endfor %}", nil, "'int' object is not iterable"},
		{"bad unpack", "{% for a, b in [1] %}{% endfor %}", nil, "not iterable"},
		{"ns assign", "{% set x = 1 %}{% set x.y = 2 %}", nil, "non-namespace object 'x'"},
		{"overflow", "{{ 9223372036854775807 + 1 }}", nil, "integer overflow"},
		{"tojson undefined", "{{ x | tojson }}", nil, "Object of type Undefined is not JSON serializable"},
		{"items of list", "{{ [1] | items }}", nil, "Can only get item pairs from a mapping"},
		{"line number", "a\nb\n{{ 1 + 'x' }}", nil, "line 3:"},
		{"unhashable key", "{{ {[1]: 2} }}", nil, "unhashable type: 'list'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse(tc.src, nil)
			if err == nil {
				_, err = tmpl.Render(context.Background(), tc.vars)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%q: got error %v, want one containing %q", tc.src, err, tc.want)
			}
		})
	}
}

// TestLimits checks that hostile templates stop at a limit with ErrLimit
// instead of running away.
func TestLimits(t *testing.T) {
	lim := Limits{MaxOutput: 1 << 16, MaxSteps: 100_000, MaxDepth: 50, MaxAlloc: 1 << 22, MaxTokens: 10_000}
	for _, tc := range []struct{ name, src string }{
		{"huge range", "{% for i in range(1000000000) %}{% endfor %}"},
		{"nested loops", "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}"},
		{"recursive macro", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"},
		{"string repeat", "{{ 'x' * 100000000000 }}"},
		{"list repeat", "{{ [1] * 100000000000 }}"},
		{"doubling", "{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"},
		{"output", "{% for i in range(100000) %}xxxxxxxxxx{% endfor %}"},
		{"alloc", "{% set ns = namespace(l=[]) %}{% for i in range(90000) %}{% set _ = ns.l.append('x' * 60000) %}{% endfor %}"},
		{"center", "{{ 'x'|center(100000000) }}"},
		{"indent", "{{ 'x\nx'|indent(100000000) }}"},
		{"deep parens", "{{ " + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + " }}"},
		{"deep lists", "{{ " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + " }}"},
		{"deep ifs", strings.Repeat("{% if 1 %}", 200) + strings.Repeat("{% endif %}", 200)},
		{"many tokens", strings.Repeat("{{ 1 }}", 5000)},
		{"string loop", "{% for c in 'x' * 60000 %}{% endfor %}"},
		{"string list", "{{ ('x' * 60000)|list|length }}"},
		{"string map", "{{ ('x' * 60000)|map('upper')|list|length }}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			tmpl, err := Parse(tc.src, &Options{Limits: lim})
			if err == nil {
				_, err = tmpl.Render(context.Background(), nil)
			}
			if err == nil {
				t.Fatalf("%q: rendered without hitting a limit", tc.src)
			}
			if !errors.Is(err, ErrLimit) && !strings.Contains(err.Error(), "nested more than") && !strings.Contains(err.Error(), "template too large") {
				t.Fatalf("%q: got %v, want a limit error", tc.src, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("%q: took %v to stop", tc.src, d)
			}
		})
	}
}

// TestStringCharactersCharged: a string's characters, each made a string
// of its own by a loop or a filter, are charged before they are made: a
// template (a model file's) that iterates a long string stops at the item
// limit instead of allocating tens of bytes per character first.
func TestStringCharactersCharged(t *testing.T) {
	for _, src := range []string{
		"{% for c in 'x' * 4000000 %}{% endfor %}",
		"{{ ('x' * 4000000)|list|length }}",
		"{{ ('é' * 2000000)|join(',') }}",
	} {
		tmpl, err := Parse(src, &Options{Limits: Limits{MaxOutput: 16 << 20, MaxSteps: 5_000_000, MaxAlloc: 1 << 30}})
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = tmpl.Render(context.Background(), nil)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrLimit) {
			t.Errorf("%q: %v, want a limit error", src, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
			t.Errorf("%q: allocated %d MiB before stopping", src, n>>20)
		}
	}
}

// TestCancel checks that a render stops when its context ends.
func TestCancel(t *testing.T) {
	tmpl, err := Parse("{% for i in range(1000000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := tmpl.Render(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
}

// TestValueOf checks the conversion of Go values and that a *Dict and
// JSON keep their key order while a Go map is sorted.
func TestValueOf(t *testing.T) {
	d := NewDict()
	d.Set("z", 1)
	d.Set("a", []string{"x"})
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"dict order", d, `{"z": 1, "a": ["x"]}`},
		{"go map sorted", map[string]any{"b": 1, "a": uint8(2)}, `{"a": 2, "b": 1}`},
		{"raw json order", []byte(`{"q": 1.0, "b": [true, null]}`), `{"q": 1.0, "b": [true, null]}`},
		{"struct slice", []struct{ A int }{{1}}, `["{1}"]`},
		{"pointer", new(int), `0`},
		{"float32", float32(0.5), `0.5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.v
			if b, ok := v.([]byte); ok {
				var err error
				if v, err = ParseJSON(b); err != nil {
					t.Fatal(err)
				}
			}
			tmpl, err := Parse("{{ v | tojson }}", nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(context.Background(), map[string]any{"v": v})
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestConcurrentRender renders one template from several goroutines (run
// with -race).
func TestConcurrentRender(t *testing.T) {
	tmpl, err := Parse("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ m }}{% endfor %}{{ ns.n }}", nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := NewList("a", "b", "c")
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			out, err := tmpl.Render(context.Background(), map[string]any{"messages": msgs})
			if err == nil && out != "abc3" {
				err = errors.New("got " + out)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzTemplate parses and renders arbitrary sources with small limits: it
// must never panic, hang or exceed the limits.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		"{{ x }}", "{% for a in b %}{{ loop.index }}{% endfor %}", "{%- if a -%}b{%- elif c %}d{% else %}e{% endif %}",
		"{% macro m(a, b=1) %}{{ a ~ b }}{% endmacro %}{{ m(1) }}", "{{ 'a' ~ [1, 2]|tojson(indent=2) }}",
		"{% set ns = namespace(x=1) %}{% set ns.x = ns.x + 1 %}{{ ns.x }}", "{# c #}{% raw %}{{{% endraw %}",
		"{{ messages[0]['content'].strip().split('\\n')[-1:] }}", "{{ '%s' % 1 }}{{ '{}'.format(2) }}",
		"{% for k, v in d|dictsort %}{{ k }}{% endfor %}{{ x is defined and x is not none }}",
	} {
		f.Add(s)
	}
	lim := Limits{MaxOutput: 1 << 14, MaxSteps: 20_000, MaxDepth: 40, MaxAlloc: 1 << 20, MaxTokens: 5_000}
	vars := map[string]any{
		"messages": NewList(map[string]any{"role": "user", "content": " hi\nthere "}),
		"d":        map[string]any{"a": 1, "b": "x"},
		"x":        nil,
	}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src, &Options{Limits: lim})
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, err := tmpl.Render(ctx, vars)
		if err == nil && len(out) > lim.MaxOutput {
			t.Fatalf("output of %d bytes exceeds the limit", len(out))
		}
		var e *Error
		if errors.As(err, &e) && strings.HasPrefix(e.Msg, "internal error") {
			t.Fatalf("%q: %v", src, err)
		}
	})
}

// FuzzParseJSON checks that ParseJSON never panics and that what it
// accepts writes back (through tojson) as JSON that encoding/json accepts.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x", null, true]}`, `[]`, `"\u00e9"`, `1e400`, `{"a":{"b":{}}}`, `[1,`} {
		f.Add([]byte(s))
	}
	tmpl, err := Parse("{{ v | tojson }}", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseJSON(data)
		if err != nil {
			return
		}
		out, err := tmpl.Render(context.Background(), map[string]any{"v": v})
		if err != nil {
			return // NaN/Infinity have no JSON form; Python writes them anyway
		}
		if !json.Valid([]byte(out)) && !strings.Contains(out, "Infinity") && !strings.Contains(out, "NaN") {
			t.Fatalf("%q wrote back as invalid JSON %q", data, out)
		}
	})
}

// TestSelfContainingValues checks that lists and dicts that contain
// themselves (possible through append) neither hang nor crash repr,
// comparison, tojson or membership.
func TestSelfContainingValues(t *testing.T) {
	for _, src := range []string{
		"{% set l = [] %}{% set _ = l.append(l) %}{% set _ = l.append(l) %}{{ l }}",
		"{% set l = [] %}{% set _ = l.append(l) %}{{ l == l }}{{ l in l }}",
		"{% set l = [] %}{% set _ = l.append(l) %}{{ l < l }}",
		"{% set l = [] %}{% set _ = l.append(l) %}{% set _ = l.append(l) %}{{ l | tojson }}",
		"{% set d = {} %}{% set _ = d.update({'a': d}) %}{{ d == d }}{{ d }}",
		"{% set l = [] %}{% set _ = l.append(l) %}{{ [l, l] | unique | list | length }}",
	} {
		tmpl, err := Parse(src, &Options{Limits: Limits{MaxOutput: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = tmpl.Render(context.Background(), nil)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%q: took %v (err %v)", src, d, err)
		}
	}
}
