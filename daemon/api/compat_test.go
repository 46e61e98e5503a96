package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// realTinyModel writes a tiny synthetic qwen2 model outside the test's
// models directory (so startAPIWith(t, true) runs it on the engine).
func realTinyModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny-real.gguf")
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 2048
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenAIClientDefaults(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	post := func(path, body string) map[string]any { t.Helper(); return ta.postOK(t, path, body) }
	// Embeddings: base64 (the SDKs' default) decodes to the float vector.
	floats := post("/v1/embeddings", `{"model":"`+model+`","input":"hello"}`)
	b64 := post("/v1/embeddings", `{"model":"`+model+`","input":"hello","encoding_format":"base64"}`)
	raw, err := base64.StdEncoding.DecodeString(field(b64, "data", 0, "embedding").(string))
	if err != nil {
		t.Fatal(err)
	}
	vec := field(floats, "data", 0, "embedding").([]any)
	if len(raw) != 4*len(vec) {
		t.Fatalf("base64 embedding of %d bytes for %d floats", len(raw), len(vec))
	}
	for i, v := range vec {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); float64(got) != v.(float64) && math.Abs(float64(got)-v.(float64)) > 1e-7 {
			t.Fatalf("value %d: base64 %v, float %v", i, got, v)
		}
	}
	// dimensions: truncated and unit length again; too many is a 400.
	d := post("/v1/embeddings", `{"model":"`+model+`","input":"hello","dimensions":8}`)
	var norm float64
	for _, v := range field(d, "data", 0, "embedding").([]any) {
		norm += v.(float64) * v.(float64)
	}
	if n := len(field(d, "data", 0, "embedding").([]any)); n != 8 || math.Abs(norm-1) > 1e-5 {
		t.Fatalf("dimensions 8: %d values, norm² %v", n, norm)
	}
	if resp, b := ta.post(t, "/v1/embeddings", `{"model":"`+model+`","input":"x","dimensions":100000}`); resp.StatusCode != 400 || !strings.Contains(string(b), "dimensions") {
		t.Fatalf("dimensions too large: %d %s", resp.StatusCode, b)
	}
	// An input longer than the context (2048): OpenAI's API refuses it,
	// Ollama's /api/embed keeps its first 2048 tokens unless truncate is
	// false.
	long := strings.Repeat("tokens and more words ", 2500)
	if resp, b := ta.post(t, "/v1/embeddings", `{"model":"`+model+`","input":"`+long+`"}`); resp.StatusCode != 400 || !strings.Contains(string(b), "context") {
		t.Fatalf("long input: %d %s", resp.StatusCode, b)
	}
	emb := post("/api/embed", `{"model":"`+model+`","input":["`+long+`","short"]}`)
	if n := field(emb, "prompt_eval_count").(float64); n <= 2048 || n > 2048+16 {
		t.Fatalf("truncated embedding read %v tokens, want 2048 and the short input's", n)
	}
	if resp, b := ta.post(t, "/api/embed", `{"model":"`+model+`","input":"`+long+`","truncate":false}`); resp.StatusCode != 400 || !strings.Contains(string(b), "context") {
		t.Fatalf("truncate false: %d %s", resp.StatusCode, b)
	}
	// Content parts and the developer role.
	c := post("/v1/chat/completions", `{"model":"`+model+`","max_tokens":2,"messages":[{"role":"developer","content":[{"type":"text","text":"Be brief."}]},{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"there"}]}]}`)
	if field(c, "choices", 0, "message", "role") != "assistant" {
		t.Fatalf("content parts: %v", c)
	}
	resp, b := ta.post(t, "/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x"}}]}]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "image_url") || !strings.Contains(string(b), `"param":"messages[0].content"`) {
		t.Fatalf("image part: %d %s", resp.StatusCode, b)
	}
	// Logprob bytes are integer arrays (seeded: a random draw could end the
	// reply at once, with no token to show them).
	lp := post("/v1/chat/completions", `{"model":"`+model+`","max_tokens":2,"seed":1,"logprobs":true,"top_logprobs":1,"messages":[{"role":"user","content":"Hi"}]}`)
	if _, ok := field(lp, "choices", 0, "logprobs", "content", 0, "bytes").([]any); !ok {
		t.Fatalf("logprob bytes: %v", field(lp, "choices", 0, "logprobs", "content", 0))
	}
	// Models: retrieve, and an unknown one is model_not_found.
	name := strings.TrimSuffix(filepath.Base(model), ".gguf")
	if status, b := ta.get(t, "/v1/models/fake"); status != 200 || field(mustJSON(t, string(b)), "id") != "fake" {
		t.Fatalf("retrieve: %d %s", status, b)
	}
	status, b2 := ta.get(t, "/v1/models/nope")
	if e := mustJSON(t, string(b2)); status != 404 || field(e, "error", "code") != "model_not_found" {
		t.Fatalf("unknown model: %d %s", status, b2)
	}
	resp, b = ta.post(t, "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`)
	if e := mustJSON(t, string(b)); resp.StatusCode != 404 || field(e, "error", "code") != "model_not_found" {
		t.Fatalf("chat with an unknown model: %d %s", resp.StatusCode, b)
	}
	// Completions: echo puts the prompt first, with its logprobs (the
	// first token has none) and offsets into the whole text.
	e := post("/v1/completions", `{"model":"`+model+`","prompt":"The cat","max_tokens":3,"echo":true,"logprobs":1,"temperature":0}`)
	text := field(e, "choices", 0, "text").(string)
	lps := field(e, "choices", 0, "logprobs").(map[string]any)
	toks, offs := lps["tokens"].([]any), lps["text_offset"].([]any)
	if !strings.HasPrefix(text, "The cat") || lps["token_logprobs"].([]any)[0] != nil || lps["token_logprobs"].([]any)[1] == nil {
		t.Fatalf("echo: %q %v", text, lps)
	}
	// The prompt's tokens spell it, each offset where its text starts;
	// the reply's offsets go on from there (a random model's reply may end
	// mid-character, so only their order is checked).
	joined, i := "", 0
	for ; joined != "The cat"; i++ {
		if int(offs[i].(float64)) != len([]rune(joined)) {
			t.Fatalf("text_offset[%d] = %v, want %d (%q)", i, offs[i], len([]rune(joined)), joined)
		}
		joined += toks[i].(string)
		if len(joined) > len("The cat") {
			t.Fatalf("echoed tokens %q do not spell the prompt", joined)
		}
	}
	for prev := len([]rune(joined)); i < len(toks); i++ {
		if o := int(offs[i].(float64)); o < prev || o > len([]rune(text)) {
			t.Fatalf("reply text_offset[%d] = %d after %d (text of %d characters)", i, o, prev, len([]rune(text)))
		} else {
			prev = o
		}
	}
	_ = name
	for _, c := range []struct{ body, want string }{
		{`{"model":"` + model + `","prompt":"x","suffix":"y"}`, "fill-in-the-middle"},
		{`{"model":"` + model + `","prompt":"x","best_of":3}`, "best_of"},
	} {
		resp, b := ta.post(t, "/v1/completions", c.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Fatalf("%s: %d %s", c.body, resp.StatusCode, b)
		}
	}
	// Unknown routes answer in their protocol's shape.
	if status, b := ta.get(t, "/v1/nothing"); status != 404 || field(mustJSON(t, string(b)), "error", "message") == nil {
		t.Fatalf("/v1/nothing: %d %s", status, b)
	}
	if status, b := ta.get(t, "/api/nothing"); status != 404 || !strings.HasPrefix(string(b), `{"error":"`) {
		t.Fatalf("/api/nothing: %d %s", status, b)
	}
}

