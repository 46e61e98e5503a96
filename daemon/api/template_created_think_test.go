package api

import (
	"strings"
	"testing"
)

// TestChatTemplateOfCreatedModelThinks: /v1/chat/template previews a
// created model's TEMPLATE with the request's
// chat_template_kwargs.enable_thinking as .Think and .IsThinkSet, the
// prompt its chat requests render (Qwen 3's /think, /no_think and empty
// block); the switch was dropped, so the preview showed a prompt no
// request with it renders.
func TestChatTemplateOfCreatedModelThinks(t *testing.T) {
	ta := startAPI(t)
	src := `{{ range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}{{ if $.IsThinkSet }}{{ if $.Think }} /think{{ else }} /no_think{{ end }}{{ end }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ if and .IsThinkSet (not .Think) }}<think>

</think>

{{ end }}`
	ta.postOK(t, "/api/create", `{"model":"q3","from":"fake","template":`+quote(src)+`,"stream":false}`)
	for _, c := range []struct{ kwargs, want string }{
		{``, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{`,"chat_template_kwargs":{"enable_thinking":true}`, "<|im_start|>user\nhi /think<|im_end|>\n<|im_start|>assistant\n"},
		{`,"chat_template_kwargs":{"enable_thinking":false}`, "<|im_start|>user\nhi /no_think<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
	} {
		got := ta.postOK(t, "/v1/chat/template", `{"model":"q3","messages":[{"role":"user","content":"hi"}]`+c.kwargs+`}`)["prompt"]
		if got != c.want {
			t.Errorf("%s: prompt %q, want %q", c.kwargs, got, c.want)
		}
	}
	resp, b := ta.post(t, "/v1/chat/template", `{"model":"q3","messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":"yes"}}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "enable_thinking") {
		t.Errorf("enable_thinking \"yes\": %d %s, want a 400 naming it", resp.StatusCode, b)
	}
}
