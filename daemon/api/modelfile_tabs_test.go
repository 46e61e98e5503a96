package api

import (
	"testing"
)

// TestModelfileTabSeparated: a tab separates a command, a MESSAGE's role
// and a PARAMETER's name from what follows, as in Ollama's Modelfile
// parser; "PARAMETER\ttemperature\t0.5" was an unknown command.
func TestModelfileTabSeparated(t *testing.T) {
	for _, c := range []struct {
		name, text string
		check      func(t *testing.T, from, system string, params map[string]any, msgs int)
	}{
		{"command and parameter", "FROM\tbase\nPARAMETER\ttemperature\t0.5\nPARAMETER  \t stop\t<|eot_id|>\n", func(t *testing.T, from, _ string, p map[string]any, _ int) {
			if from != "base" || p["temperature"] != 0.5 {
				t.Errorf("from %q, parameters %v", from, p)
			}
			if s, _ := p["stop"].([]string); len(s) != 1 || s[0] != "<|eot_id|>" {
				t.Errorf("stop %v", p["stop"])
			}
		}},
		{"system", "FROM base\nSYSTEM\t\"\"\"Be brief.\"\"\"\n", func(t *testing.T, _, system string, _ map[string]any, _ int) {
			if system != "Be brief." {
				t.Errorf("system %q", system)
			}
		}},
		{"message", "FROM base\nMESSAGE\tuser\tHi there\n", func(t *testing.T, _, _ string, _ map[string]any, msgs int) {
			if msgs != 1 {
				t.Errorf("%d messages", msgs)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _, err := parseModelfile(c.text)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, req.From, req.System, req.Parameters, len(req.Messages))
			if c.name == "message" && (req.Messages[0].Role != "user" || req.Messages[0].Content != "Hi there") {
				t.Errorf("message %+v", req.Messages[0])
			}
		})
	}
}
