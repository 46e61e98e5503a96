package api

import (
	"strings"
	"testing"
)

// TestXMLToolCallsThroughAPIs: a model whose template writes calls with
// tagged arguments (Qwen3-Coder's <function=...><parameter=...>) gets its
// calls read by the offered tools' schemas on every API: a string
// argument that looks like a number stays a string, an integer one is a
// number, an object one is JSON. Such templates got the Hermes format
// before, so the model's own calls did not parse.
func TestXMLToolCallsThroughAPIs(t *testing.T) {
	ta := startAPI(t)
	f := ta.fakes["hermes"]
	f.template = "{{ tools }}<tool_call>\n<function=x>\n<parameter=y>\n{{ messages }}"
	f.script = []string{"Checking.\n", "<tool_", "call>", "\n<function=get_weather>\n", "<parameter=city>\n007\n</parameter>\n",
		"<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"hourly\": true}\n</parameter>\n", "</function>\n</tool_call>"}
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"opts":{"type":"object"}},"required":["city"]}}}]`
	user := `"messages":[{"role":"user","content":"hi"}]`
	want := `{"city":"007","days":3,"opts":{"hourly":true}}`
	c := ta.postOK(t, "/v1/chat/completions", `{"model":"hermes",`+user+`,"tools":`+tools+`}`)
	if args := field(c, "choices", 0, "message", "tool_calls", 0, "function", "arguments"); args != want ||
		field(c, "choices", 0, "message", "content") != "Checking." {
		t.Errorf("chat: %v", c)
	}
	o := ta.postOK(t, "/api/chat", `{"model":"hermes","stream":false,`+user+`,"tools":`+tools+`}`)
	if args := fmtJSON(field(o, "message", "tool_calls", 0, "function", "arguments")); args != want {
		t.Errorf("/api/chat arguments %s, want %s", args, want)
	}
	_, b := ta.post(t, "/v1/chat/completions", `{"model":"hermes",`+user+`,"tools":`+tools+`,"stream":true}`)
	if s := string(b); strings.Contains(s, "<parameter") || strings.Contains(s, "<tool_") || !strings.Contains(s, `"name":"get_weather"`) {
		t.Errorf("streamed: %s", s)
	}
}
