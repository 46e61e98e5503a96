package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/ipc"
)

// script is what the test double generates, one token per piece.
var script = []string{"Hello", " world", ",", " this", " is", " ruvllm", "."}

// fakeModel is a deterministic engine double: it streams script (or, for
// the "slow" model, an endless stream with a delay per token), records the
// request it got, and notes how many tokens it produced after its context
// was cancelled.
type fakeModel struct {
	name    string
	delay   time.Duration
	endless bool
	fail    bool

	// script, when set, replaces the package's script; template is the
	// chat template Info reports; grammar makes the model accept
	// constraints and tools (as grammarFake, which enforces nothing).
	script   []string
	template string
	grammar  bool
	// reasoning makes it a thinking model (thinkingFakes).
	reasoning *chat.Reasoning

	mu         sync.Mutex
	last       llm.Request
	noTemplate bool     // refuse chat requests like a model without a chat template
	cancelSeen chan int // tokens emitted after ctx was done, once per cancelled request
}

func (f *fakeModel) Info() llm.Info {
	return llm.Info{Name: f.name, Architecture: "fake", Parameters: 1234567, FileType: "Q8_0", ContextLength: 2048, EmbeddingSize: 3, VocabSize: 100,
		ChatTemplate: f.template, Reasoning: f.reasoning}
}

func (f *fakeModel) lastRequest() llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *fakeModel) Generate(ctx context.Context, req llm.Request, onToken func(llm.Token) error) (llm.Result, error) {
	f.mu.Lock()
	f.last = req
	noTemplate := f.noTemplate
	f.mu.Unlock()
	if noTemplate && len(req.Messages) > 0 {
		return llm.Result{}, llm.ErrNoTemplate
	}
	start := time.Now()
	res := llm.Result{PromptTokens: 10 + len(req.Messages), CachedTokens: 4, FinishReason: llm.FinishStop}
	if !req.NoSpeculation {
		res.Speculation = llm.SpecResult{Drafted: 6, Accepted: 4, Verifications: 3}
	}
	if f.fail {
		return res, errors.New("engine exploded")
	}
	var cancelledAt time.Time
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() { mu.Lock(); cancelledAt = time.Now(); mu.Unlock() })
	defer stop()
	after := 0
	script := script
	if f.script != nil {
		script = f.script
	}
	for i := 0; ; i++ {
		if !f.endless && i == len(script) {
			break
		}
		if req.MaxTokens > 0 && i == req.MaxTokens {
			res.FinishReason = llm.FinishLength
			break
		}
		if err := ctx.Err(); err != nil {
			if f.cancelSeen != nil {
				f.cancelSeen <- after
			}
			return res, err
		}
		mu.Lock()
		if !cancelledAt.IsZero() {
			after++
		}
		mu.Unlock()
		t := llm.Token{ID: int32(i), Text: script[i%len(script)], Logprob: -0.5}
		if req.TopLogprobs > 0 {
			t.Top = []llm.TokenLogprob{{ID: int32(i), Text: t.Text, Logprob: -0.5}, {ID: 99, Text: "x", Logprob: -2}}
		}
		if i == 0 {
			res.Timings.TTFT = time.Since(start) + time.Millisecond
		}
		res.CompletionTokens++
		if err := onToken(t); err != nil {
			if f.cancelSeen != nil {
				f.cancelSeen <- after
			}
			return res, err
		}
		if f.delay > 0 {
			time.Sleep(f.delay)
		}
	}
	res.Timings.Eval = 6 * time.Millisecond
	res.Timings.PromptEval = 2 * time.Millisecond
	res.Timings.Total = time.Since(start)
	return res, nil
}

func (f *fakeModel) Embed(ctx context.Context, inputs []string, opts llm.EmbedOptions) ([][]float32, int, error) {
	out := make([][]float32, len(inputs))
	n := 0
	for i, s := range inputs {
		out[i] = []float32{0.6, 0.8, 0}
		n += len(s)
	}
	return out, n, nil
}

func (f *fakeModel) Close() error { return nil }

// grammarFake is a fakeModel that takes constraints and tools: it compiles
// nothing and generates its script as it is.
type grammarFake struct{ *fakeModel }

func (grammarFake) Grammar(grammar.Spec) (*grammar.Constraint, error)         { return nil, nil }
func (grammarFake) ComposedGrammar(grammar.Part) (*grammar.Constraint, error) { return nil, nil }

// testAPI is a real daemon server on a temporary socket with the double
// behind its model manager.
type testAPI struct {
	api    *API
	srv    *daemon.Server
	mgr    *models.Manager
	http   *http.Client
	fakes  map[string]*fakeModel
	sock   string
	cancel context.CancelFunc
	done   chan error
}

