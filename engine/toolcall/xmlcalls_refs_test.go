package toolcall

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestXMLValueTypeThroughRefsAndAnyOf: whether a parameter is raw text or
// JSON is read through its "$ref" to the tool's definitions and through
// anyOf/oneOf, as Pydantic and Zod write schemas: Optional[int] (anyOf an
// integer and null) is JSON, held to its schema by the grammar and read
// as a number; a reference to an object is an object; a reference to a
// string enum takes the enum's words only. Before, a schema without a
// top-level type was raw text: any text was allowed and "5" came back as
// the string "5", an object as a string of JSON.
func TestXMLValueTypeThroughRefsAndAnyOf(t *testing.T) {
	const tool = `{"type":"function","function":{"name":"f","parameters":{"type":"object",` +
		`"properties":{"v":SCHEMA},"required":["v"],` +
		`"$defs":{"Point":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]},"Unit":{"type":"string","enum":["c","f"]},"Alias":{"$ref":"#/$defs/Point"},"Loop":{"$ref":"#/$defs/Loop"}}}}}`
	x := xmlCalls{xmlLayout: qwen3CoderLayout}
	for _, c := range []struct {
		name, schema, value string
		accepted            bool
		want                string // the arguments Parse reads
	}{
		{"Optional[int], a number", `{"anyOf":[{"type":"integer"},{"type":"null"}]}`, "5", true, `{"v":5}`},
		{"Optional[int], null", `{"anyOf":[{"type":"integer"},{"type":"null"}]}`, "null", true, `{"v":null}`},
		{"Optional[int], text", `{"anyOf":[{"type":"integer"},{"type":"null"}]}`, "five", false, ""},
		{"oneOf with a string stays text", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, "5", true, `{"v":"5"}`},
		{"a reference to an object", `{"$ref":"#/$defs/Point"}`, `{"x":1}`, true, `{"v":{"x":1}}`},
		{"a reference to a reference", `{"$ref":"#/$defs/Alias"}`, `{"x":2}`, true, `{"v":{"x":2}}`},
		{"a reference to an object, text", `{"$ref":"#/$defs/Point"}`, "here", false, ""},
		{"a reference to a string enum", `{"$ref":"#/$defs/Unit"}`, "c", true, `{"v":"c"}`},
		{"a reference to a string enum, another word", `{"$ref":"#/$defs/Unit"}`, "k", false, ""},
		{"anyOf of references", `{"anyOf":[{"$ref":"#/$defs/Point"},{"type":"null"}]}`, `{"x":3}`, true, `{"v":{"x":3}}`},
		{"a reference to itself stays text", `{"$ref":"#/$defs/Loop"}`, "x", true, `{"v":"x"}`},
	} {
		def := json.RawMessage(strings.Replace(tool, "SCHEMA", c.schema, 1))
		tools, err := ParseTools([]json.RawMessage{def})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		text := "<tool_call>\n<function=f>\n<parameter=v>\n" + c.value + "\n</parameter>\n</function>\n</tool_call>"
		if got := acceptsCalls(t, x, tools, false, text) == nil; got != c.accepted {
			t.Errorf("%s: the grammar accepts %q: %v, want %v", c.name, c.value, got, c.accepted)
		}
		if !c.accepted {
			continue
		}
		_, calls, err := Bind(x, tools).Parse(text)
		if err != nil || len(calls) != 1 || string(calls[0].Arguments) != c.want {
			t.Errorf("%s: Parse = %v, %v; want %s", c.name, calls, err, c.want)
		}
	}
}
