package toolcall

import (
	"encoding/json"
	"testing"
)

// TestXMLUntypedStringEnum: an enum or const of strings without a "type"
// (as Zod and hand-written schemas give them) holds a text value to its
// words, as a typed one does. Before, any text was allowed: a random
// model's value ran on until max_tokens, a real one could name a word
// outside the enum.
func TestXMLUntypedStringEnum(t *testing.T) {
	x := xmlCalls{xmlLayout: qwen3CoderLayout}
	for _, c := range []struct {
		name, schema, value string
		accepted            bool
	}{
		{"untyped enum, a word", `{"enum":["x","y"]}`, "y", true},
		{"untyped enum, another text", `{"enum":["x","y"]}`, "zzz", false},
		{"untyped const, the word", `{"const":"k"}`, "k", true},
		{"untyped const, another text", `{"const":"k"}`, "kk", false},
		{"typed enum, another text", `{"type":"string","enum":["x","y"]}`, "zzz", false},
		{"no enum, any text", `{}`, "zzz", true},
	} {
		def := json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"u":` + c.schema + `},"required":["u"]}}}`)
		tools, err := ParseTools([]json.RawMessage{def})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		text := "<tool_call>\n<function=f>\n<parameter=u>\n" + c.value + "\n</parameter>\n</function>\n</tool_call>"
		if got := acceptsCalls(t, x, tools, false, text) == nil; got != c.accepted {
			t.Errorf("%s: the grammar accepts %q: %v, want %v", c.name, c.value, got, c.accepted)
		}
	}
}
