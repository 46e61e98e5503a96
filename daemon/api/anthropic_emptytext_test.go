package api

import (
	"encoding/json"
	"testing"
)

// TestAnthropicEmptyTextBlockHasText: a reply whose text is empty (a
// thinking model cut off inside its reasoning) still ends with a text
// block, and that block has "text": "" as Anthropic's always do; it was
// {"type": "text"} with no text, which SDKs reading block.text choke on.
func TestAnthropicEmptyTextBlockHasText(t *testing.T) {
	ta := startAPI(t)
	resp, b := ta.post(t, "/v1/messages", `{"model":"r1","max_tokens":2,"messages":[{"role":"user","content":"Hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var out struct {
		Content []map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Content) != 2 || string(out.Content[1]["type"]) != `"text"` {
		t.Fatalf("content %s, want a thinking block and a text block", b)
	}
	if text, ok := out.Content[1]["text"]; !ok || string(text) != `""` {
		t.Fatalf("text block %s has no \"text\"", b)
	}
}
