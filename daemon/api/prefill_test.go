package api

import (
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestAssistantPrefill: a conversation ending with the assistant's text is
// continued from that text (Anthropic's documented prefill, Ollama's
// behaviour), as a raw prompt of the template cut after it is: the prompt
// used to close the assistant's turn and open a new one, so the reply
// ignored the prefill. A short prefill ("im", which ChatML's <|im_end|>
// also holds) is cut after itself. OpenAI's chat still starts a new turn.
func TestAssistantPrefill(t *testing.T) {
	model := quote(testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"))
	ta := startAPIWith(t, true)
	for _, prefill := range []string{"The kernel", "im"} {
		msgs := `[{"role":"user","content":"hi"},{"role":"assistant","content":"` + prefill + `"}]`
		// ChatML, cut after the assistant's text.
		want := ta.postOK(t, "/completion", `{"model":`+model+`,"prompt":"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n`+prefill+`","n_predict":8,"temperature":0}`)
		wantText, wantPrompt := want["content"].(string), want["tokens_evaluated"].(float64)

		a := ta.postOK(t, "/v1/messages", `{"model":`+model+`,"max_tokens":8,"temperature":0,"messages":`+msgs+`}`)
		prompt := field(a, "usage", "input_tokens").(float64) + field(a, "usage", "cache_read_input_tokens").(float64)
		if got := field(a, "content", 0, "text"); got != wantText || prompt != wantPrompt {
			t.Fatalf("messages, prefill %q: %q after %v prompt tokens, want %q after %v", prefill, got, prompt, wantText, wantPrompt)
		}
		o := ta.postOK(t, "/api/chat", `{"model":`+model+`,"stream":false,"options":{"num_predict":8,"temperature":0,"repeat_penalty":1},"messages":`+msgs+`}`)
		if got := field(o, "message", "content"); got != wantText || o["prompt_eval_count"] != wantPrompt {
			t.Fatalf("api/chat, prefill %q: %q after %v prompt tokens, want %q after %v", prefill, got, o["prompt_eval_count"], wantText, wantPrompt)
		}
		// OpenAI chat has no prefill: the assistant's turn is closed and
		// a new one opened.
		c := ta.postOK(t, "/v1/chat/completions", `{"model":`+model+`,"max_tokens":8,"temperature":0,"messages":`+msgs+`}`)
		if got := field(c, "usage", "prompt_tokens"); got == wantPrompt {
			t.Fatalf("chat completions continued the assistant's message (%v prompt tokens)", got)
		}
	}
}
