package api

import (
	"strings"
	"testing"
)

// TestToolChoiceWithoutTools checks that every API refuses a tool_choice
// that asks for a call when no tools are given, naming tool_choice, and
// one it cannot read even then. The Responses and Messages APIs answered
// with text instead, as if no tool_choice had been sent (soak P); chat
// completions already refused.
func TestToolChoiceWithoutTools(t *testing.T) {
	ta := startAPIWith(t, false)
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"chat required", "/v1/chat/completions", `{"model":"fake","max_tokens":3,"tool_choice":"required","messages":[{"role":"user","content":"x"}]}`, 400, "tool_choice"},
		{"responses required", "/v1/responses", `{"model":"fake","max_output_tokens":3,"tool_choice":"required","input":"x"}`, 400, "tool_choice"},
		{"responses named, empty tools", "/v1/responses", `{"model":"fake","max_output_tokens":3,"tools":[],"tool_choice":{"type":"function","name":"f"},"input":"x"}`, 400, "tool_choice"},
		{"responses bad choice", "/v1/responses", `{"model":"fake","max_output_tokens":3,"tool_choice":"sometimes","input":"x"}`, 400, "tool_choice"},
		{"responses none", "/v1/responses", `{"model":"fake","max_output_tokens":3,"tool_choice":"none","input":"x"}`, 200, ""},
		{"messages any", "/v1/messages", `{"model":"fake","max_tokens":3,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"}]}`, 400, "tool_choice"},
		{"messages tool, empty tools", "/v1/messages", `{"model":"fake","max_tokens":3,"tools":[],"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"user","content":"x"}]}`, 400, "tool_choice"},
		{"messages bad type", "/v1/messages", `{"model":"fake","max_tokens":3,"tool_choice":{"type":"bogus"},"messages":[{"role":"user","content":"x"}]}`, 400, "tool_choice.type"},
		{"messages auto", "/v1/messages", `{"model":"fake","max_tokens":3,"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":"x"}]}`, 200, ""},
		{"messages none", "/v1/messages", `{"model":"fake","max_tokens":3,"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"x"}]}`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ta.post(t, tc.path, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("%d %s, want %d naming %q", resp.StatusCode, b, tc.status, tc.want)
			}
		})
	}
}
