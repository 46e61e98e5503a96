package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCreatedModelNamedOnMessagesAndResponses: Anthropic's /v1/messages
// and /v1/responses answer with the created model's name, as the OpenAI
// and Ollama endpoints do, not its base's; and a stored response
// continued by previous_response_id without a model runs the created
// model again. Both named the base, so the continuation ran the bare base
// model: its system prompt, parameters and adapters silently dropped.
func TestCreatedModelNamedOnMessagesAndResponses(t *testing.T) {
	ta := startAPI(t)
	ta.postOK(t, "/api/create", `{"model":"persona","from":"fake","system":"You are P.","stream":false}`)
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"persona","max_tokens":8,"messages":[{"role":"user","content":"Hi"}]}`},
		{"/v1/responses", `{"model":"persona","input":"Hi","max_output_tokens":8}`},
	} {
		if got := ta.postOK(t, c.path, c.body)["model"]; got != "persona" {
			t.Errorf("%s: model %v, want persona", c.path, got)
		}
	}
	// Streamed: the first event carries the model.
	resp, b := ta.post(t, "/v1/messages", `{"model":"persona","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"model":"persona"`) {
		t.Errorf("streamed messages: %d %s", resp.StatusCode, b)
	}
	first := ta.postOK(t, "/v1/responses", `{"model":"persona","input":"Hi","max_output_tokens":8}`)
	next, _ := json.Marshal(map[string]any{"previous_response_id": first["id"], "input": "Again", "max_output_tokens": 8})
	if got := ta.postOK(t, "/v1/responses", string(next))["model"]; got != "persona" {
		t.Errorf("continued response: model %v, want persona", got)
	}
	last := ta.fakes["fake"].lastRequest()
	if len(last.Messages) == 0 || last.Messages[0].Role != "system" || last.Messages[0].Content != "You are P." {
		t.Fatalf("continued response ran messages %+v, want the created model's system prompt first", last.Messages)
	}
}
