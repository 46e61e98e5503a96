package toolcall

import (
	"encoding/json"
	"testing"
)

// TestXMLJSONValueHoldingEndTag: a parameter written as JSON (an object,
// an array) may hold the layout's end tag inside one of its strings, as
// its grammar lets it; Parse reads the value as JSON and does not end it
// at that tag. Before, the value was cut there and the call did not
// parse (a 500 on every API).
func TestXMLJSONValueHoldingEndTag(t *testing.T) {
	tool := json.RawMessage(`{"type":"function","function":{"name":"save","parameters":{"type":"object","properties":{"doc":{"type":"object","properties":{"s":{"type":"string"}}},"tags":{"type":"array","items":{"type":"string"}},"note":{"type":"string"}},"required":["doc","tags","note"]}}}`)
	tools, err := ParseTools([]json.RawMessage{tool})
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range []xmlLayout{qwen3CoderLayout, seedLayout, glmLayout, minimaxLayout} {
		t.Run(layout.name, func(t *testing.T) {
			x := xmlCalls{xmlLayout: layout}
			doc := `{"s":"a ` + layout.endTag + ` b"}`
			tags := `["x` + layout.endTag + `","y"]`
			arg := func(k, v string) string { return layout.paramOpen + k + layout.keyEnd + v + layout.valueEnd }
			text := layout.blockOpen + layout.callOpen + "save" + layout.nameEnd +
				arg("doc", doc) + arg("tags", tags) + arg("note", "plain") + layout.callClose + layout.blockClose
			if err := acceptsCalls(t, x, tools, true, text); err != nil {
				t.Fatalf("the grammar refuses %q: %v", text, err)
			}
			_, calls, err := Bind(x, tools).Parse(text)
			if err != nil || len(calls) != 1 {
				t.Fatalf("Parse(%q) = %v, %v", text, calls, err)
			}
			if want := `{"doc":` + doc + `,"tags":` + tags + `,"note":"plain"}`; string(calls[0].Arguments) != want {
				t.Errorf("arguments %s, want %s", calls[0].Arguments, want)
			}
		})
	}
}
