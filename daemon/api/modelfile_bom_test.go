package api

import "testing"

// TestModelfileByteOrderMark: a Modelfile that starts with a UTF-8 byte
// order mark (as Windows editors save it) reads as without it, as Ollama
// reads it; its first line was the unknown command "\ufeffFROM".
func TestModelfileByteOrderMark(t *testing.T) {
	for _, text := range []string{"\ufeffFROM base\nSYSTEM hi\n", "\ufeff# comment\nFROM base\nSYSTEM hi\n"} {
		req, _, err := parseModelfile(text)
		if err != nil || req.From != "base" || req.System != "hi" {
			t.Errorf("%q: from %q, system %v, %v", text, req.From, req.System, err)
		}
	}
}