func startAPI(t testing.TB) *testAPI { t.Helper(); return startAPIWith(t, false) }

// startAPIWith starts the server; with realEngine, model files outside the
// test's models directory are opened with the engine's llm.Load.
func startAPIWith(t testing.TB, realEngine bool) *testAPI {
	t.Helper()
	dir, err := os.MkdirTemp("", "rvapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fakes := map[string]*fakeModel{
		"fake":    {name: "fake"},
		"slow":    {name: "slow", delay: 5 * time.Millisecond, endless: true, cancelSeen: make(chan int, 4)},
		"stream":  {name: "stream", delay: time.Millisecond},
		"failing": {name: "failing", fail: true},
		// A Hermes/Qwen tool caller that writes a newline before its call.
		"hermes": {name: "hermes", grammar: true, template: "{{ tools }} <tool_call> {{ messages }}",
			script: []string{"\n", "<tool_", "call>", "\n", `{"name": "get_weather", "arguments": {"city": "Oslo"}}`, "\n", "</tool_call>"}},
	}
	for name, f := range thinkingFakes(t) {
		fakes[name] = f
	}
	mdir := filepath.Join(dir, "models")
	os.MkdirAll(mdir, 0o700)
	for _, n := range []string{"fake", "slow", "stream", "failing", "broken", "hermes", "thinker", "r1"} {
		os.WriteFile(filepath.Join(mdir, n+".gguf"), []byte("GGUF"), 0o600)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	sock := filepath.Join(dir, "s.sock")
	srv, err := daemon.New(daemon.Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), ModelsDir: mdir,
		MaxBodyBytes: 64 << 10, Version: "test-1", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	mgr := models.New(models.Options{Dir: mdir, Default: "fake", Logger: logger, Events: srv.Events(), MaxLoaded: 8, Registry: srv.Store(),
		MemAvailable: func() (int64, bool) { return 0, false },
		Loader: func(ctx context.Context, path string) (models.Model, error) {
			if realEngine && filepath.Dir(path) != mdir {
				// Lookup at a fixed draft length: what the tests see drafted
				// must not depend on step timings (a loaded machine).
				return llm.Load(ctx, path, llm.Options{Threads: 1, Sequences: 2, Speculate: spec.KindLookup, SpecControl: spec.Options{Fixed: 4}})
			}
			if f := fakes[llm.NameFromPath(path)]; f != nil {
				if f.grammar {
					return grammarFake{f}, nil
				}
				return f, nil
			}
			return nil, errors.New("not a GGUF file")
		}})
	api := Register(srv, mgr)
	srv.OnShutdown(mgr.Close)
	ctx, cancel := context.WithCancel(context.Background())
	ta := &testAPI{api: api, srv: srv, mgr: mgr, fakes: fakes, sock: sock, cancel: cancel, done: make(chan error, 1)}
	go func() { ta.done <- srv.Run(ctx, time.Second) }()
	ta.http = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 64,
	}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := ta.http.Get("http://ruvllm/v1/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() {
		cancel()
		<-ta.done
	})
	return ta
}

func (ta *testAPI) post(t testing.TB, path, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := ta.http.Post("http://ruvllm"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func (ta *testAPI) get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	resp, err := ta.http.Get("http://ruvllm" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		if !strings.HasPrefix(block, "data: ") || strings.Contains(block, "\n") {
			t.Fatalf("malformed SSE event %q", block)
		}
		out = append(out, strings.TrimPrefix(block, "data: "))
	}
	return out
}

// postOK posts body to path, fails the test unless the answer is a 200,
// and returns the answer's JSON object.
func (ta *testAPI) postOK(t *testing.T, path, body string) map[string]any {
	t.Helper()
	resp, b := ta.post(t, path, body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %s", path, body, resp.StatusCode, b)
	}
	return mustJSON(t, string(b))
}

func mustJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %q: %v", s, err)
	}
	return m
}

