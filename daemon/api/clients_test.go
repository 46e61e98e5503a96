package api

import (
	"testing"
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
