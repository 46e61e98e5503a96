package api

import (
	"slices"
	"testing"
)

// TestCreatedModelExplicitEmptyStop: an explicit empty stop list in a
// request replaces a created model's PARAMETER stop strings, as Ollama
// merges request options over the Modelfile's (and as OpenAI and
// Anthropic read [] as no stop strings); null or no list keeps them, and a
// list of its own replaces them. An empty list kept the model's.
func TestCreatedModelExplicitEmptyStop(t *testing.T) {
	ta := startAPI(t)
	ta.postOK(t, "/api/create", `{"model":"stopper","from":"fake","parameters":{"stop":["END","###"]},"stream":false}`)
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	model := []string{"END", "###"}
	for _, c := range []struct {
		name, path, body string
		want             []string
	}{
		{"ollama generate none", "/api/generate", `{"model":"stopper","prompt":"Hi","stream":false}`, model},
		{"ollama generate null", "/api/generate", `{"model":"stopper","prompt":"Hi","stream":false,"options":{"stop":null}}`, model},
		{"ollama generate empty", "/api/generate", `{"model":"stopper","prompt":"Hi","stream":false,"options":{"stop":[]}}`, nil},
		{"ollama generate own", "/api/generate", `{"model":"stopper","prompt":"Hi","stream":false,"options":{"stop":["x"]}}`, []string{"x"}},
		{"ollama chat empty", "/api/chat", `{"model":"stopper","stream":false,"options":{"stop":[]},` + msgs + `}`, nil},
		{"ollama chat null", "/api/chat", `{"model":"stopper","stream":false,"options":{"stop":null},` + msgs + `}`, model},
		{"openai chat none", "/v1/chat/completions", `{"model":"stopper",` + msgs + `}`, model},
		{"openai chat null", "/v1/chat/completions", `{"model":"stopper","stop":null,` + msgs + `}`, model},
		{"openai chat empty", "/v1/chat/completions", `{"model":"stopper","stop":[],` + msgs + `}`, nil},
		{"openai completions empty", "/v1/completions", `{"model":"stopper","prompt":"Hi","stop":[]}`, nil},
		{"openai completions own", "/v1/completions", `{"model":"stopper","prompt":"Hi","stop":"x"}`, []string{"x"}},
		{"anthropic empty", "/v1/messages", `{"model":"stopper","max_tokens":8,"stop_sequences":[],` + msgs + `}`, nil},
		{"anthropic none", "/v1/messages", `{"model":"stopper","max_tokens":8,` + msgs + `}`, model},
	} {
		t.Run(c.name, func(t *testing.T) {
			ta.postOK(t, c.path, c.body)
			if got := ta.fakes["fake"].lastRequest().Stop; !slices.Equal(got, c.want) {
				t.Errorf("stop %q, want %q", got, c.want)
			}
		})
	}
}
