package api

import (
	"strings"
	"testing"
)

// TestOllamaEmbedEmptyInputLoads: /api/embed without input (or with "")
// and /api/embeddings without a prompt load the model and answer 200 with
// no vectors, as Ollama does (how apps warm an embedding model; keep_alive
// 0 unloads it); they were a 400. A blank text among others is still a
// 400 naming it.
func TestOllamaEmbedEmptyInputLoads(t *testing.T) {
	ta := startAPI(t)
	for _, c := range []struct {
		path, body, want string
		loaded           bool
	}{
		{"/api/embed", `{"model":"fake"}`, `"embeddings":[]`, true},
		{"/api/embed", `{"model":"fake","input":""}`, `"embeddings":[]`, true},
		{"/api/embed", `{"model":"fake","input":[]}`, `"embeddings":[]`, true},
		{"/api/embed", `{"model":"fake","input":[],"keep_alive":0}`, `"embeddings":[]`, false},
		{"/api/embeddings", `{"model":"fake"}`, `"embedding":[]`, true},
	} {
		ta.mgr.Unload("fake")
		resp, b := ta.post(t, c.path, c.body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s, want 200 with %s", c.path, c.body, resp.StatusCode, b, c.want)
			continue
		}
		if !c.loaded {
			continue // unloaded after the reply, as keep_alive 0 does
		}
		if l := ta.mgr.Loaded(); len(l) != 1 || l[0].Name != "fake" {
			t.Errorf("%s %s: loaded %+v, want fake", c.path, c.body, l)
		}
	}
	if resp, b := ta.post(t, "/api/embed", `{"model":"fake","input":["a",""]}`); resp.StatusCode != 400 || !strings.Contains(string(b), "input[1]") {
		t.Errorf("a blank text among others: %d %s, want a 400 naming input[1]", resp.StatusCode, b)
	}
	if resp, b := ta.post(t, "/api/embed", `{"model":"nosuch"}`); resp.StatusCode != 404 {
		t.Errorf("no input, unknown model: %d %s, want 404", resp.StatusCode, b)
	}
}
