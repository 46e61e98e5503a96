package api

import "testing"

// TestPsNamesCreatedModel: /api/ps and /v1/health name a model that a
// request for a created model loaded by the created model's name, tagged
// as /api/tags lists it, whatever endpoint loaded it; they named its base
// file. As in Ollama, a loaded model keeps the name of the model whose
// request loaded it while other created models over the same file use it.
func TestPsNamesCreatedModel(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct{ name, path, body, want string }{
		{"generate", "/api/generate", `{"model":"persona","prompt":"Hi","stream":false}`, "persona:latest"},
		{"generate tagged", "/api/generate", `{"model":"Persona:latest","prompt":"Hi","stream":false}`, "persona:latest"},
		{"load only", "/api/generate", `{"model":"persona","prompt":"","stream":false}`, "persona:latest"},
		{"chat", "/api/chat", `{"model":"persona","stream":false,` + msgs + `}`, "persona:latest"},
		{"openai chat", "/v1/chat/completions", `{"model":"persona",` + msgs + `}`, "persona:latest"},
		{"openai completions", "/v1/completions", `{"model":"persona","prompt":"Hi"}`, "persona:latest"},
		{"embed", "/api/embed", `{"model":"persona","input":"Hi"}`, "persona:latest"},
		{"embeddings", "/api/embeddings", `{"model":"persona","prompt":"Hi"}`, "persona:latest"},
		{"openai embeddings", "/v1/embeddings", `{"model":"persona","input":"Hi"}`, "persona:latest"},
		{"base by its name", "/api/generate", `{"model":"fake","prompt":"Hi","stream":false}`, "fake"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ta := startAPI(t)
			ta.postOK(t, "/api/create", `{"model":"persona","from":"fake","system":"You are P.","stream":false}`)
			ta.postOK(t, "/api/create", `{"model":"other","from":"fake","system":"You are O.","stream":false}`)
			ta.postOK(t, c.path, c.body)
			// Another created model over the same file leaves the name.
			ta.postOK(t, "/api/generate", `{"model":"other","prompt":"Hi","stream":false}`)
			_, body := ta.get(t, "/api/ps")
			ps := mustJSON(t, string(body))
			if n := len(ps["models"].([]any)); n != 1 || field(ps, "models", 0, "name") != c.want || field(ps, "models", 0, "model") != c.want {
				t.Errorf("/api/ps %s, want one model named %s", body, c.want)
			}
			_, body = ta.get(t, "/v1/health")
			if got := field(mustJSON(t, string(body)), "loaded", 0, "name"); got != c.want {
				t.Errorf("/v1/health loaded %v, want %s: %s", got, c.want, body)
			}
		})
	}
}

// TestTagsNamesCreatedModelInBoth: /api/tags gives a created model its
// tagged name in both name and model, as Ollama does (model was the bare
// name, so a client matching /api/ps's model against it missed).
func TestTagsNamesCreatedModelInBoth(t *testing.T) {
	ta := startAPI(t)
	ta.postOK(t, "/api/create", `{"model":"persona","from":"fake","system":"You are P.","stream":false}`)
	_, body := ta.get(t, "/api/tags")
	tags := mustJSON(t, string(body))
	found := false
	for i := range tags["models"].([]any) {
		if field(tags, "models", i, "name") == "persona:latest" {
			found = true
			if m := field(tags, "models", i, "model"); m != "persona:latest" {
				t.Errorf("/api/tags model %v, want persona:latest", m)
			}
		}
	}
	if !found {
		t.Errorf("/api/tags has no persona:latest: %s", body)
	}
}
