package grammar

import (
	"errors"
	"testing"
)

// FuzzJSONSchema compiles arbitrary schemas: never a panic, only clear
// errors; and a compiled grammar must accept what OrderJSON writes of a
// document it accepts.
func FuzzJSONSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"integer","minimum":3}},"required":["a"]}`,
		`{"anyOf":[{"type":"string","pattern":"^x+$"},{"enum":[1,null]}]}`,
		`{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}},"$ref":"#/$defs/n"}`,
		`{"type":"string","format":"date-time","maxLength":40}`,
		`{"allOf":[{"properties":{"x":{"type":"number"}}},{"not":{"required":["y"]}}],"additionalProperties":{"type":"boolean"}}`,
	} {
		f.Add(s, `{"a":5}`)
	}
	f.Fuzz(func(t *testing.T, schema, doc string) {
		if len(schema) > 2000 || len(doc) > 500 {
			return
		}
		g, err := CompileJSONSchema([]byte(schema), JSONOptions{})
		if err != nil {
			var ue *UnsupportedError
			if !errors.As(err, &ue) && !errors.Is(err, ErrSchema) && !errors.Is(err, ErrEmpty) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%s: unclassified error %v", schema, err)
			}
			return
		}
		if out, err := OrderJSON([]byte(schema), []byte(doc)); err == nil {
			matches(g, string(out))
		}
	})
}
