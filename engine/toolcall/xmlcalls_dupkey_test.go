package toolcall

import (
	"encoding/json"
	"testing"
)

// TestXMLPropertyWrittenTwice: a schema whose properties name one key
// twice (JSON a decoder reads, the last value winning) gives one
// parameter: the grammar asks for it once, by its last schema, and Parse
// reads the call. Before, the grammar made the model write the argument
// twice and Parse refused it ("given twice"): a 500 on every request.
func TestXMLPropertyWrittenTwice(t *testing.T) {
	def := json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"u":{"type":"string"},"n":{"type":"string"},"u":{"type":"integer"}},"required":["u"]}}}`)
	tools, err := ParseTools([]json.RawMessage{def})
	if err != nil {
		t.Fatal(err)
	}
	x := xmlCalls{xmlLayout: qwen3CoderLayout}
	arg := func(k, v string) string { return "<parameter=" + k + ">\n" + v + "\n</parameter>\n" }
	call := func(args string) string { return "<tool_call>\n<function=f>\n" + args + "</function>\n</tool_call>" }
	for _, c := range []struct {
		name, text string
		accepted   bool
	}{
		{"once, an integer", call(arg("u", "7")), true},
		{"once, with the other", call(arg("u", "7") + arg("n", "x")), true},
		{"twice", call(arg("u", "7") + arg("u", "8")), false},
		{"once, text", call(arg("u", "seven")), false},
	} {
		if got := acceptsCalls(t, x, tools, false, c.text) == nil; got != c.accepted {
			t.Errorf("%s: the grammar accepts %q: %v, want %v", c.name, c.text, got, c.accepted)
		}
	}
	_, calls, err := Bind(x, tools).Parse(call(arg("u", "7")))
	if err != nil || len(calls) != 1 || string(calls[0].Arguments) != `{"u":7}` {
		t.Errorf("Parse = %v, %v; want f {\"u\":7}", calls, err)
	}
}