// field walks a decoded JSON value along a path of keys and indices.
func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func TestOpenAIChatStreamShape(t *testing.T) {
	ta := startAPI(t)
	resp, body := ta.post(t, "/v1/chat/completions", `{"model":"fake","stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	ev := sseEvents(t, body)
	if ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", ev[len(ev)-1])
	}
	ev = ev[:len(ev)-1]
	var id string
	var text strings.Builder
	for i, e := range ev {
		c := mustJSON(t, e)
		if c["object"] != "chat.completion.chunk" || c["model"] != "fake" || c["created"].(float64) <= 0 {
			t.Fatalf("chunk %d header fields: %s", i, e)
		}
		if i == 0 {
			id = c["id"].(string)
			if !strings.HasPrefix(id, "chatcmpl-") || field(c, "choices", 0, "delta", "role") != "assistant" {
				t.Fatalf("first chunk %s", e)
			}
		} else if c["id"] != id {
			t.Fatalf("chunk %d id %v != %s", i, c["id"], id)
		}
		switch {
		case i == len(ev)-1: // usage chunk
			if ch := c["choices"].([]any); len(ch) != 0 {
				t.Fatalf("usage chunk has choices: %s", e)
			}
			if field(c, "usage", "prompt_tokens") != 12.0 || field(c, "usage", "completion_tokens") != 7.0 ||
				field(c, "usage", "total_tokens") != 19.0 || field(c, "usage", "prompt_tokens_details", "cached_tokens") != 4.0 {
				t.Fatalf("usage chunk %s", e)
			}
		case i == len(ev)-2: // finish chunk
			if field(c, "choices", 0, "finish_reason") != "stop" || c["usage"] != nil {
				t.Fatalf("finish chunk %s", e)
			}
		default:
			fr, present := c["choices"].([]any)[0].(map[string]any)["finish_reason"]
			if !present || fr != nil {
				t.Fatalf("content chunk %d must carry finish_reason null: %s", i, e)
			}
			if s, _ := field(c, "choices", 0, "delta", "content").(string); s != "" {
				text.WriteString(s)
			}
		}
	}
	if got, want := text.String(), strings.Join(script, ""); got != want {
		t.Fatalf("streamed text %q, want %q", got, want)
	}
}

func TestOpenAIChatParametersAndResponse(t *testing.T) {
	ta := startAPI(t)
	resp, body := ta.post(t, "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}],
		"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"presence_penalty":0.25,"frequency_penalty":0.5,"seed":7,
		"stop":"\n\n","max_completion_tokens":3,"logit_bias":{"15":-100},"logprobs":true,"top_logprobs":2,"unknown_field":{"x":1}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	r := mustJSON(t, string(body))
	if r["object"] != "chat.completion" || field(r, "choices", 0, "message", "content") != "Hello world," ||
		field(r, "choices", 0, "message", "role") != "assistant" || field(r, "choices", 0, "finish_reason") != "length" ||
		field(r, "usage", "completion_tokens") != 3.0 || field(r, "usage", "prompt_tokens_details", "cached_tokens") != 4.0 {
		t.Fatalf("response %s", body)
	}
	if lp := field(r, "choices", 0, "logprobs", "content"); len(lp.([]any)) != 3 || field(lp, 1, "token") != " world" ||
		len(field(lp, 1, "top_logprobs").([]any)) != 2 {
		t.Fatalf("logprobs %v", lp)
	}
	got := ta.fakes["fake"].lastRequest()
	p := got.Sampling
	if p.Temperature != 0.5 || p.TopP != 0.9 || p.TopK != 40 || p.MinP != 0.05 || p.PresencePenalty != 0.25 ||
		p.FrequencyPenalty != 0.5 || p.Seed != 7 || p.LogitBias[15] != -100 || got.MaxTokens != 3 ||
		len(got.Stop) != 1 || got.Stop[0] != "\n\n" || !got.Logprobs || got.TopLogprobs != 2 ||
		len(got.Messages) != 1 || got.Messages[0].Content != "hi" {
		t.Fatalf("engine request %+v", got)
	}
	ta.post(t, "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"stop":["a","b"],"max_tokens":2}`)
	if got := ta.fakes["fake"].lastRequest(); len(got.Stop) != 2 || got.MaxTokens != 2 {
		t.Fatalf("stop array / max_tokens: %+v", got)
	}
}

// TestStopNull: "stop": null is no stop, as OpenAI takes it and as clients
// that serialise every field send it; it was read as one empty stop string
// and refused ("stop[0] must not be empty"). (llama-server's /completion
// reads stop with the same type.)
func TestStopNull(t *testing.T) {
	ta := startAPI(t)
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stop":null}`},
		{"/v1/completions", `{"model":"fake","prompt":"Once","max_tokens":2,"stop":null}`},
	} {
		resp, body := ta.post(t, c.path, c.body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s with stop null: %d %s", c.path, resp.StatusCode, body)
		}
		if got := ta.fakes["fake"].lastRequest(); len(got.Stop) != 0 {
			t.Fatalf("%s with stop null: stops %q", c.path, got.Stop)
		}
	}
}

