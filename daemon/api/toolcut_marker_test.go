package api

import (
	"strings"
	"testing"
)

// TestRequiredCallCutInItsMarker: under tool_choice required (or a named
// tool) the reply is calls from its first byte, so a reply the length
// limit cuts before its call marker is complete ("<tool") has no content
// and no calls, streamed or not, in every API. Before, the half marker
// came back as the reply's text.
func TestRequiredCallCutInItsMarker(t *testing.T) {
	ta := startAPI(t)
	f := ta.fakes["hermes"]
	f.template = "{{ tools }}<tool_call>\n<function=x>\n<parameter=y>\n{{ messages }}"
	f.script = []string{"<tool", "_call>", "\n<function=g>\n", "</function>\n</tool_call>"}
	tools := `[{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}]`
	atools := `[{"name":"g","input_schema":{"type":"object"}}]`
	rtools := `[{"type":"function","name":"g","parameters":{"type":"object"}}]`
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ name, path, body string }{
		{"chat, required", "/v1/chat/completions", `{"model":"hermes",` + user + `,"tools":` + tools + `,"tool_choice":"required","max_tokens":1}`},
		{"chat, named, streamed", "/v1/chat/completions", `{"model":"hermes",` + user + `,"tools":` + tools + `,"tool_choice":{"type":"function","function":{"name":"g"}},"max_tokens":1,"stream":true}`},
		{"chat, required, streamed", "/v1/chat/completions", `{"model":"hermes",` + user + `,"tools":` + tools + `,"tool_choice":"required","max_tokens":1,"stream":true}`},
		{"messages, any", "/v1/messages", `{"model":"hermes","max_tokens":1,` + user + `,"tools":` + atools + `,"tool_choice":{"type":"any"}}`},
		{"messages, any, streamed", "/v1/messages", `{"model":"hermes","max_tokens":1,"stream":true,` + user + `,"tools":` + atools + `,"tool_choice":{"type":"any"}}`},
		{"responses, required", "/v1/responses", `{"model":"hermes","input":"hi","max_output_tokens":1,"tools":` + rtools + `,"tool_choice":"required"}`},
		{"responses, required, streamed", "/v1/responses", `{"model":"hermes","input":"hi","max_output_tokens":1,"stream":true,"tools":` + rtools + `,"tool_choice":"required"}`},
	} {
		r, b := ta.post(t, c.path, c.body)
		if r.StatusCode != 200 || strings.Contains(string(b), "<tool") || strings.Contains(string(b), `\u003ctool`) {
			t.Errorf("%s: %d %s", c.name, r.StatusCode, b)
		}
	}
}
