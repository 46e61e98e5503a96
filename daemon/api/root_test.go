package api

import (
	"strings"
	"testing"
)

// TestRootAnswersLikeOllama: GET and HEAD / answer 200, as Ollama's root
// does. The ollama CLI sends HEAD / before list, run, ps, show and the
// others and stops at any error status: a 404 made every command fail.
// Other unknown routes are still 404s.
func TestRootAnswersLikeOllama(t *testing.T) {
	ta := startAPI(t)
	if status, b := ta.get(t, "/"); status != 200 || !strings.Contains(string(b), "Ollama is running") {
		t.Fatalf("GET /: %d %s", status, b)
	}
	resp, err := ta.http.Head("http://ruvllm/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("HEAD /: %d", resp.StatusCode)
	}
	if status, b := ta.get(t, "/slots"); status != 404 || !strings.Contains(string(b), "no such endpoint") {
		t.Fatalf("GET /slots: %d %s", status, b)
	}
	if resp, b := ta.post(t, "/", `{}`); resp.StatusCode != 404 {
		t.Fatalf("POST /: %d %s", resp.StatusCode, b)
	}
}