func TestOpenAICompletions(t *testing.T) {
	ta := startAPI(t)
	resp, body := ta.post(t, "/v1/completions", `{"model":"fake","prompt":"Once","max_tokens":2}`)
	r := mustJSON(t, string(body))
	if resp.StatusCode != 200 || r["object"] != "text_completion" || field(r, "choices", 0, "text") != "Hello world" ||
		field(r, "choices", 0, "finish_reason") != "length" || field(r, "usage", "completion_tokens") != 2.0 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := ta.fakes["fake"].lastRequest(); got.Prompt != "Once" || got.Messages != nil {
		t.Fatalf("engine request %+v", got)
	}
	_, body = ta.post(t, "/v1/completions", `{"model":"fake","prompt":"Once","max_tokens":3,"logprobs":2}`)
	var lr ipc.CompletionResponse
	if err := json.Unmarshal(body, &lr); err != nil {
		t.Fatal(err)
	}
	lp := lr.Choices[0].Logprobs
	if lp == nil || strings.Join(lp.Tokens, "|") != "Hello| world|," || len(lp.TokenLogprobs) != 3 || lp.TokenLogprobs[0] == nil || *lp.TokenLogprobs[0] != -0.5 ||
		lp.TextOffset[1] != 5 || lp.TextOffset[2] != 11 || len(lp.TopLogprobs[0]) != 2 || lp.TopLogprobs[0]["x"] != -2 {
		t.Fatalf("legacy logprobs %s", body)
	}
	if got := ta.fakes["fake"].lastRequest(); !got.Logprobs || got.TopLogprobs != 2 {
		t.Fatalf("logprobs request %+v", got)
	}
	if resp, body := ta.post(t, "/v1/completions", `{"model":"fake","prompt":"x","logprobs":6}`); resp.StatusCode != 400 {
		t.Fatalf("logprobs 6: %d %s", resp.StatusCode, body)
	}
	ta.post(t, "/v1/completions", `{"model":"fake","prompt":["Twice"]}`)
	if got := ta.fakes["fake"].lastRequest(); got.Prompt != "Twice" {
		t.Fatalf("one-string array prompt: %+v", got)
	}
	ta.post(t, "/v1/completions", `{"model":"fake","prompt":[1,2,3]}`)
	if got := ta.fakes["fake"].lastRequest(); got.Prompt != "" || len(got.Tokens) != 3 || got.Tokens[2] != 3 {
		t.Fatalf("token prompt: %+v", got)
	}
	for _, bad := range []string{`["a","b"]`, `{}`, `""`} {
		if resp, body := ta.post(t, "/v1/completions", `{"model":"fake","prompt":`+bad+`}`); resp.StatusCode != 400 {
			t.Fatalf("prompt %s: %d %s", bad, resp.StatusCode, body)
		}
	}
	_, body = ta.post(t, "/v1/completions", `{"model":"fake","prompt":"Once","stream":true}`)
	ev := sseEvents(t, body)
	if ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("no [DONE]: %s", body)
	}
	var text strings.Builder
	for _, e := range ev[:len(ev)-1] {
		c := mustJSON(t, e)
		if c["object"] != "text_completion" {
			t.Fatalf("chunk %s", e)
		}
		text.WriteString(field(c, "choices", 0, "text").(string))
	}
	last := mustJSON(t, ev[len(ev)-2])
	if text.String() != strings.Join(script, "") || field(last, "choices", 0, "finish_reason") != "stop" {
		t.Fatalf("stream text %q, last %v", text.String(), last)
	}
}

