package chat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ruvllm/ruvllm/internal/testpath"
)

// TestReasoningDetected reads how real thinking models' templates mark
// their reasoning: which variable turns it off and whether the generation
// prompt leaves the block open, unset, on and off; templates of models
// that do not think have none.
func TestReasoningDetected(t *testing.T) {
	dir := testpath.Shared(t, "templates")
	type want struct {
		toggle string
		opens  [3]bool // unset, on, off
	}
	for file, w := range map[string]*want{
		"Qwen-Qwen3-0.6B.jinja":                          {"enable_thinking", [3]bool{false, false, false}},
		"Qwen-QwQ-32B.jinja":                             {"enable_thinking", [3]bool{false, true, false}},
		"Qwen3.5-4B.jinja":                               {"enable_thinking", [3]bool{true, true, false}},
		"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": {"", [3]bool{true, true, true}},
		"deepseek-ai-DeepSeek-V3.1.jinja":                {"enable_thinking", [3]bool{false, true, false}},
		"Kimi-K2-Thinking.jinja":                         {"", [3]bool{false, false, false}},
		"GLM-4.6.jinja":                                  {"enable_thinking", [3]bool{false, false, false}},
		"meta-llama-Llama-3.1-8B-Instruct.jinja":         nil,
		"Qwen-Qwen2.5-7B-Instruct.jinja":                 nil,
		"openai-gpt-oss-120b.jinja":                      nil, // channels, not a think block
	} {
		src, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		tm, err := FromJinja(string(src), nil, SpecialTokens{BOS: "<s>", EOS: "</s>"})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		r := tm.Reasoning()
		switch {
		case w == nil && r != nil:
			t.Errorf("%s: reasoning %+v, want none", file, *r)
		case w != nil && r == nil:
			t.Errorf("%s: no reasoning found", file)
		case w != nil:
			if r.Open != "<think>" || r.Close != "</think>" || r.Toggle != w.toggle {
				t.Errorf("%s: %+v, want toggle %q", file, *r, w.toggle)
			}
			got := [3]bool{r.StartsOpen(nil), r.StartsOpen(map[string]any{r.Toggle: true}), r.StartsOpen(map[string]any{r.Toggle: false})}
			if r.Toggle == "" {
				got = [3]bool{r.StartsOpen(nil), r.StartsOpen(map[string]any{"enable_thinking": true}), r.StartsOpen(map[string]any{"enable_thinking": false})}
			}
			if got != w.opens {
				t.Errorf("%s: starts open (unset, on, off) %v, want %v", file, got, w.opens)
			}
			if r.StartsOpen(map[string]any{r.Toggle: "yes"}) != w.opens[0] {
				t.Errorf("%s: a toggle that is not a boolean counts as set", file)
			}
		}
	}
	for _, name := range Names() {
		b, _ := ByName(name)
		if b.Reasoning() != nil {
			t.Errorf("built-in %s reasons", name)
		}
	}
}
