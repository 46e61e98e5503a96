package api

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestRealModelEndToEnd serves the shared 13M-parameter qwen2 test model
// through the handlers with the real engine.
func TestRealModelEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a real model (seconds on a busy machine)")
	}
	model := filepath.Join(testpath.Root(t), "..", "shared", "models", "ruvllm-test-qwen2-13m-q8_0.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("shared models not found at %s", model)
	}
	ta := startAPIWith(t, true)
	system := strings.Repeat("You are a careful assistant who answers briefly. ", 3)
	chat := func(extra string) ipc.ChatCompletionResponse {
		t.Helper()
		body := `{"model":"` + model + `","temperature":0,"max_tokens":8` + extra + `,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"Name a colour."}]}`
		resp, b := ta.post(t, "/v1/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var r ipc.ChatCompletionResponse
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := chat("")
	second := chat(`,"logprobs":true,"top_logprobs":3`)
	if first.Choices[0].Message.Content != second.Choices[0].Message.Content {
		t.Fatalf("greedy answers differ: %q vs %q", first.Choices[0].Message.Content, second.Choices[0].Message.Content)
	}
	if first.Usage.CompletionTokens == 0 || first.Usage.CompletionTokens > 8 || first.Model != "ruvllm-test-qwen2-13m-q8_0" {
		t.Fatalf("first answer %+v", first)
	}
	if c := second.Usage.PromptTokensDetails.CachedTokens; c == 0 || c >= second.Usage.PromptTokens {
		t.Fatalf("second request cached %d of %d prompt tokens; want the shared prefix reused", c, second.Usage.PromptTokens)
	}
	lp := second.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != second.Usage.CompletionTokens || len(lp.Content[0].TopLogprobs) != 3 ||
		lp.Content[0].TopLogprobs[0].Logprob < lp.Content[0].TopLogprobs[2].Logprob || lp.Content[0].Logprob > 0 {
		t.Fatalf("logprobs %+v", lp)
	}

	// The streamed answer is the same text.
	_, body := ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","stream":true,"temperature":0,"max_tokens":8,"messages":[{"role":"system","content":"`+system+`"},{"role":"user","content":"Name a colour."}]}`)
	var streamed strings.Builder
	for _, e := range sseEvents(t, body) {
		if e == "[DONE]" {
			break
		}
		var c ipc.ChatCompletionChunk
		json.Unmarshal([]byte(e), &c)
		if len(c.Choices) > 0 {
			streamed.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if streamed.String() != first.Choices[0].Message.Content {
		t.Fatalf("streamed %q, want %q", streamed.String(), first.Choices[0].Message.Content)
	}

	// The next turn of a conversation finds its whole history in the cache,
	// the previous reply included: the reply's follow-up is warmed. (This
	// model spells a 40-token reply in pieces its tokenizer would merge,
	// so without warming the next turn recomputes most of the reply.)
	turn := func(msgs string, maxTokens int) ipc.ChatCompletionResponse {
		t.Helper()
		_, body := ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","temperature":0,"max_tokens":`+strconv.Itoa(maxTokens)+`,"messages":[{"role":"system","content":"`+system+`"},`+msgs+`]}`)
		var r ipc.ChatCompletionResponse
		if err := json.Unmarshal(body, &r); err != nil || len(r.Choices) == 0 {
			t.Fatalf("%v: %s", err, body)
		}
		return r
	}
	ask := `{"role":"user","content":"How do I open a file?"}`
	long := turn(ask, 40)
	h, err := ta.mgr.Acquire(context.Background(), model, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Model.(interface{ WaitWarming() }).WaitWarming()
	h.Release()
	reply, _ := json.Marshal(long.Choices[0].Message.Content)
	next := turn(ask+`,{"role":"assistant","content":`+string(reply)+`},{"role":"user","content":"Another one?"}`, 4)
	// Only the new message and the part of a block before it are computed.
	if u := next.Usage; u.PromptTokensDetails == nil || u.PromptTokens-u.PromptTokensDetails.CachedTokens > 16+12 {
		t.Fatalf("next turn cached %+v of %d prompt tokens after a reply of %d", u.PromptTokensDetails, u.PromptTokens, long.Usage.CompletionTokens)
	}

	// Embeddings are unit vectors of the model's width.
	_, body = ta.post(t, "/v1/embeddings", `{"model":"`+model+`","input":["red","green"]}`)
	var emb ipc.EmbeddingResponse
	if err := json.Unmarshal(body, &emb); err != nil || len(emb.Data) != 2 {
		t.Fatalf("embeddings %s", body)
	}
	var norm float64
	for _, x := range emb.Data[0].Embedding.([]any) {
		norm += x.(float64) * x.(float64)
	}
	if math.Abs(norm-1) > 1e-3 || emb.Usage.PromptTokens == 0 {
		t.Fatalf("embedding norm² %v, usage %+v", norm, emb.Usage)
	}

	// Ollama generate with options.
	_, body = ta.post(t, "/api/generate", `{"model":"`+model+`","prompt":"The sky is","stream":false,"options":{"temperature":0,"num_predict":5}}`)
	var gen ipc.OllamaGenerateResponse
	if err := json.Unmarshal(body, &gen); err != nil || !gen.Done || gen.EvalCount == 0 || gen.EvalCount > 5 || gen.PromptEvalCount == 0 {
		t.Fatalf("generate %s", body)
	}
}
