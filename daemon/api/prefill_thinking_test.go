package api

import "testing"

// TestPrefillThinkingState: a continued assistant message decides whether
// the reply starts inside the reasoning block, not the generation prompt
// (which a continued message does not get). The r1 fake's generation
// prompt opens the block; a prefill that already closed it ("plan</think>
// Answer:") is continued as the reply, which came back as reasoning.
func TestPrefillThinkingState(t *testing.T) {
	ta := startAPI(t)
	const closed = `"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"plan</think>Answer:"}]`
	a := ta.postOK(t, "/v1/messages", `{"model":"r1","max_tokens":100,`+closed+`}`)
	if blocks := a["content"].([]any); len(blocks) != 1 || field(a, "content", 0, "type") != "text" {
		t.Fatalf("messages, closed prefill: %v, want one text block", blocks)
	}
	o := ta.postOK(t, "/api/chat", `{"model":"r1","stream":false,`+closed+`}`)
	if msg := o["message"].(map[string]any); msg["thinking"] != nil || msg["content"] == "" {
		t.Fatalf("api/chat, closed prefill: %v, want the continuation as content", msg)
	}
	// A prefill that opens the block is continued as reasoning, on a model
	// whose generation prompt does not open it.
	const open = `"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"<think>\nI plan"}]`
	a = ta.postOK(t, "/v1/messages", `{"model":"thinker","max_tokens":100,`+open+`}`)
	if field(a, "content", 0, "type") != "thinking" {
		t.Fatalf("messages, open prefill: %v, want a thinking block first", a["content"])
	}
	// Without a prefill nothing changes: r1 reasons first.
	a = ta.postOK(t, "/v1/messages", `{"model":"r1","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}`)
	if field(a, "content", 0, "type") != "thinking" || field(a, "content", 1, "text") != "Answer." {
		t.Fatalf("messages, no prefill: %v", a["content"])
	}
}