func TestOllamaChatStreamShape(t *testing.T) {
	ta := startAPI(t)
	resp, body := ta.post(t, "/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}],
		"options":{"temperature":0.2,"top_k":5,"top_p":0.8,"min_p":0.1,"typical_p":0.9,"repeat_penalty":1.1,"repeat_last_n":32,
		"presence_penalty":0.3,"frequency_penalty":0.4,"seed":42,"num_predict":5,"stop":["END"],"num_ctx":4096},"keep_alive":"10m"}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
		t.Fatalf("status %d type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	var text strings.Builder
	for i, l := range lines {
		m := mustJSON(t, l)
		if m["model"] != "fake" || m["created_at"] == "" || field(m, "message", "role") != "assistant" {
			t.Fatalf("line %d: %s", i, l)
		}
		if i < len(lines)-1 {
			if m["done"] != false {
				t.Fatalf("line %d not done:false: %s", i, l)
			}
			text.WriteString(field(m, "message", "content").(string))
			continue
		}
		if m["done"] != true || m["done_reason"] != "length" || m["eval_count"] != 5.0 || m["prompt_eval_count"] != 11.0 ||
			m["total_duration"].(float64) <= 0 || m["eval_duration"].(float64) <= 0 || field(m, "message", "content") != "" {
			t.Fatalf("final line %s", l)
		}
	}
	if text.String() != strings.Join(script[:5], "") {
		t.Fatalf("text %q", text.String())
	}
	got := ta.fakes["fake"].lastRequest()
	p := got.Sampling
	if p.Temperature != 0.2 || p.TopK != 5 || p.TopP != 0.8 || p.MinP != 0.1 || p.TypicalP != 0.9 || p.RepeatPenalty != 1.1 ||
		p.RepeatLastN != 32 || p.PresencePenalty != 0.3 || p.FrequencyPenalty != 0.4 || p.Seed != 42 || got.MaxTokens != 5 ||
		len(got.Stop) != 1 || got.Stop[0] != "END" {
		t.Fatalf("engine request %+v", got)
	}
	if l := ta.mgr.Loaded(); len(l) != 1 || time.Until(l[0].ExpiresAt) < 9*time.Minute {
		t.Fatalf("keep_alive 10m not applied: %+v", l)
	}
}

func TestOllamaGenerate(t *testing.T) {
	ta := startAPI(t)
	resp, body := ta.post(t, "/api/generate", `{"model":"fake","prompt":"Why?","system":"Answer.","stream":false}`)
	m := mustJSON(t, string(body))
	if resp.StatusCode != 200 || m["response"] != strings.Join(script, "") || m["done"] != true || m["done_reason"] != "stop" ||
		m["eval_count"] != 7.0 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	got := ta.fakes["fake"].lastRequest()
	if len(got.Messages) != 2 || got.Messages[0].Role != "system" || got.Messages[1].Content != "Why?" {
		t.Fatalf("engine request %+v", got)
	}
	ta.post(t, "/api/generate", `{"model":"fake","prompt":"<s>raw","raw":true,"stream":false}`)
	if got := ta.fakes["fake"].lastRequest(); !got.Raw || got.Prompt != "<s>raw" || got.Messages != nil {
		t.Fatalf("raw request %+v", got)
	}
	// keep_alive 0 with no prompt unloads.
	_, body = ta.post(t, "/api/generate", `{"model":"fake","keep_alive":0}`)
	if m := mustJSON(t, string(body)); m["done_reason"] != "unload" {
		t.Fatalf("unload answer %s", body)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(ta.mgr.Loaded()) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("keep_alive 0 did not unload")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestErrors(t *testing.T) {
	ta := startAPI(t)
	big := `{"model":"fake","messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string // substring of the error message
	}{
		{"bad json", "/v1/chat/completions", `{"model":`, 400, "invalid JSON"},
		{"wrong type", "/v1/chat/completions", `{"model":"fake","messages":"hi"}`, 400, `field "messages" must be an array`},
		{"wrong nested type", "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":5}]}`, 400, `"messages.content" must be a string`},
		{"wrong number", "/v1/chat/completions", `{"model":"fake","temperature":"hot","messages":[]}`, 400, `"temperature" must be a number`},
		{"too large", "/v1/chat/completions", big, 413, "exceeds"},
		{"unknown model", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, "model not found"},
		{"n>1 on a model without choices", "/v1/chat/completions", `{"model":"fake","n":2,"messages":[{"role":"user","content":"hi"}]}`, 400, "several choices"},
		{"n too large", "/v1/chat/completions", `{"model":"fake","n":99,"messages":[{"role":"user","content":"hi"}]}`, 400, "between 1 and 16"},
		{"adapters", "/v1/chat/completions", `{"model":"fake","adapters":[{"name":"tone"}],"messages":[{"role":"user","content":"hi"}]}`, 400, "adapter support not available"},
		{"load fails", "/v1/chat/completions", `{"model":"broken","messages":[{"role":"user","content":"hi"}]}`, 503, "not a GGUF file"},
		{"engine error", "/v1/completions", `{"model":"failing","prompt":"x"}`, 500, "engine exploded"},
		{"empty messages", "/v1/chat/completions", `{"model":"fake","messages":[]}`, 400, "messages"},
		{"ollama bad json", "/api/chat", `[1,2`, 400, "invalid JSON"},
		{"ollama wrong type", "/api/generate", `{"model":"fake","prompt":"x","options":{"num_predict":"ten"}}`, 400, `"options.num_predict" must be an integer, not string`},
		{"ollama format on a model without grammars", "/api/generate", `{"model":"fake","prompt":"x","format":"json"}`, 400, "cannot constrain"},
		{"ollama adapters", "/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"options":{"adapters":[{"name":"a"}]}}`, 400, "adapter support not available"},
		{"ollama unknown model", "/api/chat", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, "model not found"},
		{"ollama keep_alive", "/api/chat", `{"model":"fake","keep_alive":"soon"}`, 400, "keep_alive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := ta.post(t, tc.path, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			var msg string
			if strings.HasPrefix(tc.path, "/api/") {
				var e struct{ Error string }
				if err := json.Unmarshal(body, &e); err != nil {
					t.Fatalf("Ollama error shape: %s", body)
				}
				msg = e.Error
			} else {
				var e struct {
					Error struct {
						Message, Type string
						Param, Code   any
					}
				}
				if err := json.Unmarshal(body, &e); err != nil || e.Error.Type == "" {
					t.Fatalf("OpenAI error shape: %s", body)
				}
				msg = e.Error.Message
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q does not contain %q", msg, tc.want)
			}
		})
	}
}

func TestDisconnectCancelsWithinOneToken(t *testing.T) {
	ta := startAPI(t)
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"slow","stream":true,"messages":[{"role":"user","content":"go"}]}`},
		{"/api/generate", `{"model":"slow","prompt":"go"}`},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://ruvllm"+tc.path, strings.NewReader(tc.body))
		resp, err := ta.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		for n := 0; n < 3; {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(line) != "" {
				n++
			}
		}
		cancel()
		resp.Body.Close()
		select {
		case after := <-ta.fakes["slow"].cancelSeen:
			if after > 1 {
				t.Fatalf("%s: %d tokens generated after the client left, want at most 1", tc.path, after)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: generation not cancelled after the client disconnected", tc.path)
		}
	}
	// The cancelled requests are logged as such.
	recs, err := ta.srv.Store().RecentRequests(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(recs) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		recs, _ = ta.srv.Store().RecentRequests(context.Background(), 10)
	}
	if len(recs) != 2 || recs[0].Status != "cancelled" || recs[1].Status != "cancelled" {
		t.Fatalf("request log %+v", recs)
	}
}

// TestRequestLogClientName checks the client name a request is logged
// under: a name of any length or bytes a client sends is kept printable
// and at most maxNameBytes long, so the request log (10,000 records) is
// not as large as the headers clients choose.
func TestRequestLogClientName(t *testing.T) {
	ta := startAPI(t)
	for _, tc := range []struct {
		name, header, value, want string
	}{
		{"plain", "X-Ruvllm-Client", "notes-app", "notes-app"},
		{"long name", "X-Ruvllm-Client", strings.Repeat("a", 100<<10), strings.Repeat("a", maxNameBytes)},
		{"cut at a rune", "X-Ruvllm-Client", "a" + strings.Repeat("é", 200), "a" + strings.Repeat("é", (maxNameBytes-1)/2)},
		{"tab", "X-Ruvllm-Client", "a\tb", "a_b"},
		{"long user agent", "User-Agent", strings.Repeat("u", 300), strings.Repeat("u", maxNameBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", "http://ruvllm/v1/chat/completions", strings.NewReader(`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set(tc.header, tc.value)
			resp, err := ta.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			recs, err := ta.srv.Store().RecentRequests(context.Background(), 1)
			if err != nil || len(recs) != 1 {
				t.Fatalf("records %+v, %v", recs, err)
			}
			if recs[0].Client != tc.want {
				t.Fatalf("client %q (%d bytes), want %q", recs[0].Client, len(recs[0].Client), tc.want)
			}
		})
	}
}

