package api

import "testing"

// TestCreatedModelNameInResponses: a reply to a request that named a
// created model carries that name, as Ollama's do, not its base's (for a
// model created from uploaded files, the blob's "sha256-…" file name);
// logprobs, which need the model that ran, still come.
func TestCreatedModelNameInResponses(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	ta.postOK(t, "/api/create", `{"model":"persona","from":`+quote(base)+`,"system":"You are P.","stream":false}`)
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct{ path, body, field string }{
		{"/api/chat", `{"model":"persona","stream":false,"options":{"num_predict":2},` + msgs + `}`, "model"},
		{"/api/generate", `{"model":"persona","stream":false,"prompt":"Hi","options":{"num_predict":2}}`, "model"},
		{"/v1/chat/completions", `{"model":"persona","max_tokens":2,` + msgs + `}`, "model"},
		{"/v1/completions", `{"model":"persona","max_tokens":2,"prompt":"Hi"}`, "model"},
	} {
		if got := ta.postOK(t, c.path, c.body)[c.field]; got != "persona" && got != "persona:latest" {
			t.Errorf("%s: model %v, want persona", c.path, got)
		}
	}
	resp := ta.postOK(t, "/v1/chat/completions", `{"model":"persona","max_tokens":2,"logprobs":true,`+msgs+`}`)
	if lp := field(resp, "choices", 0, "logprobs", "content"); lp == nil || len(lp.([]any)) == 0 {
		t.Fatalf("logprobs of a created model: %v", field(resp, "choices", 0, "logprobs"))
	}
	resp = ta.postOK(t, "/v1/completions", `{"model":"persona","max_tokens":2,"logprobs":1,"prompt":"Hi"}`)
	if lp := field(resp, "choices", 0, "logprobs", "tokens"); lp == nil || len(lp.([]any)) == 0 {
		t.Fatalf("completion logprobs of a created model: %v", field(resp, "choices", 0, "logprobs"))
	}
	// A model by its own name still shows it.
	if got := ta.postOK(t, "/v1/chat/completions", `{"model":`+quote(base)+`,"max_tokens":2,`+msgs+`}`)["model"]; got == "persona" {
		t.Fatalf("base model shown as %v", got)
	}
}
