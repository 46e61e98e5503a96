package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// fuzzEndpoints are the generation endpoints of both APIs.
var fuzzEndpoints = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/api/chat", "/api/generate", "/api/embed",
	"/completion", "/infill", "/tokenize", "/detokenize", "/embedding", "/lora-adapters", "/chat/completions"}

// FuzzEndpoints sends fuzzed JSON bodies through the real handlers, the
// real validation and the real engine (a tiny synthetic model): whatever
// the body, the answer is a success or a 4xx with a reason, never a 5xx
// and never a dead daemon.
func FuzzEndpoints(f *testing.F) {
	for _, s := range []struct {
		ep   uint8
		body string
	}{
		{0, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`},
		{0, `{"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":2,"stream":true,"logprobs":true,"top_logprobs":2}`},
		{0, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4611686018427387904,"temperature":1.5,"top_k":3,"top_p":0.5,"min_p":0.1,"seed":7,"stop":["a"],"logit_bias":{"5":-100}}`},
		{1, `{"prompt":"The","max_tokens":3,"logprobs":2,"echo":false}`},
		{1, `{"prompt":[1,2,3],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`},
		{2, `{"input":["a","b"]}`},
		{3, `{"messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":3,"temperature":0.2,"repeat_last_n":-1}}`},
		{4, `{"prompt":"hi","raw":true,"stream":false,"options":{"num_predict":2,"stop":["x"]}}`},
		{4, `{"prompt":"","keep_alive":0}`},
		{5, `{"input":"hello"}`},
		{0, `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"again"}],"max_tokens":300,"context_overflow":"shift"}`},
		{4, `{"prompt":"hi","stream":false,"truncate":false,"shift":true,"options":{"num_predict":400,"num_ctx":32,"num_keep":5}}`},
		{4, `{"prompt":"and then","context":[1,2,3],"stream":false}`},
		{3, `{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":3,"options":{"num_predict":3}}`},
		{6, `{"prompt":["Once",[1,2,"x"],{"prompt_string":"y"}],"n_predict":3,"stream":true,"n_probs":2,"samplers":["top_k","temperature"],"logit_bias":[[1,false],["a",-1]]}`},
		{6, `{"prompt":"x","n_predict":0,"json_schema":{"type":"boolean"},"response_fields":["content","timings/cache_n"],"n_indent":2,"t_max_predict_ms":1}`},
		{7, `{"input_prefix":"def f(","input_suffix":")","input_extra":[{"filename":"a","text":"b"}],"prompt":"x","n_predict":2}`},
		{8, `{"content":["a",1,"<s>"],"with_pieces":true,"add_special":true,"parse_special":false}`},
		{9, `{"tokens":[1,2,3]}`},
		{10, `{"content":["a",[1,2],{"prompt_string":"b"}],"embd_normalize":3}`},
		{10, `{"input":"x","embd_normalize":0,"encoding_format":"float"}`},
		{6, `{"prompt":"x","n_predict":2,"lora":[{"id":0,"scale":0.5}]}`},
		{11, `[{"id":0,"scale":1}]`},
		{12, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`},
	} {
		f.Add(s.ep, s.body)
	}
	ta := startAPIWith(f, true)
	model := filepath.Join(f.TempDir(), "fuzz-qwen2.gguf")
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 256
	if err := testmodel.Write(context.Background(), o, model); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ep uint8, body string) {
		var obj map[string]any
		if json.Unmarshal([]byte(body), &obj) == nil && obj != nil {
			obj["model"] = model // the fuzzer picks everything but the model
			if _, ok := obj["max_tokens"]; !ok {
				obj["max_tokens"] = 4
			}
			b, _ := json.Marshal(obj)
			body = string(b)
		}
		path := fuzzEndpoints[int(ep)%len(fuzzEndpoints)]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://ruvllm"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := ta.http.Do(req)
		if err != nil {
			t.Fatalf("%s %q: no answer: %v", path, body, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, resp.StatusCode, raw)
		}
		if resp.StatusCode >= 400 && !strings.Contains(string(raw), `"error"`) {
			t.Fatalf("%s %q: %d without an error message: %s", path, body, resp.StatusCode, raw)
		}
		if strings.Contains(string(raw), `"error"`) && resp.StatusCode == 200 && !strings.Contains(path, "embed") {
			// A stream that started and then failed: the failure must
			// be the client's (a 4xx kind of error), never a crash.
			if strings.Contains(string(raw), "server_error") {
				t.Fatalf("%s %q: stream failed with a server error: %s", path, body, raw)
			}
		}
	})
}
