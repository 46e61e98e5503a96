package toolcall

import (
	"encoding/json"
	"testing"
)

// TestXMLParameterNamesHoldingTags: a schema's property names may hold
// what ends a name in the layout (">" in <parameter=...>, a quote in
// MiniMax's name="...", </arg_key> in GLM's), be empty or have spaces
// around them. The grammar writes them as they are; Parse reads each by
// the bound tool's names. Before, the name was cut at the first stop (the
// rest of it read as the value's text) or refused (an empty name: a 500).
func TestXMLParameterNamesHoldingTags(t *testing.T) {
	names := []string{"a", "a>b", `q"x`, "", " sp ", "k</arg_key>v"}
	props, want := "", ""
	for i, n := range names {
		k, _ := json.Marshal(n)
		if i > 0 {
			props, want = props+",", want+","
		}
		props += string(k) + `:{"type":"integer"}`
		want += string(k) + ":" + string(rune('1'+i))
	}
	tool := json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{` + props + `}}}}`)
	tools, err := ParseTools([]json.RawMessage{tool})
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range []xmlLayout{qwen3CoderLayout, seedLayout, glmLayout, minimaxLayout} {
		t.Run(layout.name, func(t *testing.T) {
			x := xmlCalls{xmlLayout: layout}
			text := layout.blockOpen + layout.callOpen + "f" + layout.nameEnd
			for i, n := range names {
				text += layout.paramOpen + n + layout.keyEnd + string(rune('1'+i)) + layout.valueEnd
			}
			text += layout.callClose + layout.blockClose
			if err := acceptsCalls(t, x, tools, false, text); err != nil {
				t.Fatalf("the grammar refuses %q: %v", text, err)
			}
			_, calls, err := Bind(x, tools).Parse(text)
			if err != nil || len(calls) != 1 || string(calls[0].Arguments) != "{"+want+"}" {
				t.Errorf("Parse(%q) = %v, %v; want arguments {%s}", text, calls, err, want)
			}
		})
	}
}
