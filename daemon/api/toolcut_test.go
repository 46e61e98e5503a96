package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolCallCutByLength: a reply the length limit cuts inside a tool
// call keeps the complete calls before it and drops the half one, with
// finish reason length, in every API; it was a 500 ("the model's tool
// call does not parse").
func TestToolCallCutByLength(t *testing.T) {
	ta := startAPI(t)
	call := `{"name": "get_weather", "arguments": {"city": "Oslo"}}`
	ta.fakes["hermes"].script = []string{"<tool_call>", "\n", call, "\n", "</tool_call>", "\n", "<tool_call>", "\n", `{"name": "get_w`, `eather"}`}
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, cut := range []string{"9", "7"} { // inside the second call's JSON; just after its marker
		c := ta.postOK(t, "/v1/chat/completions", `{"model":"hermes",`+user+`,"tools":`+tools+`,"max_tokens":`+cut+`}`)
		if field(c, "choices", 0, "finish_reason") != "length" || field(c, "choices", 0, "message", "tool_calls", 0, "function", "name") != "get_weather" ||
			len(field(c, "choices", 0, "message", "tool_calls").([]any)) != 1 {
			t.Fatalf("chat, cut at %s: %v", cut, c)
		}
		o := ta.postOK(t, "/api/chat", `{"model":"hermes","stream":false,`+user+`,"tools":`+tools+`,"options":{"num_predict":`+cut+`}}`)
		if o["done_reason"] != "length" || len(field(o, "message", "tool_calls").([]any)) != 1 {
			t.Fatalf("/api/chat, cut at %s: %v", cut, o)
		}
		a := ta.postOK(t, "/v1/messages", `{"model":"hermes","max_tokens":`+cut+`,`+user+`,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`)
		if a["stop_reason"] != "max_tokens" || !strings.Contains(fmtJSON(a["content"]), `"tool_use"`) {
			t.Fatalf("/v1/messages, cut at %s: %v", cut, a)
		}
		r := ta.postOK(t, "/v1/responses", `{"model":"hermes","input":"hi","max_output_tokens":`+cut+`,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`)
		if r["status"] != "incomplete" || !strings.Contains(fmtJSON(r["output"]), `"function_call"`) {
			t.Fatalf("/v1/responses, cut at %s: %v", cut, r)
		}
	}
	// Streamed, the same.
	_, b := ta.post(t, "/v1/chat/completions", `{"model":"hermes",`+user+`,"tools":`+tools+`,"max_tokens":9,"stream":true}`)
	if !strings.Contains(string(b), `"finish_reason":"length"`) || strings.Count(string(b), `"name":"get_weather"`) != 1 || strings.Contains(string(b), "error") {
		t.Fatalf("streamed: %s", b)
	}
}

func fmtJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
