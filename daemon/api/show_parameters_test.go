package api

import (
	"strings"
	"testing"
)

// TestShowParametersOllamaForm: /api/show's "parameters" is written as
// Ollama writes it, a line per value with the name first (padded to 30
// columns) and strings quoted, not as Modelfile PARAMETER lines: ruvllm
// chat and run --remote read each line's first word as the name of a
// parameter the created model sets, and with "PARAMETER" there sent their
// own defaults over the model's temperature and num_predict. The
// Modelfile keeps its PARAMETER lines.
func TestShowParametersOllamaForm(t *testing.T) {
	ta := startAPI(t)
	mf := "FROM fake\nPARAMETER temperature 0.6\nPARAMETER num_predict 8\nPARAMETER stop <|im_end|>\nPARAMETER stop \"two words\"\n"
	ta.postOK(t, "/api/create", `{"model":"params","modelfile":`+quote(mf)+`,"stream":false}`)
	s := ta.postOK(t, "/api/show", `{"model":"params"}`)
	want := "num_predict                    8\n" +
		"stop                           \"<|im_end|>\"\n" +
		"stop                           \"two words\"\n" +
		"temperature                    0.6\n"
	if got := s["parameters"]; got != want {
		t.Errorf("parameters %q, want %q", got, want)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(s["parameters"].(string), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names[f[0]] = true
		}
	}
	for _, n := range []string{"temperature", "num_predict", "stop"} {
		if !names[n] {
			t.Errorf("no line names %s: %v", n, names)
		}
	}
	if mfOut := s["modelfile"].(string); !strings.Contains(mfOut, "PARAMETER temperature 0.6\n") || !strings.Contains(mfOut, "PARAMETER stop \"<|im_end|>\"\n") {
		t.Errorf("modelfile lost its PARAMETER lines:\n%s", mfOut)
	}
}
