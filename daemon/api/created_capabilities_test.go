package api

import (
	"fmt"
	"slices"
	"testing"
)

// TestCreatedTemplateCapabilities: /api/show lists "thinking" for a created
// model as Ollama does, by its TEMPLATE: where the template reads .Think
// (so think: true is taken) and not where a TEMPLATE that does not read it
// replaces a thinking file's template (think: true is refused there).
func TestCreatedTemplateCapabilities(t *testing.T) {
	ta := startAPI(t)
	thinks := `{{ range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ if and .IsThinkSet (not .Think) }}<think></think>{{ end }}`
	plain := `{{ range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
`
	for _, c := range []struct {
		model, from, template string
		thinking              bool
	}{
		{"c-thinks", "fake", thinks, true},
		{"c-plain-on-thinker", "thinker", plain, false},
		{"c-thinker-as-is", "thinker", "", true},
		{"c-plain", "fake", plain, false},
	} {
		t.Run(c.model, func(t *testing.T) {
			body := `{"model":"` + c.model + `","from":"` + c.from + `","stream":false`
			if c.template != "" {
				body += `,"template":` + quote(c.template)
			}
			ta.postOK(t, "/api/create", body+`}`)
			caps, _ := ta.postOK(t, "/api/show", `{"model":"`+c.model+`"}`)["capabilities"].([]any)
			if got := slices.Contains(caps, any("thinking")); got != c.thinking {
				t.Errorf("capabilities %v: thinking %v, want %v", caps, got, c.thinking)
			}
			think := fmt.Sprintf(`{"model":%q,"stream":false,"think":true,"messages":[{"role":"user","content":"Hi"}]}`, c.model)
			if resp, b := ta.post(t, "/api/chat", think); (resp.StatusCode == 200) != c.thinking {
				t.Errorf("think: true answered %d %s; capabilities say thinking %v", resp.StatusCode, b, c.thinking)
			}
		})
	}
}
