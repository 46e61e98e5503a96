package api

import "testing"

// TestCreatedModelNamedOnLoadAndEmbeddings: the answers that load or
// unload a created model (an empty generate or chat) and its embeddings
// name the created model, as its generations do; they named its base.
func TestCreatedModelNamedOnLoadAndEmbeddings(t *testing.T) {
	ta := startAPI(t)
	ta.postOK(t, "/api/create", `{"model":"persona","from":"fake","system":"You are P.","stream":false}`)
	for _, c := range []struct{ path, body, want string }{
		{"/api/generate", `{"model":"persona","prompt":"","stream":false}`, "persona"},
		{"/api/generate", `{"model":"persona:latest","prompt":"","stream":false,"keep_alive":0}`, "persona:latest"},
		{"/api/chat", `{"model":"persona","messages":[],"stream":false}`, "persona"},
		{"/api/embed", `{"model":"persona","input":"Hi"}`, "persona"},
		{"/v1/embeddings", `{"model":"persona","input":"Hi"}`, "persona"},
		{"/api/generate", `{"model":"fake","prompt":"","stream":false}`, "fake"},
		{"/api/embed", `{"model":"fake","input":"Hi"}`, "fake"},
	} {
		if got := ta.postOK(t, c.path, c.body)["model"]; got != c.want {
			t.Errorf("%s %s: model %v, want %s", c.path, c.body, got, c.want)
		}
	}
}
