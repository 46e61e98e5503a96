package api

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// llamaVector returns the one vector of entry i of a /embedding answer.
func llamaVector(t *testing.T, b []byte, i int) []float64 {
	t.Helper()
	var out []struct {
		Index     int         `json:"index"`
		Embedding [][]float64 `json:"embedding"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("not a /embedding answer: %s: %v", b, err)
	}
	if i >= len(out) || out[i].Index != i || len(out[i].Embedding) != 1 {
		t.Fatalf("entry %d: %s", i, b)
	}
	return out[i].Embedding[0]
}

// TestLlamaServerEmbedding drives llama-server's /embedding with the forms
// its clients send, on a real (tiny) model: the vector is the one
// /v1/embeddings gives, each embd_normalize scales it as llama.cpp does,
// and bad input is a 400 naming the field.
func TestLlamaServerEmbedding(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	embed := func(path, body string) []byte {
		t.Helper()
		resp, b := ta.post(t, path, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", path, body, resp.StatusCode, b)
		}
		return b
	}
	oai := ta.postOK(t, "/v1/embeddings", `{"model":`+model+`,"input":"Once upon a time"}`)
	var want []float64
	for _, x := range field(oai, "data", 0, "embedding").([]any) {
		want = append(want, x.(float64))
	}
	got := llamaVector(t, embed("/embedding", `{"model":`+model+`,"content":"Once upon a time"}`), 0)
	if len(got) != len(want) {
		t.Fatalf("dimension %d, /v1/embeddings %d", len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			t.Fatalf("value %d: %g, /v1/embeddings %g", i, got[i], want[i])
		}
	}
	// "input" on /embeddings, and the prompt as token ids, give the same.
	tk := ta.postOK(t, "/tokenize", `{"model":`+model+`,"content":"Once upon a time","add_special":true}`)
	ids, _ := json.Marshal(tk["tokens"])
	for _, body := range []string{`{"model":` + model + `,"input":"Once upon a time"}`, `{"model":` + model + `,"content":` + string(ids) + `}`} {
		v := llamaVector(t, embed("/embeddings", body), 0)
		for i := range v {
			if math.Abs(v[i]-got[i]) > 1e-6 {
				t.Fatalf("%s: value %d: %g, want %g", body, i, v[i], got[i])
			}
		}
	}
	// Several prompts: one entry each, in order.
	two := embed("/embedding", `{"model":`+model+`,"content":["A dog","Once upon a time"]}`)
	if v := llamaVector(t, two, 1); math.Abs(v[0]-got[0]) > 1e-6 {
		t.Fatalf("second prompt's vector %g…, want %g…", v[0], got[0])
	}
	if a := llamaVector(t, two, 0); math.Abs(a[0]-got[0]) < 1e-9 && math.Abs(a[1]-got[1]) < 1e-9 {
		t.Fatalf("two different prompts embedded alike: %s", two)
	}
	// embd_normalize: -1 is the raw mean, whose Euclidean normalisation is
	// the default; 0 puts the largest magnitude at 32760; 1 and 3 give a
	// unit taxicab and 3-norm.
	raw := llamaVector(t, embed("/embedding", `{"model":`+model+`,"content":"Once upon a time","embd_normalize":-1}`), 0)
	norm := func(v []float64, p float64) float64 {
		var s float64
		for _, x := range v {
			s += math.Pow(math.Abs(x), p)
		}
		return math.Pow(s, 1/p)
	}
	if l2 := norm(raw, 2); math.Abs(l2-1) < 1e-3 || math.Abs(raw[0]/l2-got[0]) > 1e-5 {
		t.Fatalf("raw vector: norm %g, first value %g (normalised %g, want %g)", l2, raw[0], raw[0]/l2, got[0])
	}
	maxAbs := 0.0
	for _, x := range llamaVector(t, embed("/embedding", `{"model":`+model+`,"content":"Once upon a time","embd_normalize":0}`), 0) {
		maxAbs = max(maxAbs, math.Abs(x))
	}
	if math.Abs(maxAbs-32760) > 0.01 {
		t.Fatalf("embd_normalize 0: largest magnitude %g, want 32760", maxAbs)
	}
	for _, p := range []float64{1, 3} {
		v := llamaVector(t, embed("/embedding", `{"model":`+model+`,"content":"Once upon a time","embd_normalize":`+strings.TrimSuffix(jsonNum(p), ".0")+`}`), 0)
		if n := norm(v, p); math.Abs(n-1) > 1e-5 {
			t.Fatalf("embd_normalize %g: norm %g", p, n)
		}
	}

	for _, c := range []struct{ path, body, want string }{
		{"/embedding", `{"model":` + model + `}`, `"input\" or \"content\" is required`},
		{"/embedding", `{"model":` + model + `,"content":""}`, `content`},
		{"/embedding", `{"model":` + model + `,"content":["a",""]}`, `content[1]`},
		{"/embedding", `{"model":` + model + `,"content":[1,99999999]}`, `content[1]`},
		{"/embedding", `{"model":` + model + `,"content":{"x":1}}`, `content`},
		{"/embedding", `{"model":` + model + `,"content":"a","embd_normalize":65}`, `embd_normalize`},
		{"/embedding", `{"model":` + model + `,"content":"a","embd_normalize":-2}`, `embd_normalize`},
		{"/embeddings", `{"model":` + model + `,"input":"a","encoding_format":"hex"}`, `encoding_format`},
		{"/embedding", `{"model":` + model + `,"content":"a","embd_normalize":"2"}`, `embd_normalize`},
	} {
		resp, b := ta.post(t, c.path, c.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s, want a 400 naming %s", c.path, c.body, resp.StatusCode, b, c.want)
		}
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestEmbdNormalize(t *testing.T) {
	for _, c := range []struct {
		mode int
		in   []float32
		want []float32
	}{
		{-1, []float32{3, -4}, []float32{3, -4}},
		{0, []float32{3, -4}, []float32{24570, -32760}},
		{1, []float32{3, -4}, []float32{3.0 / 7, -4.0 / 7}},
		{2, []float32{3, -4}, []float32{0.6, -0.8}},
		{3, []float32{1, 1}, []float32{float32(1 / math.Cbrt(2)), float32(1 / math.Cbrt(2))}},
		{64, []float32{1e30, -1e30}, []float32{float32(1 / math.Pow(2, 1.0/64)), float32(-1 / math.Pow(2, 1.0/64))}},
		{2, []float32{0, 0}, []float32{0, 0}},
		{0, []float32{0, 0}, []float32{0, 0}},
		{5, []float32{0, 0}, []float32{0, 0}},
	} {
		got := embdNormalize(append([]float32(nil), c.in...), c.mode)
		for i := range got {
			if math.Abs(float64(got[i]-c.want[i])) > 1e-5*math.Max(1, math.Abs(float64(c.want[i]))) {
				t.Errorf("embdNormalize(%v, %d) = %v, want %v", c.in, c.mode, got, c.want)
				break
			}
		}
	}
}

// TestLlamaServerLora applies adapters by llama-server's ids: GET
// /lora-adapters numbers them in install order, a request's "lora" applies
// the listed ones at their scales exactly as "adapters" does by name, a
// scale of 0 leaves one out, and a bad id is a 400.
func TestLlamaServerLora(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	model := quote(base)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	// Installed "zeta" first, then "alpha": ids follow the install, not the name.
	for i, name := range []string{"zeta", "alpha"} {
		if _, err := pool.Install(context.Background(), randomAdapter(t, base, dir, name, uint64(i+1), 64), name, false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	code, b := ta.get(t, "/lora-adapters")
	var list []map[string]any
	if err := json.Unmarshal(b, &list); code != 200 || err != nil || len(list) != 2 ||
		list[0]["id"] != 0.0 || list[0]["name"] != "zeta" || list[1]["id"] != 1.0 || list[1]["name"] != "alpha" ||
		list[0]["scale"] != 0.0 || list[0]["path"] == "" {
		t.Fatalf("GET /lora-adapters: %d %s", code, b)
	}

	probs := func(extra string) string {
		t.Helper()
		c := ta.postOK(t, "/completion", `{"model":`+model+`,"prompt":"Once upon a time","n_predict":4,"temperature":0,"n_probs":2`+extra+`}`)
		out, _ := json.Marshal([]any{c["content"], c["completion_probabilities"]})
		return string(out)
	}
	none := probs("")
	byID := probs(`,"lora":[{"id":0,"scale":1.5}]`)
	byName := probs(`,"adapters":[{"name":"zeta","scale":1.5}]`)
	if byID != byName {
		t.Fatalf("lora id 0 gave %s\nadapter zeta gave %s", byID, byName)
	}
	if byID == none {
		t.Fatalf("the adapter changed nothing: %s", byID)
	}
	if both := probs(`,"lora":[{"id":1,"scale":1},{"id":0,"scale":1.5}]`); both != probs(`,"adapters":[{"name":"alpha"},{"name":"zeta","scale":1.5}]`) {
		t.Fatalf("two adapters by id and by name differ")
	}
	// OpenAI's chat completions and completions take it as llama-server's do.
	for _, path := range []string{"/v1/chat/completions", "/chat/completions", "/v1/completions"} {
		body := `"messages":[{"role":"user","content":"Once upon a time"}],"logprobs":true`
		if path == "/v1/completions" {
			body = `"prompt":"Once upon a time","logprobs":1`
		}
		reply := func(extra string) any {
			c := ta.postOK(t, path, `{"model":`+model+`,`+body+`,"max_tokens":6,"temperature":0`+extra+`}`)
			return field(c, "choices", 0)
		}
		if a, b := reply(`,"lora":[{"id":0,"scale":1.5}]`), reply(`,"adapters":[{"name":"zeta","scale":1.5}]`); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: lora id 0 gave %v\nadapter zeta gave %v", path, a, b)
		} else if reflect.DeepEqual(a, reply("")) {
			t.Fatalf("%s: the adapter changed nothing: %v", path, a)
		}
		if resp, b := ta.post(t, path, `{"model":`+model+`,`+body+`,"lora":[{"id":5,"scale":1}]}`); resp.StatusCode != 400 || !strings.Contains(string(b), "lora[0].id") {
			t.Fatalf("%s with a bad lora id: %d %s", path, resp.StatusCode, b)
		}
	}
	if zero := probs(`,"lora":[{"id":0,"scale":0}]`); zero != none {
		t.Fatalf("scale 0 applied the adapter: %s, none %s", zero, none)
	}
	// The infill endpoint reads it too (this model has no FIM tokens, so a
	// good id gets as far as that).
	if resp, b := ta.post(t, "/infill", `{"model":`+model+`,"input_prefix":"a","input_suffix":"b","lora":[{"id":7,"scale":1}]}`); resp.StatusCode != 400 || !strings.Contains(string(b), "lora[0].id") {
		t.Fatalf("/infill with a bad lora id: %d %s", resp.StatusCode, b)
	}

	for _, c := range []struct{ body, want string }{
		{`"lora":[{"id":2,"scale":1}]`, `lora[0].id`},
		{`"lora":[{"scale":1}]`, `lora[0].id`},
		{`"lora":[{"id":-1,"scale":1}]`, `lora[0].id`},
		{`"lora":[{"id":0,"scale":1},{"id":0,"scale":2}]`, `lora[1].id`},
		{`"lora":[{"id":0,"scale":1e9}]`, `lora[0].scale`},
		{`"lora":[{"id":0}],"adapters":[{"name":"zeta"}]`, `not both`},
		{`"lora":{"id":0}`, `lora`},
		{`"lora":[{"id":"0"}]`, `lora`},
	} {
		resp, b := ta.post(t, "/completion", `{"model":`+model+`,"prompt":"x","n_predict":1,`+c.body+`}`)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want a 400 naming %s", c.body, resp.StatusCode, b, c.want)
		}
	}
	if resp, b := ta.post(t, "/lora-adapters", `[{"id":0,"scale":1}]`); resp.StatusCode != 400 || !strings.Contains(string(b), "per request") {
		t.Fatalf("POST /lora-adapters: %d %s", resp.StatusCode, b)
	}
}

// TestLlamaServerAliases: llama-server's OpenAI routes without /v1 and its
// /v1/health answer as their /v1 forms do.
func TestLlamaServerAliases(t *testing.T) {
	ta := startAPIWith(t, false)
	c := ta.postOK(t, "/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`)
	if c["object"] != "chat.completion" {
		t.Fatalf("/chat/completions: %v", c)
	}
	if code, b := ta.get(t, "/models"); code != 200 || !strings.Contains(string(b), `"fake"`) {
		t.Fatalf("/models: %d %s", code, b)
	}
	if code, b := ta.get(t, "/v1/health"); code != 200 || !strings.Contains(string(b), "ok") {
		t.Fatalf("/v1/health: %d %s", code, b)
	}
}

// TestLlamaServerCreatedModel: llama-server's routes take a created
// model's name (they were 404s): /completion runs its base with its
// adapters and names it in the reply; /tokenize and /infill read its
// base's tokenizer.
func TestLlamaServerCreatedModel(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	ta.postOK(t, "/api/create", `{"model":"mine","from":`+quote(base)+`,"system":"Be brief.","stream":false}`)
	want := ta.postOK(t, "/completion", `{"model":`+quote(base)+`,"prompt":"Once upon a time","n_predict":4,"temperature":0}`)
	got := ta.postOK(t, "/completion", `{"model":"mine","prompt":"Once upon a time","n_predict":4,"temperature":0}`)
	if got["content"] != want["content"] || got["model"] != "mine" {
		t.Fatalf("created model: %v %v, base: %v", got["content"], got["model"], want["content"])
	}
	tb := ta.postOK(t, "/tokenize", `{"model":`+quote(base)+`,"content":"Once upon a time"}`)
	tm := ta.postOK(t, "/tokenize", `{"model":"mine","content":"Once upon a time"}`)
	if fmtJSON(tb["tokens"]) != fmtJSON(tm["tokens"]) {
		t.Fatalf("tokenize: created %v, base %v", tm["tokens"], tb["tokens"])
	}
	if resp, b := ta.post(t, "/completion", `{"model":"nosuch","prompt":"x"}`); resp.StatusCode != 404 {
		t.Fatalf("unknown model: %d %s", resp.StatusCode, b)
	}
}
