package grammar

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestJSONSchemaLanguages(t *testing.T) {
	tests := []struct {
		name, schema string
		yes, no      []string
	}{
		{"any", `{}`, []string{`1`, `"x"`, `{"a":[1,{"b":null}]}`, `[]`, `true`}, []string{``, `{"a"}`, `[1,]`, `{ }`}},
		{"object props", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"],"additionalProperties":false}`,
			[]string{`{"b":"x"}`, `{"a":1,"b":""}`}, []string{`{}`, `{"a":1}`, `{"b":"x","a":1}`, `{"b":"x","c":1}`, `{"a":1.5,"b":"x"}`}},
		{"additional", `{"properties":{"a":{"type":"null"}},"additionalProperties":{"type":"boolean"}}`,
			[]string{`{}`, `{"a":null}`, `{"x":true}`, `{"a":null,"x":false,"y":true}`, `"str"`}, []string{`{"a":true}`, `{"x":1}`}},
		{"pattern props", `{"type":"object","patternProperties":{"^x":{"type":"integer"}},"additionalProperties":{"type":"string"}}`,
			[]string{`{"xa":1,"b":"s"}`}, []string{`{"xa":"s"}`, `{"b":1}`}},
		{"array", `{"type":"array","items":{"type":"number","minimum":0,"exclusiveMaximum":10},"minItems":1,"maxItems":3}`,
			[]string{`[0]`, `[1.5,2,9.99]`}, []string{`[]`, `[10]`, `[-1]`, `[1,2,3,4]`}},
		{"tuple", `{"type":"array","prefixItems":[{"const":"a"},{"type":"integer"}],"items":false}`,
			[]string{`[]`, `["a"]`, `["a",3]`}, []string{`["a",3,4]`, `["b"]`}},
		{"draft4 tuple", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"array","items":[{"type":"string"}],"additionalItems":{"type":"integer"}}`,
			[]string{`["a",1,2]`}, []string{`["a","b"]`}},
		{"string", `{"type":"string","minLength":2,"maxLength":3,"pattern":"^[a-z]"}`,
			[]string{`"ab"`, `"a\"c"`, `"a\u00e9"`}, []string{`"a"`, `"abcd"`, `"Ab"`, `"a\u0041\u0041\u0041"`}},
		{"format", `{"type":"string","format":"date-time"}`, []string{`"2024-02-29T12:00:00Z"`, `"2023-12-31T23:59:59.5+01:00"`},
			[]string{`"2023-02-29T12:00:00Z"`, `"2024-01-01"`, `"not a date"`}},
		// hostname's length limit is a lookahead to the end: (?=.{1,253}$).
		{"hostname", `{"type":"string","format":"hostname"}`, []string{`"a"`, `"x-1.example.com"`, `"` + strings.Repeat("a.", 126) + `a"`},
			[]string{`""`, `"-a"`, `"a..b"`, `"a_b"`, `"` + strings.Repeat("a.", 127) + `a"`}},
		{"enum", `{"enum":["a",1,null,{"k":[1]}]}`, []string{`"a"`, `1`, `1.0`, `null`, `{"k":[1]}`}, []string{`"b"`, `2`, `{}`}},
		{"enum and type", `{"type":"string","enum":["a",1]}`, []string{`"a"`}, []string{`1`}},
		// String values are kept when their spelling is in the string
		// constraints' language (escapes included), dropped when not.
		{"enum and string limits", `{"type":"string","minLength":2,"pattern":"^[a-z]","enum":["ab","a","Ab","a\"","zz\u00e9",3]}`,
			[]string{`"ab"`, `"a\""`, `"zzé"`}, []string{`"a"`, `"Ab"`, `3`}},
		// Two enums intersect: numbers by value, strings by text, objects
		// and arrays by JSON equality, in the first enum's order.
		{"enums intersected", `{"allOf":[{"enum":[1,"1",2.50,null,true,{"a":1,"b":[2]},[1],"x"]},{"enum":[2.5,"x",1.0,{"b":[2],"a":1},false,[1,2]]}]}`,
			[]string{`1`, `2.5`, `"x"`, `{"a":1,"b":[2]}`}, []string{`"1"`, `null`, `true`, `false`, `[1]`, `[1,2]`}},
		{"anyOf", `{"anyOf":[{"type":"integer","minimum":5},{"type":"string","maxLength":1}]}`, []string{`5`, `"x"`}, []string{`4`, `"xy"`}},
		{"oneOf disjoint", `{"oneOf":[{"type":"integer"},{"type":"string"}]}`, []string{`5`, `"x"`}, []string{`null`}},
		{"allOf", `{"allOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"a":{"minimum":3},"b":{"type":"string"}},"required":["a"]}],"type":"object"}`,
			[]string{`{"a":3}`, `{"a":4,"b":"x"}`}, []string{`{"a":2}`, `{"b":"x"}`, `{"a":"x"}`}},
		{"ref recursion", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/node"}},"additionalProperties":false}},"$ref":"#/$defs/node"}`,
			[]string{`{}`, `{"v":1,"next":{"next":{"v":2}}}`}, []string{`{"next":1}`}},
		{"definitions draft 7", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"properties":{"x":{"$ref":"#/definitions/s","type":"integer"}}}`,
			[]string{`{"x":"y"}`}, []string{`{"x":1}`}},
		{"nullable", `{"type":"string","nullable":true}`, []string{`"x"`, `null`}, []string{`1`}},
		{"not", `{"type":"string","not":{"enum":["a","b"]}}`, []string{`"c"`, `"ab"`}, []string{`"a"`, `"b"`}},
		{"min max props", `{"type":"object","minProperties":1,"maxProperties":2}`, []string{`{"a":1}`, `{"a":1,"b":2}`}, []string{`{}`, `{"a":1,"b":2,"c":3}`}},
		{"property names", `{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`, []string{`{"ab":1}`}, []string{`{"aB":1}`}},
		{"integer bounds", `{"type":"integer","minimum":-3,"maximum":12}`, []string{`-3`, `0`, `12`}, []string{`13`, `-4`, `1.5`, `1e1`}},
		{"oneOf overlapping", `{"oneOf":[{"required":["a"]},{"required":["b"]}]}`,
			[]string{`{"a":1}`, `{"b":1,"c":2}`}, []string{`{"a":1,"b":2}`, `{}`, `"str"`, `3`}},
		{"oneOf overlapping types", `{"oneOf":[{"type":"string","pattern":"^[0-9a-f]{4}$"},{"type":"string"}]}`,
			[]string{`"xyz"`, `"abcg"`}, []string{`"abcd"`, `1`}},
		{"not required", `{"not":{"required":["a"]}}`, []string{`{}`, `{"b":1}`}, []string{`{"a":1}`, `"x"`, `null`}},
		{"not pattern", `{"not":{"pattern":"^a"}}`, []string{`"b"`}, []string{`"a"`, `5`, `{}`}},
		{"escaped key", `{"properties":{"a/b":{"type":"integer"}},"additionalProperties":{"type":"string"}}`, []string{`{"a/b":1}`, `{"c":"x"}`}, []string{`{"a\/b":"x"}`}},
	}
	for _, tc := range tests {
		g, err := CompileJSONSchema([]byte(tc.schema), JSONOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, s := range tc.yes {
			if !matches(g, s) {
				t.Errorf("%s: %s rejected", tc.name, s)
			}
		}
		for _, s := range tc.no {
			if matches(g, s) {
				t.Errorf("%s: %s accepted", tc.name, s)
			}
		}
	}
}

func TestJSONSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ schema, keyword string }{
		{`{"type":"array","uniqueItems":true}`, "uniqueItems"},
		{`{"if":{"type":"string"},"then":{"minLength":1}}`, "if"},
		{`{"oneOf":[{"minLength":2},{"maxLength":5}]}`, "oneOf"},
		{`{"dependentRequired":{"a":["b"]}}`, "dependentRequired"},
		{`{"type":"integer","multipleOf":3}`, "multipleOf"},
		{`{"$ref":"http://example.com/x.json"}`, "$ref"},
		{`{"type":"string","format":"regex"}`, "format"},
		{`{"type":"string","pattern":"(a)\\1"}`, "pattern"},
	} {
		_, err := CompileJSONSchema([]byte(tc.schema), JSONOptions{})
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Keyword != tc.keyword {
			t.Errorf("%s: error %v, want unsupported %s", tc.schema, err, tc.keyword)
		}
	}
	for _, s := range []string{`{`, `[]`, `{"type":"nope"}`, `{"$ref":"#/definitions/missing"}`, `{"minLength":-1}`} {
		if _, err := CompileJSONSchema([]byte(s), JSONOptions{}); err == nil {
			t.Errorf("%s: no error", s)
		}
	}
	// A malformed pattern makes the schema invalid, naming the pattern;
	// it is not an unsupported keyword (it was reported as one).
	for _, s := range []string{`{"type":"string","pattern":"a(b"}`, `{"type":"string","pattern":"[z-a]"}`, `{"not":{"pattern":"*x"}}`} {
		_, err := CompileJSONSchema([]byte(s), JSONOptions{})
		var ue *UnsupportedError
		if !errors.Is(err, ErrSchema) || errors.As(err, &ue) || !strings.Contains(err.Error(), "not a valid regular expression") {
			t.Errorf("%s: error %v, want an invalid schema naming the pattern", s, err)
		}
	}
	if _, err := CompileJSONSchema([]byte(`{"type":"string","format":"color"}`), JSONOptions{StrictFormats: true}); err == nil {
		t.Error("unknown format accepted with StrictFormats")
	}
}

// TestJSONSchemaOneOfWork: a oneOf's pairwise overlap check, which costs
// the square of its alternatives, runs once per oneOf and never for one
// that has more alternatives than a schema may expand to. A hostile schema
// of a few thousand alternatives held the compiler for minutes before it
// was refused, and one oneOf used from many properties paid it each time.
func TestJSONSchemaOneOfWork(t *testing.T) {
	alts := func(n int, f string) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(f, i)
		}
		return strings.Join(s, ",")
	}
	for _, schema := range []string{
		`{"oneOf":[` + alts(maxSchemaAlternatives+1, `{"const":%d}`) + `]}`,
		`{"oneOf":[` + alts(maxSchemaAlternatives+1, `{"type":"array","minItems":%d}`) + `]}`, // overlapping
		`{"anyOf":[` + alts(maxSchemaAlternatives+1, `{"const":%d}`) + `]}`,
	} {
		_, err := CompileJSONSchema([]byte(schema), JSONOptions{})
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Keyword != schema[2:7] || !strings.Contains(ue.Detail, fmt.Sprintf("more than %d alternatives", maxSchemaAlternatives)) {
			t.Errorf("%.40s...: error %v, want %s with too many alternatives", schema, err, schema[2:7])
		}
	}
	for _, tc := range []struct {
		oneOf string
		want  int // alternatives the memo holds
	}{
		{`[{"const":1},{"const":2},{"const":3}]`, 3},
		{`[{"type":"string"},{"enum":["a",1]}]`, 2}, // overlapping: rewritten
	} {
		schema := `{"$defs":{"o":{"oneOf":` + tc.oneOf + `}},"type":"object",` +
			`"properties":{"a":{"$ref":"#/$defs/o"},"b":{"$ref":"#/$defs/o"},"c":{"$ref":"#/$defs/o"}}}`
		root, err := parseJSON([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		c := newSchemaCompiler(root, JSONOptions{})
		if _, err := c.compileRoot(); err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		if len(c.oneOfMemo) != 1 || len(c.oneOfMemo[root.get("$defs").get("o")]) != tc.want {
			t.Errorf("%s: oneOf decided for %d oneOfs, want once for the one", tc.oneOf, len(c.oneOfMemo))
		}
	}
}

// TestJSONSchemaRefChainBounded: from draft 2019 a $ref joins its siblings
// instead of replacing them, so each link of a $ref chain grows the
// conjunction that expanding copies, and a chain of n links costs n²/2
// copies (20,000 links, a 600 kB request, held the compiler for a minute).
// Past a bound it is refused as too large; the same chain where $ref
// replaces (draft 7) stays linear and compiles.
func TestJSONSchemaRefChainBounded(t *testing.T) {
	chain := func(draft string, n int) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, `{"$schema":%q,"$ref":"#/definitions/d0","definitions":{`, draft)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `"d%d":{"$ref":"#/definitions/d%d"},`, i, i+1)
		}
		fmt.Fprintf(&b, `"d%d":{"type":"string"}}}`, n)
		return []byte(b.String())
	}
	for _, tc := range []struct {
		draft   string
		n       int
		tooLong bool
	}{
		{"https://json-schema.org/draft/2020-12/schema", 100, false},
		{"https://json-schema.org/draft/2020-12/schema", 3000, true},
		{"http://json-schema.org/draft-07/schema#", 3000, false},
	} {
		_, err := CompileJSONSchema(chain(tc.draft, tc.n), JSONOptions{})
		if tooLong := errors.Is(err, ErrTooLarge); tooLong != tc.tooLong || (err != nil && !tooLong) {
			t.Errorf("%s, %d links: error %v, want too large %v", tc.draft, tc.n, err, tc.tooLong)
		}
	}
}

// BenchmarkLargeEnum compiles a schema whose string enum has 20,000
// values (a catalogue's ids, a list of cities), alone and intersected
// with itself: 9 s and 17 s before values were matched against the
// string term's rows and enums intersected by spelling, 0.4–0.5 s after
// (2-core Zen 5, loaded).
func BenchmarkLargeEnum(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"enum":[`)
	for i := range 20000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"value number %d"`, i)
	}
	sb.WriteString(`]}`)
	one := sb.String()
	for name, schema := range map[string]string{"one": one, "allOf": `{"allOf":[` + one + `,` + one + `]}`} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := CompileJSONSchema([]byte(schema), JSONOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
