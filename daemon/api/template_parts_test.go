package api

import (
	"encoding/json"
	"testing"
)

// TestChatTemplateJoinsPartsAsChat: /v1/chat/template shows the prompt a
// chat request reads, so a content of text parts is joined with newlines
// there too (it was joined with nothing: "ab" shown, "a\nb" read), and
// the part forms chat takes (input_text, a text without a type) render.
func TestChatTemplateJoinsPartsAsChat(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	render := func(content string) string {
		t.Helper()
		out := ta.postOK(t, "/v1/chat/template", `{"model":`+model+`,"messages":[{"role":"user","content":`+content+`}]}`)
		return out["prompt"].(string)
	}
	want := render(`"a\nb"`)
	for _, content := range []string{
		`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`,
		`[{"type":"input_text","text":"a"},{"text":"b"}]`,
	} {
		got := render(content)
		if got != want {
			t.Errorf("%s: prompt %q, want %q", content, got, want)
		}
		chat := ta.postOK(t, "/v1/chat/completions", `{"model":`+model+`,"max_tokens":1,"messages":[{"role":"user","content":`+content+`}]}`)
		prompt, _ := json.Marshal(got)
		toks := ta.postOK(t, "/tokenize", `{"model":`+model+`,"content":`+string(prompt)+`,"add_special":true}`)
		if n, m := field(chat, "usage", "prompt_tokens"), len(toks["tokens"].([]any)); n != float64(m) {
			t.Errorf("%s: chat read %v prompt tokens, the template's prompt is %d", content, n, m)
		}
	}
}

// TestChatTemplateErrorsNameTheField: /v1/chat/template refuses a bad
// conversation with a 400 whose param names the field, as chat does; its
// errors carried no param ("param": null).
func TestChatTemplateErrorsNameTheField(t *testing.T) {
	ta := startAPI(t)
	for _, c := range []struct{ body, param string }{
		{`{"model":"fake","messages":[]}`, "messages"},
		{`{"model":"fake","messages":[{"content":"hi"}]}`, "messages[0].role"},
		{`{"model":"fake","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages[0].content"},
		{`{"model":"fake","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name"},
		{`{"model":"fake","messages":[{"role":"user","content":"hi"}],"tools":[1]}`, "tools[0]"},
		{`{"model":"fake","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"messages":1}}`, "chat_template_kwargs.messages"},
		{`{"model":"fake","messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].function.name"},
	} {
		resp, b := ta.post(t, "/v1/chat/template", c.body)
		if resp.StatusCode != 400 || field(mustJSON(t, string(b)), "error", "param") != c.param {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, resp.StatusCode, b, c.param)
		}
	}
}
