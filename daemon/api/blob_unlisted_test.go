package api

import (
	"strings"
	"testing"
)

// TestLoadedBlobNotListed: a model created from uploaded files (how the
// ollama client creates one from a local GGUF) is listed by its name
// alone while it is loaded: /api/tags and /v1/models listed its weights
// too, as a model named sha256-<digest>, which Ollama never shows.
func TestLoadedBlobNotListed(t *testing.T) {
	ta := startAPIWith(t, true)
	createFromBlob(t, ta, "fromblob")
	ta.postOK(t, "/api/chat", `{"model":"fromblob","stream":false,"options":{"num_predict":1},"messages":[{"role":"user","content":"hi"}]}`)
	for _, path := range []string{"/api/tags", "/v1/models"} {
		code, b := ta.get(t, path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, b)
		}
		if strings.Contains(string(b), "sha256-") || !strings.Contains(string(b), "fromblob") {
			t.Errorf("%s lists the blob, or not the model: %s", path, b)
		}
	}
}
