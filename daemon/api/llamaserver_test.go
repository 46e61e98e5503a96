package api

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestLlamaServerCompletion drives llama-server's /completion, /tokenize,
// /detokenize, /props, /health and /apply-template with the bodies its
// clients send, on a real (tiny) model.
func TestLlamaServerCompletion(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	post := func(path, body string) map[string]any { t.Helper(); return ta.postOK(t, path, body) }
	ints := func(v any) []int {
		t.Helper()
		var out []int
		for _, x := range v.([]any) {
			out = append(out, int(x.(float64)))
		}
		return out
	}

	c := post("/completion", `{"model":`+model+`,"prompt":"Once upon a time","n_predict":5,"temperature":0,"return_tokens":true}`)
	if c["stop"] != true || c["stop_type"] != "limit" || c["tokens_predicted"] != 5.0 || len(ints(c["tokens"])) != 5 ||
		field(c, "timings", "predicted_n") != 5.0 || field(c, "generation_settings", "n_predict") != 5.0 || c["tokens_evaluated"].(float64) < 3 {
		t.Fatalf("completion: %v", c)
	}
	content := c["content"].(string)
	// The same greedy reply as the OpenAI endpoint gives for the prompt.
	o := post("/v1/completions", `{"model":`+model+`,"prompt":"Once upon a time","max_tokens":5,"temperature":0}`)
	if want := field(o, "choices", 0, "text"); content != want {
		t.Fatalf("/completion %q, /v1/completions %q", content, want)
	}
	tokens, _ := json.Marshal(ints(c["tokens"]))
	if d := post("/detokenize", `{"model":`+model+`,"tokens":`+string(tokens)+`}`); d["content"] != content {
		t.Fatalf("detokenized %q, content %q", d["content"], content)
	}

	// Streamed: one event a token (stop false), then the final object; no [DONE].
	resp, b := ta.post(t, "/completion", `{"model":`+model+`,"prompt":"Once upon a time","n_predict":5,"temperature":0,"stream":true}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	events := sseEvents(t, b)
	var streamed strings.Builder
	for i, e := range events {
		ev := mustJSON(t, e)
		last := i == len(events)-1
		if ev["stop"] != last {
			t.Fatalf("event %d of %d: %s", i, len(events), e)
		}
		if !last && len(ints(ev["tokens"])) != 1 {
			t.Fatalf("event %d has no token: %s", i, e)
		}
		streamed.WriteString(ev["content"].(string))
		if last && (ev["timings"] == nil || ev["stop_type"] != "limit") {
			t.Fatalf("final event: %s", e)
		}
	}
	if streamed.String() != content || strings.Contains(string(b), "[DONE]") {
		t.Fatalf("streamed %q, whole %q (%s)", streamed.String(), content, b)
	}

	// Tokenize: ids, pieces whose text is the content, and a prompt mixing
	// ids and text.
	tk := post("/tokenize", `{"model":`+model+`,"content":"Once upon a time","with_pieces":true}`)
	var pieces strings.Builder
	var ids []int
	for _, p := range tk["tokens"].([]any) {
		pieces.WriteString(p.(map[string]any)["piece"].(string))
		ids = append(ids, int(p.(map[string]any)["id"].(float64)))
	}
	if pieces.String() != "Once upon a time" {
		t.Fatalf("pieces %q", pieces.String())
	}
	plain := post("/tokenize", `{"model":`+model+`,"content":"Once upon a time"}`)
	if got := ints(plain["tokens"]); !slices.Equal(got, ids) {
		t.Fatalf("tokens %v, with pieces %v", got, ids)
	}
	head, _ := json.Marshal(ids[:2])
	mixed := post("/completion", `{"model":`+model+`,"prompt":[`+strings.Trim(string(head), "[]")+`,"xyz"],"n_predict":1,"temperature":0}`)
	tail := ints(post("/tokenize", `{"model":`+model+`,"content":"xyz"}`)["tokens"])
	if n := int(mixed["tokens_evaluated"].(float64)); n != 2+len(tail) {
		t.Fatalf("mixed prompt: %d tokens evaluated, want %d", n, 2+len(tail))
	}

	// n_predict 0 computes the prompt into the cache and generates nothing.
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 12)
	warm := post("/completion", `{"model":`+model+`,"prompt":`+quote(long)+`,"n_predict":0}`)
	if warm["content"] != "" || warm["tokens_predicted"] != 0.0 {
		t.Fatalf("n_predict 0: %v", warm)
	}
	again := post("/completion", `{"model":`+model+`,"prompt":`+quote(long+"and")+`,"n_predict":1}`)
	if n := again["tokens_cached"].(float64); n < 32 {
		t.Fatalf("after n_predict 0 the prompt was not cached: %v tokens", n)
	}

	// Stop words, logit bias (an id banned with false, a text), n_probs.
	first := string([]rune(content)[:1])
	if first == " " {
		first = strings.TrimLeft(content, " ")[:1]
	}
	w := post("/completion", `{"model":`+model+`,"prompt":"Once upon a time","n_predict":5,"temperature":0,"stop":[`+quote(first)+`]}`)
	if w["stop_type"] != "word" || w["stopping_word"] != first || strings.Contains(w["content"].(string), first) {
		t.Fatalf("stop %q: %v", first, w)
	}
	firstID := ints(c["tokens"])[0]
	banned := post("/completion", `{"model":`+model+`,"prompt":"Once upon a time","n_predict":2,"temperature":0,"return_tokens":true,"logit_bias":[[`+jsonInt(firstID)+`,false]]}`)
	if got := ints(banned["tokens"]); got[0] == firstID {
		t.Fatalf("banned token %d came first: %v", firstID, got)
	}
	piece := tk["tokens"].([]any)[0].(map[string]any)["piece"].(string)
	if _, b := ta.post(t, "/completion", `{"model":`+model+`,"prompt":"x","n_predict":1,"logit_bias":[[`+quote(piece)+`,-0.5]],"temperature":0}`); !strings.Contains(string(b), `"stop":true`) {
		t.Fatalf("text logit bias: %s", b)
	}
	pr := post("/completion", `{"model":`+model+`,"prompt":"Once upon a time","n_predict":3,"temperature":0,"n_probs":3}`)
	probs := pr["completion_probabilities"].([]any)
	if len(probs) != 3 || len(probs[0].(map[string]any)["top_logprobs"].([]any)) != 3 {
		t.Fatalf("n_probs 3: %v", pr["completion_probabilities"])
	}

	// json_schema holds the reply to the schema; response_fields picks.
	js := post("/completion", `{"model":`+model+`,"prompt":"Answer:","n_predict":8,"json_schema":{"type":"boolean"}}`)
	if s := js["content"]; s != "true" && s != "false" {
		t.Fatalf("json_schema boolean: %q", s)
	}
	// So does the OpenAI form, here and on /v1/completions (it was
	// accepted and ignored).
	const boolFormat = `"response_format":{"type":"json_schema","json_schema":{"name":"b","schema":{"type":"boolean"}}}`
	if s := post("/completion", `{"model":`+model+`,"prompt":"Answer:","n_predict":8,`+boolFormat+`}`)["content"]; s != "true" && s != "false" {
		t.Fatalf("response_format on /completion: %q", s)
	}
	oc := post("/v1/completions", `{"model":`+model+`,"prompt":"Answer:","max_tokens":8,`+boolFormat+`}`)
	if s := oc["choices"].([]any)[0].(map[string]any)["text"]; s != "true" && s != "false" {
		t.Fatalf("response_format on /v1/completions: %q", s)
	}
	obj := post("/v1/completions", `{"model":`+model+`,"prompt":"Answer:","max_tokens":400,"response_format":{"type":"json_object"}}`)
	if ch := obj["choices"].([]any)[0].(map[string]any); ch["finish_reason"] == "stop" && !json.Valid([]byte(ch["text"].(string))) {
		t.Fatalf("json_object on /v1/completions: %q", ch["text"])
	}
	rf := post("/completion", `{"model":`+model+`,"prompt":"x","n_predict":2,"response_fields":["content","generation_settings/n_predict","nope"]}`)
	if len(rf) != 2 || rf["generation_settings/n_predict"] != 2.0 || rf["content"] == nil {
		t.Fatalf("response_fields: %v", rf)
	}

	// Several prompts: an array of answers, each generated as alone (the
	// scheduler batches them); streamed, each event names its prompt.
	single := post("/completion", `{"model":`+model+`,"prompt":"Tell me","n_predict":4,"temperature":0}`)
	resp, b = ta.post(t, "/completion", `{"model":`+model+`,"prompt":["Once upon a time",{"prompt_string":"Tell me"}],"n_predict":4,"temperature":0}`)
	var many []map[string]any
	if err := json.Unmarshal(b, &many); resp.StatusCode != 200 || err != nil || len(many) != 2 {
		t.Fatalf("two prompts: %d %s", resp.StatusCode, b)
	}
	short := string([]rune(content)[:len([]rune(many[0]["content"].(string)))])
	if many[0]["index"] != 0.0 || many[1]["index"] != 1.0 || many[0]["content"] != short || many[1]["content"] != single["content"] {
		t.Fatalf("two prompts: %q %q, alone %q %q", many[0]["content"], many[1]["content"], short, single["content"])
	}
	resp, b = ta.post(t, "/completion", `{"model":`+model+`,"prompt":["Once upon a time","Tell me"],"n_predict":4,"temperature":0,"stream":true}`)
	perIndex := map[float64]string{}
	stops := 0
	for _, e := range sseEvents(t, b) {
		ev := mustJSON(t, e)
		perIndex[ev["index"].(float64)] += ev["content"].(string)
		if ev["stop"] == true {
			stops++
		}
	}
	if resp.StatusCode != 200 || stops != 2 || perIndex[0] != many[0]["content"] || perIndex[1] != many[1]["content"] {
		t.Fatalf("two prompts streamed: %d, %d final events, texts %v", resp.StatusCode, stops, perIndex)
	}

	props := post("/apply-template", `{"model":`+model+`,"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(props["prompt"].(string), "hi") {
		t.Fatalf("apply-template: %v", props)
	}
	if code, b := ta.get(t, "/props?model="+strings.Trim(model, `"`)); code != 200 || !strings.Contains(string(b), `"n_ctx":2048`) || !strings.Contains(string(b), `"total_slots":1`) {
		t.Fatalf("props: %d %s", code, b)
	}
	if code, b := ta.get(t, "/health"); code != 200 || !strings.Contains(string(b), `"ok"`) {
		t.Fatalf("health: %d %s", code, b)
	}
	if code, b := ta.get(t, "/slots"); code != 404 || !strings.Contains(string(b), `"message":"GET /slots: no such endpoint"`) {
		t.Fatalf("an unknown route: %d %s", code, b)
	}
	if resp, b := ta.post(t, "/props", `{}`); resp.StatusCode != 404 || !strings.Contains(string(b), "POST /props") {
		t.Fatalf("a method the route does not take: %d %s", resp.StatusCode, b)
	}

	// n_predict -2 is llama.cpp's "until the context is full".
	if c := post("/completion", `{"model":`+model+`,"prompt":"x","n_predict":-2,"temperature":0}`); field(c, "generation_settings", "n_predict") != -2.0 {
		t.Fatalf("n_predict -2: %v", c)
	}

	for _, c := range []struct{ path, body, want string }{
		{"/completion", `{"prompt":"x","mirostat":2}`, "mirostat"},
		{"/completion", `{"prompt":"x","dry_multiplier":0.8}`, "dry_multiplier"},
		{"/completion", `{"prompt":"x","top_n_sigma":1.5}`, "top_n_sigma"},
		{"/completion", `{"prompt":"x","samplers":["top_k","bogus"]}`, "samplers[1]"},
		{"/completion", `{"prompt":"x","n_predict":-5}`, "n_predict"},
		{"/completion", `{"prompt":[]}`, "must not be empty"},
		{"/completion", `{"prompt":[` + strings.Repeat(`"a",`, 16) + `"a"]}`, "at most 16"},
		{"/completion", `{"prompt":{"prompt_string":"x","multimodal_data":["aGk="]}}`, "multimodal_data"},
		{"/completion", `{"prompt":[[1,[2]]]}`, "prompt[0][1]"},
		{"/completion", `{"n_predict":1}`, "prompt"},
		{"/completion", `{"prompt":[99999999]}`, "prompt[0]"},
		{"/completion", `{"prompt":"x","lora":[{"id":0,"scale":1}]}`, "lora"},
		{"/completion", `{"prompt":"x","logit_bias":[[1,true]]}`, "logit_bias[0]"},
		{"/completion", `{"prompt":"x","logit_bias":[[1,1e9]]}`, "logit_bias[0]"},
		{"/completion", `{"prompt":"x","n_probs":50}`, "n_probs"},
		{"/completion", `{"prompt":"x","t_max_predict_ms":9000000000000000000}`, "t_max_predict_ms"},
		{"/completion", `{"prompt":"x","grammar":"root ::= \"a\"","json_schema":{}}`, "json_schema"},
		{"/completion", `{"prompt":"x","json_schema":{},"response_format":{"type":"json_object"}}`, "response_format"},
		{"/completion", `{"prompt":"x","response_format":{"type":"xml"}}`, "response_format"},
		{"/completion", `{"prompt":"x","temperature":"hot"}`, `"param":"temperature"`},
		{"/completion", `{"prompt":"x","n_predict":-3}`, "n_predict"},
		{"/tokenize", `{"content":["a",{"x":1}]}`, `content[1]`},
		{"/detokenize", `{"tokens":[1,-4]}`, "tokens[1]"},
		{"/infill", `{"input_suffix":"x"}`, "input_prefix"},
		{"/infill", `{"input_prefix":"x","input_suffix":"y"}`, "fill-in-the-middle"},
		{"/infill", `{"input_prefix":"x","input_suffix":"y","input_extra":[{"filename":"a"}]}`, "input_extra[0].text"},
	} {
		body := strings.Replace(c.body, "{", `{"model":`+model+`,`, 1)
		resp, b := ta.post(t, c.path, body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) || !strings.HasPrefix(string(b), `{"error":`) {
			t.Errorf("%s %s: %d %s, want 400 naming %s", c.path, c.body, resp.StatusCode, b, c.want)
		}
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestLlamaServerInfill builds /infill prompts on a model with StarCoder's
// vocabulary (fill-in-the-middle and file separator tokens, no repository
// token), as llama-server lays them out.
func TestLlamaServerInfill(t *testing.T) {
	vocab := testpath.Shared(t, "vocab/ggml-vocab-starcoder.gguf")
	ta := startAPIWith(t, true)
	o := testmodel.DefaultOptions()
	o.Arch, o.VocabFrom, o.Dim, o.FF, o.ContextLength = "llama", vocab, 32, 64, 4096
	path := filepath.Join(t.TempDir(), "coder.gguf")
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	resp, b := ta.post(t, "/infill", `{"model":`+quote(path)+`,"input_prefix":"def add(a, b):\n    return ","input_suffix":"\n\nprint(add(1, 2))\n",`+
		`"input_extra":[{"filename":"util.py","text":"x = 1\n"}],"prompt":"a","n_predict":4,"temperature":0}`)
	if resp.StatusCode != 200 {
		t.Fatalf("infill: %d %s", resp.StatusCode, b)
	}
	v := mustJSON(t, string(b))
	want := "<file_sep>util.py\nx = 1\n<file_sep>filename\n<fim_prefix>def add(a, b):\n    return a<fim_suffix>\n\nprint(add(1, 2))\n<fim_middle>"
	if v["prompt"] != want || v["tokens_predicted"] != 4.0 {
		t.Fatalf("infill prompt %q, want %q (%v)", v["prompt"], want, v)
	}
	// Its record keeps the text before the insertion point, as a
	// completion with a suffix does.
	resp, b = ta.post(t, "/v1/feedback", `{"request_id":`+quote(v["request_id"].(string))+`,"rating":1}`)
	if fb := mustJSON(t, string(b)); resp.StatusCode != 201 || fb["prompt_text"] != "def add(a, b):\n    return a" {
		t.Fatalf("feedback on an infill: %d, recorded prompt %q", resp.StatusCode, fb["prompt_text"])
	}
	// llama.vim's two requests: the ring buffer's chunks sent ahead with
	// n_predict 0 (computed into the prefix cache), then a completion with
	// the same chunks, which starts from them.
	chunk := strings.Repeat("def helper(x):\n    return x * 2\n\n", 20)
	extra := `"input_extra":[{"text":` + quote(chunk) + `,"time":[1,2],"filename":"helper.py"}]`
	resp, b = ta.post(t, "/infill", `{"model":`+quote(path)+`,"input_prefix":"","input_suffix":"","prompt":"",`+extra+`,"n_predict":0,"temperature":0.0,`+
		`"stream":false,"samplers":[],"cache_prompt":true,"t_max_prompt_ms":1,"t_max_predict_ms":1,"response_fields":[""]}`)
	if resp.StatusCode != 200 || string(b) != "{}\n" {
		t.Fatalf("ring update: %d %q", resp.StatusCode, b)
	}
	resp, b = ta.post(t, "/infill", `{"model":`+quote(path)+`,"input_prefix":"import os\n","input_suffix":"\n","prompt":"    ret",`+extra+`,"n_predict":16,"n_indent":4,`+
		`"top_k":40,"top_p":0.90,"stream":false,"samplers":["top_k","top_p","infill"],"cache_prompt":true,"t_max_prompt_ms":500,"t_max_predict_ms":250,`+
		`"response_fields":["content","timings/prompt_n","timings/predicted_n","truncated","tokens_cached"]}`)
	v = mustJSON(t, string(b))
	if resp.StatusCode != 200 || len(v) != 5 || v["tokens_cached"].(float64) < 200 || v["timings/prompt_n"] == nil {
		t.Fatalf("completion after the ring update: %d %s", resp.StatusCode, b)
	}

	// Without room for the other files (a reply as long as the context),
	// they are left out, and the prefix keeps its end.
	long := strings.Repeat("x = x + 1\n", 2000)
	resp, b = ta.post(t, "/infill", `{"model":`+quote(path)+`,"input_prefix":`+quote(long)+`,"input_suffix":"","input_extra":[{"text":"y = 2"}],"n_predict":2000,"json_schema":{"type":"boolean"}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("long infill: %d %s", resp.StatusCode, b)
	}
	v = mustJSON(t, string(b))
	p := v["prompt"].(string)
	if strings.Contains(p, "y = 2") || !strings.HasPrefix(p, "<fim_prefix>") || !strings.HasSuffix(p, "x = x + 1\n<fim_suffix><fim_middle>") ||
		v["tokens_evaluated"].(float64) > 1536+3 {
		t.Fatalf("long infill: %d tokens, prompt starts %.60q", int(v["tokens_evaluated"].(float64)), p)
	}
}

// TestLineLimits checks n_indent and t_max_predict_ms as llama-server
// applies them.
func TestLineLimits(t *testing.T) {
	for _, c := range []struct {
		name   string
		indent int
		pieces []string
		want   string
		stop   bool
	}{
		{"indented lines go on", 4, []string{"x = 1\n", "    y", " = 2\n    z"}, "x = 1\n    y = 2\n    z", false},
		{"a line less indented ends it", 4, []string{"a\n", "  ", "b", "c"}, "a\n  ", true},
		{"within one token", 2, []string{"a\n  b\nc"}, "a\n  b\n", true},
		{"the first line is free", 8, []string{"ret", "urn x"}, "return x", false},
		{"tabs count", 2, []string{"a\n\t\tb\n\tc"}, "a\n\t\tb\n\t", true},
		{"blank lines are no line", 2, []string{"a\n\n  b"}, "a\n\n  b", false},
		{"no indent", 0, []string{"a\nb\nc"}, "a\nb\nc", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := &lineLimits{indent: c.indent}
			var got strings.Builder
			stop := false
			for _, p := range c.pieces {
				out, end := l.push(p)
				got.WriteString(out)
				if end {
					stop = true
					break
				}
			}
			if !stop {
				got.WriteString(l.flush())
			}
			if got.String() != c.want || stop != c.stop {
				t.Fatalf("got %q (stop %v), want %q (stop %v)", got.String(), stop, c.want, c.stop)
			}
		})
	}
	// t_max_predict_ms: past the time, the next new line ends the reply.
	l := &lineLimits{maxTime: time.Millisecond}
	if _, end := l.push("a\n"); end {
		t.Fatal("ended before the time limit")
	}
	time.Sleep(2 * time.Millisecond)
	if _, end := l.push("b"); end {
		t.Fatal("ended without a new line")
	}
	if _, end := l.push("c\n"); !end {
		t.Fatal("a new line past the time limit did not end the reply")
	}
}

// TestCompletionTextOffsetsFollowTokens: a completion's text_offset gives
// each generated token where its text starts, also on a byte-level BPE
// model whose decoder holds text back (spaces it may clean up), so that a
// token's streamed text is empty and a later one carries several. The
// offsets followed the streamed text: " is a good" came as 0, 0, 0.
func TestCompletionTextOffsetsFollowTokens(t *testing.T) {
	model := quote(testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"))
	ta := startAPIWith(t, true)
	check := func(name string, toks, offs []any, start int) {
		t.Helper()
		at := start
		for i, tok := range toks {
			if off := int(offs[i].(float64)); off != at {
				t.Fatalf("%s: text_offset[%d] = %d, want %d (tokens %q, offsets %v)", name, i, off, at, toks, offs)
			}
			at += len([]rune(tok.(string)))
		}
	}
	body := `{"model":` + model + `,"prompt":"Hello there","max_tokens":8,"temperature":0,"logprobs":1,"speculation":"off"}`
	c := ta.postOK(t, "/v1/completions", body)
	lp := field(c, "choices", 0, "logprobs").(map[string]any)
	check("completion", lp["tokens"].([]any), lp["text_offset"].([]any), 0)
	// Streamed, each chunk carries its one token and its offset.
	resp, b := ta.post(t, "/v1/completions", strings.Replace(body, `"logprobs":1`, `"logprobs":1,"stream":true`, 1))
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	var toks, offs []any
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if l, ok := field(ev, "choices", 0, "logprobs").(map[string]any); ok {
			toks, offs = append(toks, l["tokens"].([]any)...), append(offs, l["text_offset"].([]any)...)
		}
	}
	check("stream", toks, offs, 0)
	// Echoed, the reply's offsets go on after the prompt's tokens.
	e := ta.postOK(t, "/v1/completions", strings.Replace(body, `"logprobs":1`, `"logprobs":1,"echo":true`, 1))
	lp = field(e, "choices", 0, "logprobs").(map[string]any)
	check("echo", lp["tokens"].([]any), lp["text_offset"].([]any), 0)
}

// TestLogprobTokensSpellTheText: on a SentencePiece model, whose tokens
// carry their leading spaces, the tokens reported with log-probabilities
// (OpenAI chat and completions, echoed prompts, llama-server's n_probs and
// with_pieces) join to the text they report, spaces included.
func TestLogprobTokensSpellTheText(t *testing.T) {
	model := quote(testpath.Shared(t, "models/ruvllm-test-llama-19m-q8_0.gguf"))
	ta := startAPIWith(t, true)
	post := func(path, body string) map[string]any { t.Helper(); return ta.postOK(t, path, body) }
	join := func(list any, key string) string {
		var s strings.Builder
		for _, x := range list.([]any) {
			if key == "" {
				s.WriteString(x.(string))
			} else {
				s.WriteString(x.(map[string]any)[key].(string))
			}
		}
		return s.String()
	}
	c := post("/v1/completions", `{"model":`+model+`,"prompt":"Once upon a time","max_tokens":8,"temperature":0,"logprobs":2}`)
	text := field(c, "choices", 0, "text").(string)
	if got := join(field(c, "choices", 0, "logprobs", "tokens"), ""); got != text || !strings.Contains(text, " ") {
		t.Fatalf("completion tokens spell %q, text %q", got, text)
	}
	e := post("/v1/completions", `{"model":`+model+`,"prompt":"Once upon a time","max_tokens":4,"temperature":0,"logprobs":1,"echo":true}`)
	lp := field(e, "choices", 0, "logprobs").(map[string]any)
	if got, want := join(lp["tokens"], ""), field(e, "choices", 0, "text"); got != want {
		t.Fatalf("echoed tokens spell %q, text %q", got, want)
	}
	at := 0
	for i, tok := range lp["tokens"].([]any) {
		if off := int(lp["text_offset"].([]any)[i].(float64)); off != at {
			t.Fatalf("text_offset[%d] = %d, want %d", i, off, at)
		}
		at += len([]rune(tok.(string)))
	}
	ch := post("/v1/chat/completions", `{"model":`+model+`,"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":6,"temperature":0,"logprobs":true}`)
	if got, want := join(field(ch, "choices", 0, "logprobs", "content"), "token"), field(ch, "choices", 0, "message", "content"); got != want {
		t.Fatalf("chat tokens spell %q, content %q", got, want)
	}
	l := post("/completion", `{"model":`+model+`,"prompt":"Once upon a time","n_predict":8,"temperature":0,"n_probs":1}`)
	if got := join(l["completion_probabilities"], "token"); got != l["content"] || got != text {
		t.Fatalf("/completion probabilities spell %q, content %q (OpenAI's %q)", got, l["content"], text)
	}
	if got := join(post("/tokenize", `{"model":`+model+`,"content":"Once upon a time","with_pieces":true}`)["tokens"], "piece"); got != " Once upon a time" {
		t.Fatalf("pieces spell %q, want llama-server's \" Once upon a time\"", got)
	}
}

// TestLlamaServerFeedbackPrompt: a /completion reply is recorded with its
// prompt as the client wrote it (no BOS text, no SentencePiece space), so
// feedback on it learns from the prompt the model read.
func TestLlamaServerFeedbackPrompt(t *testing.T) {
	model := quote(testpath.Shared(t, "models/ruvllm-test-llama-19m-q8_0.gguf"))
	ta := startAPIWith(t, true)
	c := ta.postOK(t, "/completion", `{"model":`+model+`,"prompt":"Once upon a time","n_predict":4}`)
	if c["prompt"] != "<s> Once upon a time" {
		t.Fatalf("prompt as computed %q, want llama-server's %q", c["prompt"], "<s> Once upon a time")
	}
	resp, b := ta.post(t, "/v1/feedback", `{"request_id":`+quote(c["request_id"].(string))+`,"rating":1}`)
	if fb := mustJSON(t, string(b)); resp.StatusCode != 201 || fb["prompt_text"] != "Once upon a time" {
		t.Fatalf("feedback: %d, recorded prompt %q, want the client's", resp.StatusCode, fb["prompt_text"])
	}
}
