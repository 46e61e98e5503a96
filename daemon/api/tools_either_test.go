package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestFormatBesideTools: a response format beside tools (tool_choice
// auto) holds the reply to either valid calls of the offered tools or a
// reply in the format, in the generic format (a template without tools)
// and a native one (a TEMPLATE writing <tool_call>), streamed or not,
// on every chat API. It was a 400: "cannot be combined with tools (yet)".
func TestFormatBesideTools(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	ta.postOK(t, "/api/create", `{"model":"native","from":`+quote(base)+`,"template":`+quote(qwenTools)+`,"stream":false}`)
	const schema = `{"type":"object","properties":{"answer":{"type":"string","maxLength":12}},"required":["answer"],"additionalProperties":false}`
	const params = `{"type":"object","properties":{"city":{"type":"string","enum":["Oslo","Rome"]}},"required":["city"],"additionalProperties":false}`
	tool := `{"type":"function","function":{"name":"get_weather","parameters":` + params + `}}`
	validCall := func(name string, args any) error {
		var a map[string]any
		switch v := args.(type) {
		case string:
			if err := json.Unmarshal([]byte(v), &a); err != nil {
				return err
			}
		case map[string]any:
			a = v
		}
		if name != "get_weather" || len(a) != 1 || !slices.Contains([]any{"Oslo", "Rome"}, a["city"]) {
			return fmt.Errorf("call %s(%v)", name, args)
		}
		return nil
	}
	validReply := func(content string) error {
		var obj map[string]any
		if err := json.Unmarshal([]byte(content), &obj); err != nil {
			return fmt.Errorf("content %q is not JSON: %v", content, err)
		}
		if a, ok := obj["answer"].(string); !ok || len(obj) != 1 || len([]rune(a)) > 12 {
			return fmt.Errorf("content %q is not in the schema", content)
		}
		return nil
	}
	kinds := map[string]int{}
	for _, model := range []string{base, "native"} {
		for seed := range 6 {
			body := fmt.Sprintf(`{"model":%s,"seed":%d,"max_tokens":300,"messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":[%s],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":%s}}}`,
				quote(model), seed, tool, schema)
			out := ta.postOK(t, "/v1/chat/completions", body)
			choice := out["choices"].([]any)[0].(map[string]any)
			msg := choice["message"].(map[string]any)
			if choice["finish_reason"] == "length" {
				continue
			}
			if calls, ok := msg["tool_calls"].([]any); ok {
				kinds["calls"]++
				for _, c := range calls {
					fn := c.(map[string]any)["function"].(map[string]any)
					if err := validCall(fn["name"].(string), fn["arguments"]); err != nil {
						t.Errorf("%s seed %d: %v", model, seed, err)
					}
				}
				if choice["finish_reason"] != "tool_calls" {
					t.Errorf("%s seed %d: calls with finish_reason %v", model, seed, choice["finish_reason"])
				}
				continue
			}
			kinds["reply"]++
			content, _ := msg["content"].(string)
			if err := validReply(content); err != nil {
				t.Errorf("%s seed %d: %v", model, seed, err)
			}
			// Streamed, the same reply arrives as content deltas.
			var streamed strings.Builder
			_, sb := ta.post(t, "/v1/chat/completions", strings.Replace(body, `{"model"`, `{"stream":true,"model"`, 1))
			for _, ev := range sseEvents(t, sb) {
				if ev == "[DONE]" {
					continue
				}
				if d, ok := field(mustJSON(t, ev), "choices", 0, "delta", "content").(string); ok {
					streamed.WriteString(d)
				}
			}
			if streamed.String() != content {
				t.Errorf("%s seed %d: streamed %q, not %q", model, seed, streamed.String(), content)
			}
		}
	}
	if kinds["calls"]+kinds["reply"] == 0 {
		t.Fatal("no reply finished within max_tokens")
	}
	t.Logf("replies: %v", kinds)
	// Ollama's format, Anthropic's output_config.format and the
	// Responses API's text.format take tools beside them too.
	ta.postOK(t, "/api/chat", `{"model":"native","stream":false,"format":`+schema+`,"tools":[`+tool+`],"messages":[{"role":"user","content":"x"}],"options":{"num_predict":300}}`)
	ta.postOK(t, "/v1/messages", `{"model":"native","max_tokens":300,"output_config":{"format":{"type":"json_schema","schema":`+schema+`}},"tools":[{"name":"get_weather","input_schema":`+params+`}],"messages":[{"role":"user","content":"x"}]}`)
	ta.postOK(t, "/v1/responses", `{"model":"native","max_output_tokens":300,"text":{"format":{"type":"json_schema","name":"a","schema":`+schema+`}},"tools":[{"type":"function","name":"get_weather","parameters":`+params+`}],"input":"x"}`)
}
