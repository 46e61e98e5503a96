package api

import "testing"

// TestCreatedModelOnMessagesAndResponses: a created model (listed by GET
// /v1/models) answers on Anthropic's /v1/messages (and count_tokens) and
// on /v1/responses with its base and its settings, as on the OpenAI and
// Ollama chat endpoints; both answered 404 "model not found".
func TestCreatedModelOnMessagesAndResponses(t *testing.T) {
	ta := startAPI(t)
	ta.postOK(t, "/api/create", `{"model":"persona","from":"fake","system":"You are P.","parameters":{"temperature":0.25,"stop":["END"]},"stream":false}`)
	fake := ta.fakes["fake"]
	check := func(what string) {
		t.Helper()
		last := fake.lastRequest()
		if len(last.Messages) == 0 || last.Messages[0].Role != "system" || last.Messages[0].Content != "You are P." {
			t.Fatalf("%s: messages %+v, want the created model's system prompt first", what, last.Messages)
		}
		if last.Sampling.Temperature != 0.25 || len(last.Stop) != 1 || last.Stop[0] != "END" {
			t.Fatalf("%s: sampling %+v stop %v, want the created model's parameters", what, last.Sampling, last.Stop)
		}
	}
	ta.postOK(t, "/v1/messages", `{"model":"persona","max_tokens":8,"messages":[{"role":"user","content":"Hi"}]}`)
	check("messages")
	// (The fake cannot count tokens: a 400 saying so, not a 404.)
	if resp, b := ta.post(t, "/v1/messages/count_tokens", `{"model":"persona","messages":[{"role":"user","content":"Hi"}]}`); resp.StatusCode == 404 {
		t.Fatalf("count_tokens: %d %s", resp.StatusCode, b)
	}
	ta.postOK(t, "/v1/responses", `{"model":"persona","input":"Hi","max_output_tokens":8}`)
	check("responses")
	// The request's own values still win.
	ta.postOK(t, "/v1/messages", `{"model":"persona","max_tokens":8,"temperature":0.5,"system":"Mine.","messages":[{"role":"user","content":"Hi"}]}`)
	if last := fake.lastRequest(); last.Sampling.Temperature != 0.5 || last.Messages[0].Content != "Mine." {
		t.Fatalf("request's own settings: %+v %+v", last.Sampling, last.Messages)
	}
}
