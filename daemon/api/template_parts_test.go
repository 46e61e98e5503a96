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
