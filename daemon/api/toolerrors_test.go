package api

import (
	"strings"
	"testing"
)

// TestToolErrorsNameTheFieldOnce: a bad tool definition or tool_choice is
// a 400 whose message names the place once ("tools tools[0]: ..." and
// "tool_choice tool_choice names ..." named it twice), in the request's
// own words (Anthropic's name and input_schema, not a function's name and
// parameters), and says why a definition is not a tool object.
func TestToolErrorsNameTheFieldOnce(t *testing.T) {
	ta := startAPI(t)
	user := `"messages":[{"role":"user","content":"x"}]`
	for _, c := range []struct{ path, body, want, not string }{
		{"/v1/chat/completions", `{"model":"fake",` + user + `,"tools":[{"type":"function","function":{"name":"a b"}}]}`, `"tools[0]: function name \"a b\"`, "tools tools"},
		{"/v1/chat/completions", `{"model":"fake",` + user + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, `"tool_choice names \"g\"`, "tool_choice tool_choice"},
		{"/v1/chat/completions", `{"model":"fake",` + user + `,"tools":[{"type":"function","function":{"name":"f","description":5}}]}`, `not a tool object (json: cannot unmarshal number`, "tools tools"},
		{"/v1/messages", `{"model":"fake","max_tokens":5,` + user + `,"tools":[{"name":"a b","input_schema":{"type":"object"}}]}`, `"tools[0]: name \"a b\"`, "function"},
		{"/v1/messages", `{"model":"fake","max_tokens":5,` + user + `,"tools":[{"name":"f","input_schema":{"type":"string"}}]}`, `input_schema of \"f\" must describe an object`, "parameters"},
	} {
		resp, b := ta.post(t, c.path, c.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) || strings.Contains(string(b), c.not) {
			t.Errorf("%s %s: %d %s; want %s and not %q", c.path, c.body, resp.StatusCode, b, c.want, c.not)
		}
	}
}
