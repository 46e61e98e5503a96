package api

import (
	"strings"
	"testing"
)

// TestTemplateRenderingNothingIs400: a prompt template that renders
// nothing (a request's template, a created model's TEMPLATE) leaves no
// token to condition on: the client's error, a 400 on every API, not a
// 500.
func TestTemplateRenderingNothingIs400(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	ta.postOK(t, "/api/create", `{"model":"silent","from":`+model+`,"template":"{{ if false }}x{{ end }}","stream":false}`)
	for _, tc := range []struct{ path, body string }{
		{"/api/generate", `{"model":` + model + `,"stream":false,"template":"{{ if false }}x{{ end }}","prompt":"hi","options":{"num_predict":1}}`},
		{"/api/generate", `{"model":` + model + `,"stream":true,"template":"{{/* nothing */}}","prompt":"hi","options":{"num_predict":1}}`},
		{"/api/chat", `{"model":"silent","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":1}}`},
		{"/v1/chat/completions", `{"model":"silent","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"silent","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"silent","max_output_tokens":1,"input":"hi"}`},
	} {
		resp, b := ta.post(t, tc.path, tc.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "no tokens") {
			t.Errorf("%s %s: %d %s, want 400 saying the prompt has no tokens", tc.path, tc.body, resp.StatusCode, b)
		}
	}
}
