package api

import (
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestModelfileMultilineMessageRoundTrip: a MESSAGE's text may span lines
// between triple quotes (as in Ollama), and /api/show's Modelfile writes a
// multi-line message that way, so it reads back; it wrote the text bare,
// whose later lines read as commands ("FROM ..." in a message replaced the
// base model, other lines were unknown commands).
func TestModelfileMultilineMessageRoundTrip(t *testing.T) {
	req, _, err := parseModelfile("FROM base\nMESSAGE user \"\"\"first line\nsecond line\"\"\"\nMESSAGE assistant ok\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != 2 || req.Messages[0].Content != "first line\nsecond line" || req.Messages[1].Content != "ok" {
		t.Fatalf("messages %+v", req.Messages)
	}
	m := &ipc.ModelManifest{Messages: []ipc.Message{{Role: "user", Content: "a\nFROM /etc/passwd"}, {Role: "assistant", Content: "b"}}}
	text := formatModelfile(m, "/models/base.gguf")
	back, _, err := parseModelfile(text)
	if err != nil {
		t.Fatalf("%s\n%v", text, err)
	}
	if back.From != "/models/base.gguf" || len(back.Messages) != 2 || back.Messages[0].Content != "a\nFROM /etc/passwd" {
		t.Fatalf("%s\nread back as from %q messages %+v", text, back.From, back.Messages)
	}
}
