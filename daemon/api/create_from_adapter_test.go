package api

import (
	"strings"
	"testing"
)

// TestCreateFromAdapterFile: a LoRA adapter file given as a created
// model's from is a 400 naming from; it was created (200) and every
// request to it then failed to load it (422).
func TestCreateFromAdapterFile(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	path := randomAdapter(t, base, t.TempDir(), "style", 1, 0)
	resp, b := ta.post(t, "/api/create", `{"model":"wrong","from":`+quote(path)+`,"stream":false}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "adapter") {
		t.Fatalf("create from an adapter file: %d %s, want 400", resp.StatusCode, b)
	}
	ta.postOK(t, "/api/create", `{"model":"right","from":`+quote(base)+`,"stream":false}`)
}
