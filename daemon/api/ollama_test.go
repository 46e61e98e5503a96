package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestOllamaGenerateContext checks Ollama's context: /api/generate returns
// the exchange's tokens, and a request that sends them back continues the
// exchange, computing exactly those tokens before its own prompt.
func TestOllamaGenerateContext(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	generate := func(body string) map[string]any { t.Helper(); return ta.postOK(t, "/api/generate", body) }
	ints := func(v any) []int {
		t.Helper()
		list, ok := v.([]any)
		if !ok {
			t.Fatalf("context is %T %v, not a list", v, v)
		}
		out := make([]int, len(list))
		for i, x := range list {
			out[i] = int(x.(float64))
		}
		return out
	}
	opts := `"options":{"temperature":0,"num_predict":6}`
	g1 := generate(`{"model":` + model + `,"prompt":"Tell me about the sea","stream":false,` + opts + `}`)
	c1 := ints(g1["context"])
	promptN := int(g1["prompt_eval_count"].(float64))
	if promptN < 3 || len(c1) <= promptN {
		t.Fatalf("context of %d tokens for a prompt of %d and a reply %q", len(c1), promptN, g1["response"])
	}

	// The streamed final object carries the same context.
	resp, b := ta.post(t, "/api/generate", `{"model":`+model+`,"prompt":"Tell me about the sea",`+opts+`}`)
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	var last map[string]any
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("stream line %q: %v", sc.Text(), err)
		}
		if obj["done"] != true && obj["context"] != nil {
			t.Fatalf("context before the final object: %s", sc.Text())
		}
		last = obj
	}
	if got := ints(last["context"]); !slices.Equal(got, c1) {
		t.Fatalf("streamed context %v, not %v", got, c1)
	}

	// Sent back, the context comes before the new prompt: the new context
	// extends it, and the reply is what the same tokens give as a prompt.
	ctxJSON, _ := json.Marshal(c1)
	g2 := generate(`{"model":` + model + `,"prompt":"And the mountains?","context":` + string(ctxJSON) + `,"stream":false,` + opts + `}`)
	c2 := ints(g2["context"])
	prompt2 := int(g2["prompt_eval_count"].(float64))
	if prompt2 <= len(c1) || !slices.Equal(c2[:len(c1)], c1) {
		t.Fatalf("continued context %v (prompt %d tokens) does not extend %v", c2, prompt2, c1)
	}
	if cached := g2["prompt_cached_count"]; cached == nil || int(cached.(float64)) < promptN {
		t.Errorf("the continued prompt reused %v cached tokens, want at least %d (the first prompt's)", cached, promptN)
	}
	ids, _ := json.Marshal(c2[:prompt2])
	resp, b = ta.post(t, "/v1/completions", `{"model":`+model+`,"prompt":`+string(ids)+`,"temperature":0,"max_tokens":6}`)
	if resp.StatusCode != 200 {
		t.Fatalf("completion of the context's tokens: %d %s", resp.StatusCode, b)
	}
	if want := field(mustJSON(t, string(b)), "choices", 0, "text"); g2["response"] != want {
		t.Fatalf("continued reply %q, the same tokens as a prompt give %q", g2["response"], want)
	}

	// A raw prompt returns no context; a context longer than num_ctx is
	// cut, keeping its end, as a long prompt is.
	if g := generate(`{"model":` + model + `,"prompt":"x","raw":true,"stream":false,` + opts + `}`); g["context"] != nil {
		t.Fatalf("raw prompt returned a context: %v", g["context"])
	}
	long, _ := json.Marshal(slices.Repeat(c1, 40))
	g := generate(`{"model":` + model + `,"prompt":"x","context":` + string(long) + `,"stream":false,"options":{"num_ctx":64,"num_predict":2}}`)
	if n := int(g["prompt_eval_count"].(float64)); n > 63 || n < 32 {
		t.Fatalf("num_ctx 64 with a context of %d tokens: %d prompt tokens", 40*len(c1), n)
	}

	for _, c := range []struct{ ctx, want string }{
		{`[-1]`, "context token 0 is -1"},
		{`[1, 2, 99999999]`, "context token 2 is 99999999, not in this model's vocabulary"},
		{`[3000000000]`, "context token 0 is 3000000000"},
		{`"12 13"`, `context\" must be an array`},
		{`[1.5]`, `context\" must be an integer`},
	} {
		resp, b := ta.post(t, "/api/generate", `{"model":`+model+`,"prompt":"x","stream":false,"context":`+c.ctx+`}`)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("context %s: %d %s, want 400 naming %s", c.ctx, resp.StatusCode, b, c.want)
		}
	}
	// The daemon's body limit (32 MiB) holds more tokens than any context.
	if _, err := contextTokens(make([]int, maxContextTokens+1), 100); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a context of %d tokens: %v", maxContextTokens+1, err)
	}
}

