package toolcall

import (
	"encoding/json"
	"testing"
)

// FuzzFormatsParse: every format's parser takes any text a model may
// write without panicking, and the calls it returns carry a name and
// arguments that are a JSON object (what every API hands the client).
func FuzzFormatsParse(f *testing.F) {
	for _, s := range []string{
		"Let me check.\n<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}\n</tool_call>",
		`<|python_tag|>{"name":"get_weather","parameters":{"city":"a;b"}}; {"name":"t","parameters":{}}`,
		`[TOOL_CALLS][{"name":"time_now","arguments":{}},{"name":"get_weather","arguments":"{\"city\":\"Lima\"}"}]`,
		`[TOOL_CALLS]get_weather[ARGS]{"city":"Lima"}[TOOL_CALLS]time_now[CALL_ID]a1b2c3d4e[ARGS]{}`,
		`{"tool_calls":[{"name":"get_weather","arguments":{"city":"Kyiv"}}]}`, `{"response":"hi"}`,
		"<tool_call>\n{\"name\":", `[TOOL_CALLS]x[ARGS]null`, `{"name":"x","parameters":[1]}`,
		"<tool_call>\n<function=forecast>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
		"<tool_call>forecast<arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>",
		"<minimax:tool_call>\n<invoke name=\"forecast\">\n<parameter name=\"days\">3</parameter>\n</invoke>\n</minimax:tool_call>",
		"<seed:tool_call>\n<function=f>\n<parameter=opts>{\"a\":1}</parameter>\n</function>\n</seed:tool_call>",
	} {
		f.Add(s)
	}
	tools, err := ParseTools([]json.RawMessage{forecast, clock})
	if err != nil {
		f.Fatal(err)
	}
	formats := []Format{hermes{}, llama3{}, mistral{}, mistralArgs{}, Generic{}}
	for _, l := range []xmlLayout{qwen3CoderLayout, glmLayout, minimaxLayout, seedLayout} {
		formats = append(formats, xmlCalls{xmlLayout: l}, Bind(xmlCalls{xmlLayout: l}, tools))
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, fm := range formats {
			_, calls, err := fm.Parse(text)
			if err != nil {
				continue
			}
			for _, c := range calls {
				var obj map[string]json.RawMessage
				if c.Name == "" || json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
					t.Fatalf("%s parsed %q into the call %q(%s)", fm.Name(), text, c.Name, c.Arguments)
				}
			}
		}
	})
}
