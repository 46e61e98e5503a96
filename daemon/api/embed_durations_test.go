package api

import "testing"

// TestOllamaEmbedDurations: /api/embed answers with Ollama's
// total_duration, and load_duration when the request loaded the model,
// which the ollama client's EmbedResponse carries; both were missing.
func TestOllamaEmbedDurations(t *testing.T) {
	ta := startAPIWith(t, true)
	model := quote(realTinyModel(t))
	first := ta.postOK(t, "/api/embed", `{"model":`+model+`,"input":"hello"}`)
	if d, _ := first["total_duration"].(float64); d <= 0 {
		t.Errorf("total_duration %v, want positive: %v", first["total_duration"], first)
	}
	if d, _ := first["load_duration"].(float64); d <= 0 {
		t.Errorf("load_duration %v on the request that loaded the model, want positive", first["load_duration"])
	}
	again := ta.postOK(t, "/api/embed", `{"model":`+model+`,"input":["a","b"]}`)
	if d, _ := again["total_duration"].(float64); d <= 0 {
		t.Errorf("total_duration %v, want positive", again["total_duration"])
	}
	if _, ok := again["load_duration"]; ok {
		t.Errorf("load_duration %v with the model loaded already, want none", again["load_duration"])
	}
}
