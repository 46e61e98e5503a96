package api

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
	"github.com/ruvllm/ruvllm/ipc"
)

// longTurns is a JSON array of n user/assistant turns ending with a user
// message; longMessages puts a system prompt before them.
func longTurns(n int) []ipc.Message {
	var msgs []ipc.Message
	for i := range n {
		msgs = append(msgs,
			ipc.Message{Role: "user", Content: fmt.Sprintf("Question %d: what does section %d of the memory management guide describe, and why?", i, i)},
			ipc.Message{Role: "assistant", Content: fmt.Sprintf("Section %d describes how pages are reclaimed under memory pressure, and which lists hold them.", i)})
	}
	return append(msgs, ipc.Message{Role: "user", Content: "And what does the last section say about swap?"})
}

const overflowSystem = "You answer questions about the kernel's documentation."

func longMessages(n int) string {
	b, _ := json.Marshal(append([]ipc.Message{{Role: "system", Content: overflowSystem}}, longTurns(n)...))
	return string(b)
}

// TestContextOverflow serves the shared qwen2 model (context 2048) a
// conversation longer than its context through each protocol: chats drop
// their oldest turns and say so in usage, Ollama's requests also shift a
// reply that fills num_ctx, error mode (per request or as the daemon's
// default) is a 400 with OpenAI's code, and an unknown mode is refused.
func TestContextOverflow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real model over 2k-token prompts")
	}
	model := filepath.Join(testpath.Root(t), "..", "shared", "models", "ruvllm-test-qwen2-13m-q8_0.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("shared models not found at %s", model)
	}
	ta := startAPIWith(t, true)
	msgs := longMessages(40)
	post := func(path, body string, status int) map[string]any {
		t.Helper()
		resp, b := ta.post(t, path, body)
		if resp.StatusCode != status {
			t.Fatalf("%s: status %d, want %d: %.300s", path, resp.StatusCode, status, b)
		}
		return mustJSON(t, string(b))
	}
	chat := `{"model":"` + model + `","temperature":0,"max_tokens":4,"messages":` + msgs
	r := post("/v1/chat/completions", chat+`}`, 200)
	dropped := field(r, "usage", "context_overflow", "dropped_messages").(float64)
	if dropped < 2 || int(dropped)%2 != 0 || field(r, "usage", "context_overflow", "dropped_tokens").(float64) < 100 ||
		field(r, "usage", "prompt_tokens").(float64) > 2048-4 {
		t.Fatalf("chat usage %v: want whole turns dropped to fit 2048 tokens", field(r, "usage"))
	}
	// Streamed, the usage chunk says the same.
	_, body := ta.post(t, "/v1/chat/completions", chat+`,"stream":true,"stream_options":{"include_usage":true}}`)
	var usage *ipc.Usage
	for _, e := range sseEvents(t, body) {
		var c ipc.ChatCompletionChunk
		if e != "[DONE]" && json.Unmarshal([]byte(e), &c) == nil && c.Usage != nil {
			usage = c.Usage
		}
	}
	if usage == nil || usage.ContextOverflow == nil || usage.ContextOverflow.DroppedMessages != int(dropped) {
		t.Fatalf("streamed usage %+v", usage)
	}
	e := post("/v1/chat/completions", chat+`,"context_overflow":"error"}`, 400)
	if field(e, "error", "code") != "context_length_exceeded" {
		t.Fatalf("error mode: %v", e)
	}
	e = post("/v1/chat/completions", chat+`,"context_overflow":"truncate"}`, 400)
	if field(e, "error", "param") != "context_overflow" {
		t.Fatalf("unknown mode: %v", e)
	}
	// The daemon's default applies to requests that name no mode.
	if err := ta.api.SetContextOverflow("error"); err != nil {
		t.Fatal(err)
	}
	post("/v1/chat/completions", chat+`}`, 400)
	post("/v1/chat/completions", chat+`,"context_overflow":"drop_oldest"}`, 200)
	if err := ta.api.SetContextOverflow("sideways"); err == nil {
		t.Fatal("an unknown default was accepted")
	}
	if err := ta.api.SetContextOverflow(OverflowAuto); err != nil {
		t.Fatal(err)
	}
	// Raw completions keep OpenAI's error by default.
	long, _ := json.Marshal(strings.Repeat("The page cache holds file data. ", 400))
	post("/v1/completions", `{"model":"`+model+`","max_tokens":2,"prompt":`+string(long)+`}`, 400)

	// Anthropic and Responses report it in their usage.
	turns, _ := json.Marshal(longTurns(40))
	a := post("/v1/messages", `{"model":"`+model+`","max_tokens":4,"temperature":0,"system":"`+overflowSystem+`","messages":`+string(turns)+`}`, 200)
	if field(a, "usage", "context_overflow", "dropped_messages").(float64) < 2 {
		t.Fatalf("messages usage %v", field(a, "usage"))
	}
	rs := post("/v1/responses", `{"model":"`+model+`","max_output_tokens":4,"temperature":0,"input":`+msgs+`}`, 200)
	if field(rs, "usage", "context_overflow", "dropped_messages").(float64) < 2 || field(rs, "truncation") != "auto" {
		t.Fatalf("responses %v, usage %v", field(rs, "truncation"), field(rs, "usage"))
	}
	post("/v1/responses", `{"model":"`+model+`","max_output_tokens":4,"input":`+msgs+`,"truncation":"disabled"}`, 400)

	// Ollama: num_ctx 256, the conversation drops turns; truncate false
	// refuses it.
	oc := post("/api/chat", `{"model":"`+model+`","stream":false,"messages":`+longMessages(6)+`,"options":{"num_ctx":256,"num_predict":4,"temperature":0}}`, 200)
	if field(oc, "context_overflow", "dropped_messages").(float64) < 2 || field(oc, "prompt_eval_count").(float64) > 256 {
		t.Fatalf("ollama chat %v", oc)
	}
	post("/api/chat", `{"model":"`+model+`","stream":false,"truncate":false,"messages":`+longMessages(6)+`,"options":{"num_ctx":256,"num_predict":4}}`, 400)
	// A reply longer than num_ctx shifts (Ollama's default) or, with
	// shift false, stops at the context's end.
	gen := `{"model":"` + model + `","stream":false,"raw":true,"prompt":"The page cache holds file data in memory so that","options":{"num_ctx":128,"num_predict":200,"temperature":0}`
	g := post("/api/generate", gen+`}`, 200)
	if field(g, "eval_count").(float64) != 200 || field(g, "done_reason") != "length" || field(g, "context_overflow", "shifts").(float64) < 2 {
		t.Fatalf("shifting generate: %v", g)
	}
	g = post("/api/generate", gen+`,"shift":false}`, 200)
	if n := field(g, "eval_count").(float64); n+field(g, "prompt_eval_count").(float64) != 128 || field(g, "done_reason") != "length" || g["context_overflow"] != nil {
		t.Fatalf("generate without shift: %v", g)
	}
	post("/api/generate", gen[:len(gen)-1]+`,"num_keep":-1}}`, 400)
}
