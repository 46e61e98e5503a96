package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestAnthropicToolResultIsError: a tool_result's is_error reaches the
// model (its content marked as an error, which no template has a place
// for), and an is_error that is not a boolean is a 400 naming it; both
// were ignored.
func TestAnthropicToolResultIsError(t *testing.T) {
	body := func(isError string) ipc.AnthropicRequest {
		var b ipc.AnthropicRequest
		raw := `{"max_tokens":8,"messages":[{"role":"user","content":"Weather?"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"w","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"no such city"` + isError + `}]}]}`
		if err := json.Unmarshal([]byte(raw), &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct{ isError, content, err string }{
		{``, "no such city", ""},
		{`,"is_error":false`, "no such city", ""},
		{`,"is_error":true`, "Error: no such city", ""},
		{`,"is_error":"yes"`, "", "messages[2].content[0].is_error"},
	} {
		req, err := anthropicChat(body(c.isError), true)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want one naming %s", c.isError, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.isError, err)
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "tool" || last.Content != c.content {
			t.Errorf("%s: tool message %+v, want content %q", c.isError, last, c.content)
		}
	}
}