func TestOllamaModelManagement(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	post := func(path, body string, want int) map[string]any {
		t.Helper()
		resp, b := ta.post(t, path, body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", path, body, resp.StatusCode, b, want)
		}
		if len(b) == 0 || b[0] != '{' {
			return nil
		}
		return mustJSON(t, string(b))
	}
	// show reads the file without loading it: capabilities, arch-prefixed keys.
	s := post("/api/show", `{"model":"`+model+`"}`, 200)
	if field(s, "model_info", "qwen2.context_length") != 2048.0 || field(s, "model_info", "general.architecture") != "qwen2" ||
		field(s, "details", "family") != "qwen2" || field(s, "details", "quantization_level") == "" {
		t.Fatalf("show: %v", s)
	}
	caps := fmt.Sprint(s["capabilities"])
	if !strings.Contains(caps, "completion") || !strings.Contains(caps, "embedding") || !strings.Contains(caps, "tools") ||
		strings.Contains(caps, "insert") || strings.Contains(caps, "thinking") {
		t.Fatalf("capabilities %s", caps)
	}
	if field(s, "model_info", "tokenizer.ggml.tokens") != nil {
		t.Fatal("large arrays shown without verbose")
	}
	if v := post("/api/show", `{"model":"`+model+`","verbose":true}`, 200); len(field(v, "model_info", "tokenizer.ggml.tokens").([]any)) < 100 {
		t.Fatal("verbose show lacks the tokens")
	}
	// create from a Modelfile: system prompt, parameters, template.
	mf := "FROM " + model + "\nSYSTEM \"\"\"You are terse.\nVery.\"\"\"\nPARAMETER temperature 0\nPARAMETER num_predict 3\nPARAMETER stop \"END\"\nMESSAGE user Hello\nMESSAGE assistant Hi\n"
	post("/api/create", `{"model":"terse:v1","modelfile":`+quote(mf)+`,"stream":false}`, 200)
	s = post("/api/show", `{"model":"terse:v1"}`, 200)
	if s["system"] != "You are terse.\nVery." || !strings.Contains(strings.Join(strings.Fields(s["parameters"].(string)), " "), "temperature 0") ||
		!strings.Contains(s["modelfile"].(string), "FROM "+model) {
		t.Fatalf("show of a created model: %v", s)
	}
	g := post("/api/generate", `{"model":"terse:v1","prompt":"Tell me","stream":false}`, 200)
	if field(g, "eval_count") != 3.0 {
		t.Fatalf("created model's num_predict 3 not applied: %v", g)
	}
	c := post("/api/chat", `{"model":"terse:v1","messages":[{"role":"user","content":"Again"}],"stream":false,"options":{"num_predict":2}}`, 200)
	if field(c, "eval_count") != 2.0 {
		t.Fatalf("request options do not override the model's: %v", c)
	}
	// copy, list, delete.
	post("/api/copy", `{"source":"terse:v1","destination":"terse2"}`, 200)
	_, tags := ta.get(t, "/api/tags")
	if !strings.Contains(string(tags), `"terse:v1"`) || !strings.Contains(string(tags), `"terse2:latest"`) {
		t.Fatalf("tags after create and copy: %s", tags)
	}
	req, _ := http.NewRequest("DELETE", "http://ruvllm/api/delete", strings.NewReader(`{"model":"terse2"}`))
	resp, err := ta.http.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("delete: %v %v", resp, err)
	}
	resp.Body.Close()
	// create from an uploaded blob.
	data, _ := os.ReadFile(model)
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	hreq, _ := http.NewRequest("HEAD", "http://ruvllm/api/blobs/"+digest, nil)
	if resp, _ := ta.http.Do(hreq); resp.StatusCode != 404 {
		t.Fatalf("HEAD before upload: %d", resp.StatusCode)
	}
	resp, err = ta.http.Post("http://ruvllm/api/blobs/"+digest, "application/octet-stream", strings.NewReader(string(data)))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("blob upload: %v %v", resp, err)
	}
	resp, _ = ta.http.Post("http://ruvllm/api/blobs/sha256:"+strings.Repeat("0", 64), "application/octet-stream", strings.NewReader("other"))
	if resp.StatusCode != 400 {
		t.Fatalf("blob with the wrong digest: %d", resp.StatusCode)
	}
	post("/api/create", `{"model":"fromblob","files":{"m.gguf":"`+digest+`"},"system":"Hi","stream":false}`, 200)
	post("/api/generate", `{"model":"fromblob","prompt":"x","stream":false,"options":{"num_predict":1}}`, 200)
	// Refusals.
	for _, c := range []struct {
		path, body, want string
		status           int
	}{
		{"/api/create", `{"model":"bad name!","from":"fake"}`, "model", 400},
		{"/api/create", `{"model":"x","from":"nope"}`, "from", 400},
		{"/api/create", `{"model":"x","modelfile":"FROM fake\nBOGUS 1"}`, "BOGUS", 400},
		{"/api/create", `{"model":"x","modelfile":"FROM fake\nPARAMETER mirostat 2"}`, "mirostat", 400},
		{"/api/create", `{"model":"x","from":"fake","parameters":{"temperature":-3}}`, "temperature", 400},
		{"/api/create", `{"model":"x","from":"fake","template":"{{range 100000000000}}x{{end}}"}`, "range", 400},
		{"/api/create", `{"model":"fake","from":"` + model + `"}`, "exists", 409},
		{"/api/copy", `{"source":"nope","destination":"y"}`, "nope", 404},
		{"/api/push", `{"model":"terse:v1"}`, "not supported", 501},
		{"/api/generate", `{"model":"` + model + `","prompt":"x","suffix":"y","stream":false}`, "fill-in-the-middle", 400},
		{"/api/generate", `{"model":"` + model + `","prompt":"x","think":true,"stream":false}`, "think", 400},
		{"/api/generate", `{"model":"` + model + `","prompt":"x","images":["aGk="],"stream":false}`, "images", 400},
		{"/api/chat", `{"model":"` + model + `","messages":[{"role":"user","content":"x","images":["aGk="]}],"stream":false}`, "images", 400},
	} {
		resp, b := ta.post(t, c.path, c.body)
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) || !strings.HasPrefix(string(b), `{"error":"`) {
			t.Errorf("%s %s: %d %s, want %d naming %q", c.path, c.body, resp.StatusCode, b, c.status, c.want)
		}
	}
	// OpenAI's error names the field that asked for fill-in-the-middle.
	if resp, b := ta.post(t, "/v1/completions", `{"model":"`+model+`","prompt":"x","suffix":"y"}`); resp.StatusCode != 400 ||
		!strings.Contains(string(b), `"param":"suffix"`) {
		t.Errorf("/v1/completions with a suffix the model cannot fill: %d %s, want a 400 with param suffix", resp.StatusCode, b)
	}
	// Legacy /api/embeddings.
	e := post("/api/embeddings", `{"model":"`+model+`","prompt":"hello"}`, 200)
	if n := len(e["embedding"].([]any)); n != 32 {
		t.Fatalf("/api/embeddings: %d values", n)
	}
	// num_ctx: a long prompt is truncated to fit, keeping its end.
	long := strings.Repeat("word ", 300)
	g = post("/api/generate", `{"model":"`+model+`","prompt":"`+long+`","raw":true,"stream":false,"options":{"num_ctx":64,"num_predict":4}}`, 200)
	if n := field(g, "prompt_eval_count").(float64); n > 60 || n < 30 {
		t.Fatalf("num_ctx 64: %v prompt tokens evaluated", n)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestOpenAIIgnoreEOS: ignore_eos on the OpenAI endpoints generates past
// the end-of-generation token up to max_tokens, as llama-server does on
// them (it was accepted and ignored).
func TestOpenAIIgnoreEOS(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	tok := ta.postOK(t, "/tokenize", `{"model":`+model+`,"content":"<|endoftext|>","add_special":false}`)
	ids := tok["tokens"].([]any)
	if len(ids) != 1 {
		t.Fatalf("<|endoftext|> is %v", ids)
	}
	eos := fmt.Sprint(ids[0])
	for _, tc := range []struct {
		path, body string
		ignore     bool
		usage      string
	}{
		{"/v1/completions", `"prompt":"hi"`, false, "completion_tokens"},
		{"/v1/completions", `"prompt":"hi"`, true, "completion_tokens"},
		{"/v1/chat/completions", `"messages":[{"role":"user","content":"hi"}]`, true, "completion_tokens"},
	} {
		body := `{"model":` + model + `,` + tc.body + `,"max_tokens":12,"logit_bias":{"` + eos + `":100},"ignore_eos":` + fmt.Sprint(tc.ignore) + `}`
		out := ta.postOK(t, tc.path, body)
		n := field(out, "usage", tc.usage).(float64)
		if tc.ignore && n != 12 || !tc.ignore && n > 1 {
			t.Errorf("%s ignore_eos %v: %v tokens with the end token favoured", tc.path, tc.ignore, n)
		}
	}
}
