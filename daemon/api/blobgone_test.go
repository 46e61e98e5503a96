package api

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreatedModelWhoseBlobIsGone: a created model whose weights blob was
// removed outside the daemon answers 404 naming the model and the lost
// file (it was "model not found" of the blob's path, naming no model the
// client knew), and can still be deleted.
func TestCreatedModelWhoseBlobIsGone(t *testing.T) {
	ta := startAPIWith(t, true)
	digest := createFromBlob(t, ta, "fromblob")
	var blob string
	filepath.WalkDir(ta.srv.Config().ModelsDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), strings.TrimPrefix(digest, "sha256:")) {
			blob = p
		}
		return nil
	})
	if blob == "" {
		t.Fatal("the blob is not in the models directory")
	}
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}
	resp2, b := ta.post(t, "/api/chat", `{"model":"fromblob","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
	if resp2.StatusCode != 404 || !strings.Contains(string(b), `\"fromblob\"`) || !strings.Contains(string(b), "gone") {
		t.Errorf("chat with the blob gone: %d %s", resp2.StatusCode, b)
	}
	req, _ := http.NewRequest("DELETE", "http://ruvllm/api/delete", strings.NewReader(`{"model":"fromblob"}`))
	if resp, err := ta.http.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("delete of the broken model: %v %v", resp, err)
	}
}

// createFromBlob uploads the tiny real model as a blob (as the ollama
// client does with a local GGUF) and creates the model name from it; it
// returns the blob's digest.
func createFromBlob(t *testing.T, ta *testAPI, name string) string {
	t.Helper()
	data, err := os.ReadFile(realTinyModel(t))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	resp, err := ta.http.Post("http://ruvllm/api/blobs/"+digest, "application/octet-stream", strings.NewReader(string(data)))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("blob upload: %v %v", resp, err)
	}
	ta.postOK(t, "/api/create", `{"model":"`+name+`","files":{"m.gguf":"`+digest+`"},"stream":false}`)
	return digest
}
