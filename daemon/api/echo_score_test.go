package api

import (
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestEchoMaxTokensZeroScoresThePrompt: a completion with echo and
// max_tokens 0 (how OpenAI's and vLLM's clients score a text, lm-eval's
// loglikelihood among them) answers the prompt and its logprobs alone. It
// generated until the context was full: max_tokens 0 read as no limit.
func TestEchoMaxTokensZeroScoresThePrompt(t *testing.T) {
	model := quote(testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"))
	ta := startAPIWith(t, true)
	e := ta.postOK(t, "/v1/completions", `{"model":`+model+`,"prompt":"Hello there","max_tokens":0,"echo":true,"logprobs":1}`)
	if text := field(e, "choices", 0, "text"); text != "Hello there" || field(e, "usage", "completion_tokens") != 0.0 {
		t.Fatalf("echo with max_tokens 0: %q, %v completion tokens", text, field(e, "usage", "completion_tokens"))
	}
	lp := field(e, "choices", 0, "logprobs", "token_logprobs").([]any)
	if len(lp) < 2 || lp[0] != nil || lp[1] == nil {
		t.Fatalf("echo with max_tokens 0: token_logprobs %v", lp)
	}
	// Without echo, max_tokens 0 is an empty completion; a wrong type is
	// still a 400 naming the field.
	if e := ta.postOK(t, "/v1/completions", `{"model":`+model+`,"prompt":"Hello there","max_tokens":0}`); field(e, "choices", 0, "text") != "" || field(e, "usage", "completion_tokens") != 0.0 {
		t.Fatalf("max_tokens 0: %v", e)
	}
	if resp, b := ta.post(t, "/v1/completions", `{"model":`+model+`,"prompt":"x","max_tokens":"0"}`); resp.StatusCode != 400 || !strings.Contains(string(b), "max_tokens") {
		t.Fatalf("max_tokens \"0\": %d %s", resp.StatusCode, b)
	}
	// Without max_tokens the completion still runs on.
	if e := ta.postOK(t, "/v1/completions", `{"model":`+model+`,"prompt":"Hello there","echo":true,"max_tokens":3,"temperature":0}`); field(e, "usage", "completion_tokens") != 3.0 {
		t.Fatalf("echo with max_tokens 3: %v", e)
	}
}
