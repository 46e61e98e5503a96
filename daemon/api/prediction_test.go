package api

import (
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestPredictedOutputs: OpenAI's prediction drafts the reply without
// changing it, and usage says how much of it was taken.
func TestPredictedOutputs(t *testing.T) {
	model := quote(testpath.Shared(t, "models/ruvllm-test-llama-19m-f16.gguf"))
	ta := startAPIWith(t, true)
	post := func(path, body string) map[string]any { t.Helper(); return ta.postOK(t, path, body) }
	chat := `{"model":` + model + `,"messages":[{"role":"user","content":"Tell me about the kernel"}],"max_tokens":48,"temperature":0`
	plain := post("/v1/chat/completions", chat+`}`)
	text := field(plain, "choices", 0, "message", "content").(string)
	if field(plain, "usage", "completion_tokens_details") != nil {
		t.Fatalf("no prediction, yet details: %v", plain["usage"])
	}
	for _, pred := range []string{quote(text), `[{"type":"text","text":` + quote(text[:len(text)/2]) + `},{"type":"text","text":` + quote(text[len(text)/2:]) + `}]`} {
		p := post("/v1/chat/completions", chat+`,"prediction":{"type":"content","content":`+pred+`}}`)
		if got := field(p, "choices", 0, "message", "content"); got != text {
			t.Fatalf("with the prediction %q, without %q", got, text)
		}
		accepted := field(p, "usage", "completion_tokens_details", "accepted_prediction_tokens").(float64)
		rejected := field(p, "usage", "completion_tokens_details", "rejected_prediction_tokens").(float64)
		if n := field(p, "usage", "completion_tokens").(float64); accepted < n/2 || rejected < 0 {
			t.Fatalf("%v of %v tokens accepted from the prediction, %v rejected", accepted, n, rejected)
		}
	}
	c := post("/v1/completions", `{"model":`+model+`,"prompt":"The kernel","max_tokens":32,"temperature":0}`)
	ctext := field(c, "choices", 0, "text").(string)
	cp := post("/v1/completions", `{"model":`+model+`,"prompt":"The kernel","max_tokens":32,"temperature":0,"prediction":{"type":"content","content":`+quote(ctext)+`}}`)
	if field(cp, "choices", 0, "text") != ctext || field(cp, "usage", "completion_tokens_details", "accepted_prediction_tokens").(float64) < 8 {
		t.Fatalf("completion with a prediction: %v", cp)
	}
	for _, bad := range []struct{ body, want string }{
		{`"prediction":{"type":"diff","content":"x"}`, "prediction.type"},
		{`"prediction":"x"`, "prediction"},
		{`"prediction":{"type":"content","content":[{"type":"image_url"}]}`, "prediction.content[0]"},
	} {
		resp, b := ta.post(t, "/v1/chat/completions", chat+`,`+bad.body+`}`)
		if resp.StatusCode != 400 || !strings.Contains(string(b), bad.want) {
			t.Errorf("%s: %d %s, want 400 naming %s", bad.body, resp.StatusCode, b, bad.want)
		}
	}
}
