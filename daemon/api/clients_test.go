package api

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestOllamaPsDigest: a loaded model has the digest in /api/ps that
// /api/tags gives it (the ollama client's types have it; it was empty).
func TestOllamaPsDigest(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	if resp, b := ta.post(t, "/api/generate", `{"model":`+quote(model)+`,"prompt":"hi","stream":false,"options":{"num_predict":1}}`); resp.StatusCode != 200 {
		t.Fatalf("generate: %d %s", resp.StatusCode, b)
	}
	digests := map[string]map[string]string{}
	for _, path := range []string{"/api/tags", "/api/ps"} {
		code, b := ta.get(t, path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, b)
		}
		digests[path] = map[string]string{}
		for _, m := range field(mustJSON(t, string(b)), "models").([]any) {
			digests[path][m.(map[string]any)["name"].(string)] = m.(map[string]any)["digest"].(string)
		}
	}
	ps, tags := digests["/api/ps"]["tiny-real"], digests["/api/tags"]["tiny-real"]
	if ps == "" || ps != tags {
		t.Fatalf("tiny-real: digest %q in /api/ps, %q in /api/tags", ps, tags)
	}
}

// TestEmbeddingsOfCreatedModels: a model made with /api/create embeds with
// its base on /api/embed and /v1/embeddings (they answered 404), and
// /api/embed honours dimensions and keep_alive like the other endpoints.
func TestEmbeddingsOfCreatedModels(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	if resp, b := ta.post(t, "/api/create", `{"model":"alias","from":`+quote(model)+`,"stream":false}`); resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	embed := func(path, body string) map[string]any {
		t.Helper()
		resp, b := ta.post(t, path, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", path, body, resp.StatusCode, b)
		}
		return mustJSON(t, string(b))
	}
	direct := field(embed("/api/embed", `{"model":`+quote(model)+`,"input":"hello"}`), "embeddings", 0).([]any)
	alias := field(embed("/api/embed", `{"model":"alias","input":"hello"}`), "embeddings", 0).([]any)
	openai := field(embed("/v1/embeddings", `{"model":"alias","input":"hello"}`), "data", 0, "embedding").([]any)
	if len(direct) == 0 || fmt.Sprint(direct) != fmt.Sprint(alias) || fmt.Sprint(direct) != fmt.Sprint(openai) {
		t.Fatalf("embeddings of alias differ from its base's:\n%v\n%v\n%v", direct, alias, openai)
	}

	small := field(embed("/api/embed", `{"model":"alias","input":"hello","dimensions":4,"keep_alive":"7m"}`), "embeddings", 0).([]any)
	var norm float64
	for _, v := range small {
		norm += v.(float64) * v.(float64)
	}
	if len(small) != 4 || math.Abs(norm-1) > 1e-5 {
		t.Fatalf("dimensions 4: %v (norm² %v)", small, norm)
	}
	found := false
	for _, lm := range ta.mgr.Loaded() {
		if lm.Name == "tiny-real" {
			found = true
			if left := time.Until(lm.ExpiresAt); left < 6*time.Minute || left > 7*time.Minute {
				t.Fatalf("keep_alive 7m: expires in %v", left)
			}
		}
	}
	if !found {
		t.Fatal("tiny-real is not loaded after /api/embed")
	}
	for _, body := range []string{`{"model":"alias","input":"x","dimensions":100000}`, `{"model":"alias","input":"x","dimensions":0}`} {
		if resp, b := ta.post(t, "/api/embed", body); resp.StatusCode != 400 || !strings.Contains(string(b), `"error":"dimensions`) {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
}

// TestOpenAIModelsListCreatedModels: a model made with /api/create is
// listed by GET /v1/models (as /api/tags names it) and found by GET
// /v1/models/{id}, as OpenAI clients can chat with it.
func TestOpenAIModelsListCreatedModels(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t)
	if resp, b := ta.post(t, "/api/create", `{"model":"alias","from":`+quote(model)+`,"stream":false}`); resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	code, b := ta.get(t, "/v1/models")
	if code != 200 || !strings.Contains(string(b), `"id":"alias:latest"`) {
		t.Fatalf("/v1/models: %d %s", code, b)
	}
	for _, id := range []string{"alias", "alias:latest"} {
		code, b = ta.get(t, "/v1/models/"+id)
		if code != 200 || field(mustJSON(t, string(b)), "id") != id {
			t.Fatalf("/v1/models/%s: %d %s", id, code, b)
		}
	}
	if code, b = ta.get(t, "/v1/models/no-such"); code != 404 || !strings.Contains(string(b), "model_not_found") {
		t.Fatalf("/v1/models/no-such: %d %s", code, b)
	}
}