func TestRequestLogAndMetrics(t *testing.T) {
	ta := startAPI(t)
	req, _ := http.NewRequest("POST", "http://ruvllm/v1/chat/completions", strings.NewReader(`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Ruvllm-Client", "notes-app")
	resp, err := ta.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	recs, err := ta.srv.Store().RecentRequests(context.Background(), 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %+v, %v", recs, err)
	}
	r := recs[0]
	if r.Client != "notes-app" || r.Model != "fake" || r.PromptTokens != 11 || r.CachedTokens != 4 || r.CompletionTokens != 7 ||
		r.Status != "ok" || r.TTFTMillis <= 0 || r.TokensPerSecond != 1000 || r.ID == "" {
		t.Fatalf("record %+v", r)
	}
	_, body := ta.get(t, "/metrics")
	for _, want := range []string{
		`ruvllm_requests_total{endpoint="chat.completions",status="ok"} 1`,
		`ruvllm_tokens_total{kind="cached"} 4`,
		`ruvllm_tokens_total{kind="completion"} 7`,
		`ruvllm_time_to_first_token_seconds_count 1`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestListingEndpoints(t *testing.T) {
	ta := startAPI(t)
	status, body := ta.get(t, "/v1/models")
	m := mustJSON(t, string(body))
	if status != 200 || m["object"] != "list" || len(m["data"].([]any)) != 8 || field(m, "data", 2, "id") != "fake" ||
		field(m, "data", 1, "object") != "model" {
		t.Fatalf("/v1/models %s", body)
	}
	_, body = ta.get(t, "/api/tags")
	if m := mustJSON(t, string(body)); len(m["models"].([]any)) != 8 || field(m, "models", 0, "details", "format") != "gguf" {
		t.Fatalf("/api/tags %s", body)
	}
	_, body = ta.get(t, "/api/ps")
	if m := mustJSON(t, string(body)); len(m["models"].([]any)) != 0 {
		t.Fatalf("/api/ps before any load %s", body)
	}
	resp, body := ta.post(t, "/api/show", `{"model":"fake"}`)
	if m := mustJSON(t, string(body)); resp.StatusCode != 200 || field(m, "details", "family") != "fake" ||
		field(m, "details", "quantization_level") != "Q8_0" || field(m, "model_info", "context_length") != 2048.0 {
		t.Fatalf("/api/show %s", body)
	}
	_, body = ta.get(t, "/api/ps")
	if m := mustJSON(t, string(body)); field(m, "models", 0, "name") != "fake" || field(m, "models", 0, "expires_at") == nil {
		t.Fatalf("/api/ps %s", body)
	}
	_, body = ta.get(t, "/api/version")
	if m := mustJSON(t, string(body)); m["version"] != "test-1" {
		t.Fatalf("/api/version %s", body)
	}
	_, body = ta.post(t, "/v1/embeddings", `{"model":"fake","input":["ab","cde"]}`)
	if m := mustJSON(t, string(body)); len(m["data"].([]any)) != 2 || field(m, "data", 1, "index") != 1.0 ||
		field(m, "data", 0, "object") != "embedding" || field(m, "usage", "prompt_tokens") != 5.0 {
		t.Fatalf("/v1/embeddings %s", body)
	}
	_, body = ta.post(t, "/v1/embeddings", `{"model":"fake","input":"one"}`)
	if m := mustJSON(t, string(body)); len(m["data"].([]any)) != 1 {
		t.Fatalf("/v1/embeddings string input %s", body)
	}
	_, body = ta.post(t, "/api/embed", `{"model":"fake","input":"abc"}`)
	if m := mustJSON(t, string(body)); len(m["embeddings"].([]any)) != 1 || m["prompt_eval_count"] != 3.0 {
		t.Fatalf("/api/embed %s", body)
	}
	// Token ids (LangChain's default, made with OpenAI's tokenizer) are a
	// 400 naming input and the way out, not a bare "invalid request".
	for _, in := range []string{`[1,2,3]`, `[[1,2],[3]]`} {
		resp, body := ta.post(t, "/v1/embeddings", `{"model":"fake","input":`+in+`}`)
		var e ipc.OpenAIError
		json.Unmarshal(body, &e)
		if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != "input" || !strings.Contains(e.Error.Message, "token ids") ||
			!strings.Contains(e.Error.Message, "check_embedding_ctx_length") {
			t.Fatalf("/v1/embeddings with token ids %s: %d %s", in, resp.StatusCode, body)
		}
	}
	recs, err := ta.srv.Store().RecentRequests(context.Background(), 10)
	if err != nil || len(recs) != 3 || recs[0].Endpoint != "api.embed" || recs[0].PromptTokens != 3 || recs[2].Endpoint != "embeddings" {
		t.Fatalf("embedding requests not logged: %+v %v", recs, err)
	}
}

// streamOnce runs one streaming chat and returns its text.
func streamOnce(ta *testAPI, model string) (string, error) {
	resp, err := ta.http.Post("http://ruvllm/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return "", err
		}
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if !done {
		return "", errors.New("stream ended without [DONE]")
	}
	return text.String(), sc.Err()
}

func TestConcurrentStreamingClients(t *testing.T) {
	ta := startAPI(t)
	const clients = 16
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text, err := streamOnce(ta, "stream")
			if err == nil && text != strings.Join(script, "") {
				err = fmt.Errorf("text %q", text)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := ta.srv.Store().RecentRequests(context.Background(), 100)
	if len(recs) != clients {
		t.Fatalf("%d requests logged, want %d", len(recs), clients)
	}
}

// BenchmarkStreaming64 measures the daemon's per-request overhead with 64
// concurrent streaming clients over the Unix socket (the model is the
// zero-cost double, so this is HTTP + SSE + logging cost only).
func BenchmarkStreaming64(b *testing.B) {
	ta := startAPI(b)
	b.SetParallelism(64 / max(1, runtimeProcs()))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := streamOnce(ta, "fake"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// TestChatWarmsFollowUp checks that chat requests, OpenAI or Ollama,
// streamed or not, ask the model to warm the conversation's next turn,
// and that completions do not.
func TestChatWarmsFollowUp(t *testing.T) {
	ta := startAPI(t)
	for _, tc := range []struct {
		path, body string
		warm       bool
	}{
		{"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`, true},
		{"/v1/chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true},
		{"/api/chat", `{"model":"fake","stream":false,"messages":[{"role":"user","content":"hi"}]}`, true},
		{"/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`, true},
		{"/v1/completions", `{"model":"fake","prompt":"hi"}`, false},
		{"/api/generate", `{"model":"fake","prompt":"hi","stream":false}`, false},
	} {
		if resp, b := ta.post(t, tc.path, tc.body); resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", tc.path, resp.StatusCode, b)
		}
		if got := ta.fakes["fake"].lastRequest().WarmFollowUp; got != tc.warm {
			t.Errorf("%s %s: WarmFollowUp %v, want %v", tc.path, tc.body, got, tc.warm)
		}
	}
}

// TestSpeculationFields checks the speculation request field (opt-out and
// kinds, both protocols) and the figures in Ollama's final object, the
// request log and /metrics.
func TestSpeculationFields(t *testing.T) {
	ta := startAPI(t)
	resp, body := ta.post(t, "/api/generate", `{"model":"fake","prompt":"Why?","stream":false}`)
	m := mustJSON(t, string(body))
	if resp.StatusCode != 200 || m["draft_count"] != 6.0 || m["draft_accepted_count"] != 4.0 || m["draft_verify_count"] != 3.0 {
		t.Fatalf("speculating request: %d %s", resp.StatusCode, body)
	}
	resp, body = ta.post(t, "/api/generate", `{"model":"fake","prompt":"Why?","stream":false,"options":{"speculation":"off"}}`)
	m = mustJSON(t, string(body))
	if got := ta.fakes["fake"].lastRequest(); resp.StatusCode != 200 || !got.NoSpeculation || m["draft_count"] != nil {
		t.Fatalf("opted out: %d %s, engine request NoSpeculation %v", resp.StatusCode, body, got.NoSpeculation)
	}
	resp, _ = ta.post(t, "/v1/completions", `{"model":"fake","prompt":"Once","speculation":"lookup+tree"}`)
	if got := ta.fakes["fake"].lastRequest(); resp.StatusCode != 200 || got.NoSpeculation || got.Speculate != spec.KindLookup|spec.KindTree {
		t.Fatalf("kinds: %d, engine request %v %v", resp.StatusCode, got.NoSpeculation, got.Speculate)
	}
	if resp, body := ta.post(t, "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"x"}],"speculation":"guess"}`); resp.StatusCode != 400 {
		t.Fatalf("unknown kind: %d %s", resp.StatusCode, body)
	}
	_, body = ta.get(t, "/v1/requests?limit=3")
	var recs []ipc.RequestRecord
	if err := json.Unmarshal(body, &recs); err != nil || len(recs) != 3 {
		t.Fatalf("request log: %v %s", err, body)
	}
	if r := recs[0]; r.DraftTokens != 6 || r.DraftAccepted != 4 || r.Verifications != 3 {
		t.Fatalf("newest record %+v", r)
	}
	if r := recs[1]; r.DraftTokens != 0 || r.Verifications != 0 {
		t.Fatalf("opted-out record %+v", r)
	}
	_, body = ta.get(t, "/metrics")
	for _, want := range []string{`ruvllm_tokens_total{kind="draft"} 12`, `ruvllm_tokens_total{kind="draft_accepted"} 8`, "ruvllm_speculative_verifications_total 6"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestSeeds: a seed of 0 or more, in either API, makes sampling
// reproducible (0 like any other, as OpenAI's and Ollama's clients mean
// it); a negative one (Ollama's and llama.cpp's -1) or none leaves the seed
// to chance.
func TestSeeds(t *testing.T) {
	ta := startAPI(t)
	for _, tc := range []struct {
		path, body string
		seed       uint64
		seeded     bool
	}{
		{"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"seed":0}`, 0, true},
		{"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"seed":7}`, 7, true},
		{"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"seed":-1}`, 0, false},
		{"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`, 0, false},
		{"/v1/completions", `{"model":"fake","prompt":"hi","seed":0}`, 0, true},
		{"/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"seed":0}}`, 0, true},
		{"/api/generate", `{"model":"fake","prompt":"hi","stream":false,"options":{"seed":-1}}`, 0, false},
		{"/api/generate", `{"model":"fake","prompt":"hi","stream":false,"options":{"seed":9223372036854775807}}`, 1<<63 - 1, true},
	} {
		resp, body := ta.post(t, tc.path, tc.body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", tc.path, tc.body, resp.StatusCode, body)
		}
		p := ta.fakes["fake"].lastRequest().Sampling
		if p.Seed != tc.seed || p.Seeded != tc.seeded {
			t.Errorf("%s %s: seed %d seeded %v, want %d %v", tc.path, tc.body, p.Seed, p.Seeded, tc.seed, tc.seeded)
		}
	}
	resp, body := ta.post(t, "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"seed":1e30}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `field \"seed\" must be an integer from`) {
		t.Errorf("seed 1e30: %d %s, want a 400 naming seed", resp.StatusCode, body)
	}
}
