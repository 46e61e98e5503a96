package api

import (
	"fmt"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestTopPZeroKeepsTheBestToken: top_p 0 keeps only the most probable
// token, as in llama.cpp, Ollama and OpenAI, so a reply sampled with it is
// the greedy one whatever the seed. The sampler read 0 as "no top-p" and
// drew from the whole vocabulary at temperature 1 (0.8 for Ollama and
// llama-server): the opposite of what the client asked for.
func TestTopPZeroKeepsTheBestToken(t *testing.T) {
	model := quote(testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"))
	ta := startAPIWith(t, true)
	msgs := `[{"role":"user","content":"Explain what a kernel module is."}]`
	chat := func(extra string) any {
		return field(ta.postOK(t, "/v1/chat/completions", `{"model":`+model+`,"max_tokens":12,"messages":`+msgs+extra+`}`), "choices", 0, "message", "content")
	}
	ollama := func(extra string) any {
		return field(ta.postOK(t, "/api/chat", `{"model":`+model+`,"stream":false,"messages":`+msgs+`,"options":{"num_predict":12,"repeat_penalty":1`+extra+`}}`), "message", "content")
	}
	llama := func(extra string) any {
		return ta.postOK(t, "/completion", `{"model":`+model+`,"prompt":"The kernel","n_predict":12`+extra+`}`)["content"]
	}
	anthropic := func(extra string) any {
		return field(ta.postOK(t, "/v1/messages", `{"model":`+model+`,"max_tokens":12,"messages":`+msgs+extra+`}`), "content", 0, "text")
	}
	greedy := map[string]any{"chat": chat(`,"temperature":0`), "ollama": ollama(`,"temperature":0`), "llama": llama(`,"temperature":0`), "anthropic": anthropic(`,"temperature":0`)}
	for seed := 1; seed <= 3; seed++ {
		s := fmt.Sprintf(`,"seed":%d`, seed)
		for name, got := range map[string]any{"chat": chat(`,"top_p":0` + s), "ollama": ollama(`,"top_p":0` + s), "llama": llama(`,"top_p":0` + s), "anthropic": anthropic(`,"top_p":0`)} {
			if got != greedy[name] {
				t.Fatalf("%s with top_p 0, seed %d: %q, want the greedy %q", name, seed, got, greedy[name])
			}
		}
	}
	// What answers report is what the client sent.
	r := ta.postOK(t, "/v1/responses", `{"model":`+model+`,"input":"hi","max_output_tokens":2,"top_p":0}`)
	if r["top_p"] != 0.0 {
		t.Fatalf("responses reports top_p %v", r["top_p"])
	}
	l := ta.postOK(t, "/completion", `{"model":`+model+`,"prompt":"The kernel","n_predict":2,"top_p":0}`)
	if got := field(l, "generation_settings", "top_p"); got != 0.0 {
		t.Fatalf("/completion reports top_p %v", got)
	}
}
