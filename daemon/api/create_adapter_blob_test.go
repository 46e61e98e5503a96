package api

import (
	"strings"
	"testing"
)

// TestCreateAdapterBlobNotUploaded: an adapter digest that was never
// uploaded is a 400 naming the adapters field and the digest, as for
// files; it named the blob's path in the models directory and an lstat
// error.
func TestCreateAdapterBlobNotUploaded(t *testing.T) {
	ta := startAPI(t)
	digest := "sha256:" + strings.Repeat("2", 64)
	resp, b := ta.post(t, "/api/create", `{"model":"ad","from":"fake","adapters":{"x.gguf":"`+digest+`"},"stream":false}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "adapters.x.gguf") || !strings.Contains(string(b), digest+" was not uploaded") ||
		strings.Contains(string(b), "lstat") || strings.Contains(string(b), "sha256-") {
		t.Fatalf("%d %s, want a 400 naming adapters.x.gguf and the digest", resp.StatusCode, b)
	}
}
