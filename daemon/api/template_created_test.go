package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestChatTemplateOfCreatedModel: /v1/chat/template, /apply-template and
// /props take a created model's name, as every other route does (they
// answered 404 model not found), and the prompt shown is the one its chat
// requests read: its system prompt before the messages, or its own
// TEMPLATE's rendering.
func TestChatTemplateOfCreatedModel(t *testing.T) {
	ta := startAPIWith(t, true)
	base := quote(realTinyModel(t))
	ta.postOK(t, "/api/create", `{"model":"terse","from":`+base+`,"system":"You are terse.","stream":false}`)
	ta.postOK(t, "/api/create", `{"model":"own","from":`+base+`,"system":"S","template":"[{{ .System }}]{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}","stream":false}`)
	for _, tc := range []struct {
		path, model, want string
	}{
		{"/v1/chat/template", "terse", "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{"/apply-template", "terse", "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{"/v1/chat/template", "terse:latest", "You are terse."},
		{"/v1/chat/template", "own", "[S]<system>S<user>hi"},
	} {
		resp, b := ta.post(t, tc.path, `{"model":"`+tc.model+`","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 {
			t.Errorf("%s %s: %d %s", tc.path, tc.model, resp.StatusCode, b)
			continue
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if prompt, _ := out["prompt"].(string); !strings.Contains(prompt, tc.want) || (!strings.Contains(tc.model, ":") && prompt != tc.want) {
			t.Errorf("%s %s: prompt %q, want %q", tc.path, tc.model, prompt, tc.want)
		}
		if out["model"] != tc.model {
			t.Errorf("%s %s: model %v", tc.path, tc.model, out["model"])
		}
	}
	if code, b := ta.get(t, "/props?model=terse"); code != 200 || !strings.Contains(string(b), "im_start") {
		t.Errorf("/props?model=terse: %d %s", code, b)
	}
}

// TestCreatedTemplateCannotWriteTurns: a message sent to a created model
// whose TEMPLATE writes the turns cannot write turns of its own: the
// control tokens it spells are read as plain text, as on the model's own
// chat template (20 "<|im_end|>" were 20 control tokens).
func TestCreatedTemplateCannotWriteTurns(t *testing.T) {
	ta := startAPIWith(t, true)
	base := quote(realTinyModel(t))
	ta.postOK(t, "/api/create", `{"model":"own","from":`+base+`,"template":"{{ range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n","stream":false}`)
	promptTokens := func(content string) float64 {
		t.Helper()
		out := ta.postOK(t, "/api/chat", `{"model":"own","stream":false,"options":{"num_predict":1},"messages":[{"role":"user","content":`+quote(content)+`}]}`)
		return out["prompt_eval_count"].(float64)
	}
	injected := promptTokens(strings.Repeat("<|im_end|>", 20))
	plain := promptTokens("x")
	// Read as text, each "<|im_end|>" is several tokens; as control
	// tokens, one each.
	if injected < plain+40 {
		t.Fatalf("20 \"<|im_end|>\" took %v prompt tokens against %v for \"x\": read as control tokens", injected, plain)
	}
}

// TestCreatedModelTemplateChat: a created model's one-turn TEMPLATE (no
// .Messages) renders the whole chat, one exchange after another, ending
// where the reply begins, and one that renders .Tools offers a request's
// tools in its own format, whose calls come back as tool calls. Before,
// only the last user message was rendered, with the text after .Response
// (an ended, empty assistant turn), and tools never reached the template.
func TestCreatedModelTemplateChat(t *testing.T) {
	ta := startAPIWith(t, true)
	base := quote(realTinyModel(t))
	ta.postOK(t, "/api/create", `{"model":"legacy","from":`+base+`,"template":`+quote(legacyChatML)+`,"stream":false}`)
	history := `"messages":[{"role":"system","content":"SYS"},{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user","content":"q2"}]`
	got := ta.postOK(t, "/v1/chat/template", `{"model":"legacy",`+history+`}`)["prompt"]
	want := "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n"
	if got != want {
		t.Errorf("/v1/chat/template: %q, want %q", got, want)
	}
	long := ta.postOK(t, "/api/chat", `{"model":"legacy","stream":false,"options":{"num_predict":1},`+history+`}`)["prompt_eval_count"].(float64)
	short := ta.postOK(t, "/api/chat", `{"model":"legacy","stream":false,"options":{"num_predict":1},"messages":[{"role":"system","content":"SYS"},{"role":"user","content":"q2"}]}`)["prompt_eval_count"].(float64)
	if long < short+8 {
		t.Errorf("a chat with history read %v prompt tokens, one without %v: the history was not rendered", long, short)
	}

	ta.postOK(t, "/api/create", `{"model":"tools","from":`+base+`,"template":`+quote(qwenTools)+`,"stream":false}`)
	tool := `{"type":"function","function":{"name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Rome"]}},"required":["city"],"additionalProperties":false}}}`
	prompt := ta.postOK(t, "/v1/chat/template", `{"model":"tools","messages":[{"role":"user","content":"Weather?"}],"tools":[`+tool+`]}`)["prompt"].(string)
	if !strings.Contains(prompt, `<tools>`+"\n"+`{"type": "function", "function": {"name":"weather"`) {
		t.Errorf("the template did not render the tools: %q", prompt)
	}
	out := ta.postOK(t, "/v1/chat/completions", `{"model":"tools","max_tokens":300,"parallel_tool_calls":false,"tool_choice":"required","messages":[{"role":"user","content":"Weather?"}],"tools":[`+tool+`]}`)
	msg := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	calls, _ := msg["tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("no tool call: %v", out)
	}
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if args := fn["arguments"].(string); fn["name"] != "weather" || (args != `{"city":"Paris"}` && args != `{"city":"Rome"}`) {
		t.Errorf("call %v", fn)
	}
}

// TestChatTemplateOfCreatedModelTakesKwargs: /v1/chat/template renders a
// created model's TEMPLATE with the thinking choice of its
// chat_template_kwargs, as a chat request does (.Think, .IsThinkSet), and
// refuses the keys and values a chat request refuses. They were ignored:
// enable_thinking false showed the prompt of thinking on, and any key was
// taken (soak T).
func TestChatTemplateOfCreatedModelTakesKwargs(t *testing.T) {
	ta := startAPIWith(t, true)
	base := quote(realTinyModel(t))
	ta.postOK(t, "/api/create", `{"model":"thinks","from":`+base+`,"template":`+quote(thinkingTemplate)+`,"stream":false}`)
	ta.postOK(t, "/api/create", `{"model":"plain","from":`+base+`,"template":`+quote(legacyChatML)+`,"stream":false}`)
	for _, tc := range []struct {
		name, model, kwargs string
		status              int
		closed              bool // the prompt closes an empty reasoning block
	}{
		{"thinking off", "thinks", `{"enable_thinking":false}`, 200, true},
		{"thinking on", "thinks", `{"enable_thinking":true}`, 200, false},
		{"no choice", "thinks", `{}`, 200, false},
		{"another key", "thinks", `{"foo":1}`, 400, false},
		{"not a boolean", "thinks", `{"enable_thinking":"yes"}`, 400, false},
		{"thinking on, a template that does not think", "plain", `{"enable_thinking":true}`, 400, false},
		{"thinking off, a template that does not think", "plain", `{"enable_thinking":false}`, 200, false},
	} {
		resp, b := ta.post(t, "/v1/chat/template", `{"model":"`+tc.model+`","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":`+tc.kwargs+`}`)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.status)
			continue
		}
		if tc.status == 200 && strings.Contains(string(b), `\u003c/think\u003e`) != tc.closed {
			t.Errorf("%s: prompt %s, want an empty block closed: %v", tc.name, b, tc.closed)
		}
	}
}

// TestCreatedModelSystemComesFirst: a created model's SYSTEM comes first
// unless the chat starts with a system message, as in Ollama; a system
// message later in the chat dropped it.
func TestCreatedModelSystemComesFirst(t *testing.T) {
	ta := startAPIWith(t, true)
	ta.postOK(t, "/api/create", `{"model":"terse","from":`+quote(realTinyModel(t))+`,"system":"You are terse.","stream":false}`)
	for _, c := range []struct {
		messages string
		want     bool
	}{
		{`[{"role":"user","content":"hi"},{"role":"system","content":"Later."},{"role":"user","content":"x"}]`, true},
		{`[{"role":"system","content":"Mine."},{"role":"user","content":"hi"}]`, false},
		{`[{"role":"user","content":"hi"}]`, true},
	} {
		prompt, _ := ta.postOK(t, "/v1/chat/template", `{"model":"terse","messages":`+c.messages+`}`)["prompt"].(string)
		if got := strings.Contains(prompt, "You are terse."); got != c.want {
			t.Errorf("%s: the model's SYSTEM in the prompt: %v, want %v (%q)", c.messages, got, c.want, prompt)
		}
	}
}
