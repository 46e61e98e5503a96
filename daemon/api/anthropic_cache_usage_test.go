package api

import (
	"testing"
)

// TestAnthropicUsageSplitsCachedTokens: Anthropic's input_tokens exclude
// the tokens read from the cache (a client adds input_tokens and
// cache_read_input_tokens up for the prompt), in the message and in a
// stream's message_delta; a repeated request used to count its cached
// prompt twice.
func TestAnthropicUsageSplitsCachedTokens(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	msg := `{"model":"` + model + `","max_tokens":4,"temperature":0,"system":"You document the Linux kernel's scheduler, its run queues and its load balancing.","messages":[{"role":"user","content":"Explain the run queue."}]`
	count := field(ta.postOK(t, "/v1/messages/count_tokens", `{"model":"`+model+`","system":"You document the Linux kernel's scheduler, its run queues and its load balancing.","messages":[{"role":"user","content":"Explain the run queue."}]}`), "input_tokens").(float64)
	for i, tc := range []struct {
		stream     bool
		wantCached bool // the prompt was computed by an earlier request
	}{
		{false, false},
		{false, true},
		{true, true},
	} {
		var usage map[string]any
		if tc.stream {
			resp, b := ta.post(t, "/v1/messages", msg+`,"stream":true}`)
			names, data := sseNamed(t, b)
			if resp.StatusCode != 200 || len(names) < 2 || names[len(names)-2] != "message_delta" {
				t.Fatalf("stream %d: %d %v", i, resp.StatusCode, names)
			}
			usage = data[len(data)-2]["usage"].(map[string]any)
		} else {
			usage = ta.postOK(t, "/v1/messages", msg+`}`)["usage"].(map[string]any)
		}
		input, cached := usage["input_tokens"].(float64), usage["cache_read_input_tokens"].(float64)
		if input+cached != count || (tc.wantCached && (cached < count/2 || input >= count/2)) {
			t.Errorf("request %d (stream %v): input_tokens %v + cache_read_input_tokens %v, want %v in all, most of it cached: %v",
				i, tc.stream, input, cached, count, tc.wantCached)
		}
	}
}
