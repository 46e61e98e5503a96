package api

import (
	"strings"
	"testing"
)

// TestGenerateRawRefusesSystemAndTemplate: /api/generate with raw and a
// system prompt or template is a 400 naming the field, as Ollama answers
// it ("raw mode does not support template, system, or context"; context
// is taken here): both were dropped without a word, the raw prompt sent
// alone.
func TestGenerateRawRefusesSystemAndTemplate(t *testing.T) {
	ta := startAPI(t)
	for _, c := range []struct {
		name, fields, param string
	}{
		{"raw alone", `"raw":true`, ""},
		{"raw and system", `"raw":true,"system":"Be terse."`, "system"},
		{"raw and template", `"raw":true,"template":"{{ .Prompt }}"`, "template"},
		{"system without raw", `"system":"Be terse."`, ""},
		{"raw false and template", `"raw":false,"template":"{{ .Prompt }}"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := ta.post(t, "/api/generate", `{"model":"fake","prompt":"Hello","stream":false,`+c.fields+`}`)
			if c.param == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s, want 200", resp.StatusCode, b)
				}
				return
			}
			if resp.StatusCode != 400 || !strings.Contains(string(b), c.param) || !strings.Contains(string(b), "raw") {
				t.Fatalf("%d %s, want a 400 naming %s and raw", resp.StatusCode, b, c.param)
			}
		})
	}
}
