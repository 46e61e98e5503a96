package api

import (
	"encoding/json"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestRepeatLastNZeroDisablesPenalties: repeat_last_n 0 is a window of no
// tokens, "disabled" in Ollama's and llama-server's documentation, so no
// repetition penalty applies; the sampler read 0 as its default window of
// 64 and penalised anyway. Another window keeps the penalties.
func TestRepeatLastNZeroDisablesPenalties(t *testing.T) {
	for _, c := range []struct {
		window string
		off    bool
	}{{`0`, true}, {`64`, false}, {`-1`, false}} {
		var o ipc.OllamaOptions
		if err := json.Unmarshal([]byte(`{"repeat_penalty":1.3,"presence_penalty":0.5,"frequency_penalty":0.5,"repeat_last_n":`+c.window+`}`), &o); err != nil {
			t.Fatal(err)
		}
		req, err := ollamaRequest(&o)
		if err != nil {
			t.Fatal(err)
		}
		var b ipc.LlamaCompletionRequest
		if err := json.Unmarshal([]byte(`{"prompt":"x","repeat_penalty":1.3,"presence_penalty":0.5,"frequency_penalty":0.5,"repeat_last_n":`+c.window+`}`), &b); err != nil {
			t.Fatal(err)
		}
		plan, err := llamaRequest(&b)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range map[string]struct{ rp, pp, fp float32 }{
			"ollama": {req.Sampling.RepeatPenalty, req.Sampling.PresencePenalty, req.Sampling.FrequencyPenalty},
			"llama":  {plan.req.Sampling.RepeatPenalty, plan.req.Sampling.PresencePenalty, plan.req.Sampling.FrequencyPenalty},
		} {
			if off := p.rp == 1 && p.pp == 0 && p.fp == 0; off != c.off {
				t.Fatalf("%s, repeat_last_n %s: penalties %+v, off %v, want off %v", name, c.window, p, off, c.off)
			}
		}
	}
	// A penalty out of range is still refused with the window at 0.
	var o ipc.OllamaOptions
	json.Unmarshal([]byte(`{"repeat_penalty":-2,"repeat_last_n":0}`), &o)
	if _, err := ollamaRequest(&o); err == nil {
		t.Fatal("repeat_penalty -2 with repeat_last_n 0 was accepted")
	}
}