// TestOllamaLogprobs checks logprobs and top_logprobs on /api/generate and
// /api/chat, streamed and not: one entry a generated token, spelling the
// reply, the greedy token the most likely of its alternatives.
func TestOllamaLogprobs(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	type entry struct {
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		Bytes       []int   `json:"bytes"`
		TopLogprobs []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"top_logprobs"`
	}
	type answer struct {
		Response string                   `json:"response"`
		Message  struct{ Content string } `json:"message"`
		Done     bool                     `json:"done"`
		Logprobs []entry                  `json:"logprobs"`
	}
	read := func(path, body string) (text string, lps []entry) {
		t.Helper()
		resp, b := ta.post(t, path, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", path, body, resp.StatusCode, b)
		}
		for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
			var a answer
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("%s: %q: %v", path, sc.Text(), err)
			}
			text += a.Response + a.Message.Content
			lps = append(lps, a.Logprobs...)
		}
		return text, lps
	}
	check := func(name, text string, lps []entry, top int) {
		t.Helper()
		var spelled strings.Builder
		for i, e := range lps {
			spelled.WriteString(e.Token)
			if e.Logprob > 0 || len(e.TopLogprobs) != top || len(e.Bytes) != len(e.Token) {
				t.Fatalf("%s: entry %d %+v", name, i, e)
			}
			if top > 0 && e.TopLogprobs[0].Logprob != e.Logprob {
				t.Fatalf("%s: greedy token %q (%v) is not the most likely %+v", name, e.Token, e.Logprob, e.TopLogprobs)
			}
		}
		if len(lps) != 5 || spelled.String() != text {
			t.Fatalf("%s: %d entries spelling %q, reply %q", name, len(lps), spelled.String(), text)
		}
	}
	opts := `"options":{"temperature":0,"repeat_penalty":1,"num_predict":5}`
	for _, stream := range []string{"false", "true"} {
		text, lps := read("/api/generate", `{"model":`+model+`,"prompt":"Tell me","stream":`+stream+`,"logprobs":true,"top_logprobs":2,`+opts+`}`)
		check("generate stream "+stream, text, lps, 2)
		text, lps = read("/api/chat", `{"model":`+model+`,"messages":[{"role":"user","content":"Tell me"}],"stream":`+stream+`,"logprobs":true,`+opts+`}`)
		check("chat stream "+stream, text, lps, 0)
	}
	// top_logprobs alone asks for logprobs; none asked, none sent.
	if _, lps := read("/api/generate", `{"model":`+model+`,"prompt":"Tell me","stream":false,"top_logprobs":1,`+opts+`}`); len(lps) != 5 {
		t.Fatalf("top_logprobs without logprobs: %d entries", len(lps))
	}
	if _, b := ta.post(t, "/api/generate", `{"model":`+model+`,"prompt":"Tell me","stream":false,`+opts+`}`); strings.Contains(string(b), "logprobs") {
		t.Fatalf("logprobs not asked for: %s", b)
	}
	if resp, b := ta.post(t, "/api/chat", `{"model":`+model+`,"messages":[{"role":"user","content":"x"}],"top_logprobs":21}`); resp.StatusCode != 400 || !strings.Contains(string(b), "top_logprobs") {
		t.Fatalf("top_logprobs 21: %d %s", resp.StatusCode, b)
	}
}
