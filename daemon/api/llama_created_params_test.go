package api

import (
	"net/url"
	"testing"
)

// TestLlamaCompletionCreatedParameters: llama-server's /completion and
// /props apply a created model's parameters where the request leaves them
// unset, as the Ollama and OpenAI endpoints do; the request's own values
// win, and llama-server's defaults fill what neither sets. They ran on
// llama-server's defaults (temperature 0.8, no stop strings, no limit).
func TestLlamaCompletionCreatedParameters(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	ta.postOK(t, "/api/create", `{"model":"persona","from":`+quote(base)+`,"stream":false,`+
		`"parameters":{"temperature":0.25,"top_k":7,"seed":42,"stop":["END"],"num_predict":3}}`)
	for _, c := range []struct {
		name, body          string
		temp, topK, seed, n float64
		stop                []any
	}{
		{"model's", `{"model":"persona","prompt":"Hi"}`, 0.25, 7, 42, 3, []any{"END"}},
		{"request's", `{"model":"persona","prompt":"Hi","temperature":0.5,"top_k":3,"seed":9,"stop":["x"],"n_predict":2}`, 0.5, 3, 9, 2, []any{"x"}},
		{"max_tokens", `{"model":"persona","prompt":"Hi","max_tokens":1}`, 0.25, 7, 42, 1, []any{"END"}},
		{"empty stop", `{"model":"persona","prompt":"Hi","stop":[]}`, 0.25, 7, 42, 3, []any{}},
		{"base", `{"model":` + quote(base) + `,"prompt":"Hi","seed":1,"n_predict":2}`, 0.8, 40, 1, 2, []any{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gs := field(ta.postOK(t, "/completion", c.body), "generation_settings").(map[string]any)
			if gs["temperature"] != c.temp || gs["top_k"] != c.topK || gs["seed"] != c.seed || gs["n_predict"] != c.n ||
				len(gs["stop"].([]any)) != len(c.stop) || (len(c.stop) > 0 && gs["stop"].([]any)[0] != c.stop[0]) {
				t.Errorf("generation_settings %v, want temperature %v top_k %v seed %v n_predict %v stop %v", gs, c.temp, c.topK, c.seed, c.n, c.stop)
			}
		})
	}
	_, body := ta.get(t, "/props?model=persona")
	params := field(mustJSON(t, string(body)), "default_generation_settings", "params").(map[string]any)
	if params["temperature"] != 0.25 || params["top_k"] != 7.0 || params["n_predict"] != 3.0 {
		t.Errorf("/props?model=persona params %v, want the model's parameters", params)
	}
	_, body = ta.get(t, "/props?model="+url.QueryEscape(base))
	if params := field(mustJSON(t, string(body)), "default_generation_settings", "params").(map[string]any); params["temperature"] != 0.8 {
		t.Errorf("/props of the base: %v, want llama-server's defaults", params)
	}
}
