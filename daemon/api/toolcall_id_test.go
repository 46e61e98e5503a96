package api

import (
	"regexp"
	"testing"

	"github.com/ruvllm/ruvllm/engine/toolcall"
)

// TestToolCallIDsFitTheFormat checks that the ids given to a reply's calls
// are ones the model's own template renders back: Mistral's templates
// raise on any id but nine letters and digits, so a follow-up turn with
// the daemon's own "call_…" ids was a 400 (soak P).
func TestToolCallIDsFitTheFormat(t *testing.T) {
	mistralID := regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
	for _, tc := range []struct {
		name, template, text, prefix string
		want                         *regexp.Regexp
	}{
		{"mistral, OpenAI", "[TOOL_CALLS]", `[TOOL_CALLS][{"name":"f","arguments":{}},{"name":"f","arguments":{}}]`, "call_", mistralID},
		{"mistral, Anthropic", "[TOOL_CALLS]", `[TOOL_CALLS][{"name":"f","arguments":{}},{"name":"f","arguments":{}}]`, "toolu_", mistralID},
		{"hermes", "<tool_call>", "<tool_call>\n{\"name\":\"f\",\"arguments\":{}}\n</tool_call>\n<tool_call>\n{\"name\":\"f\",\"arguments\":{}}\n</tool_call>", "call_",
			regexp.MustCompile(`^call_[0-9a-f]{24}$`)},
		{"generic", "{{ messages }}", `{"tool_calls":[{"name":"f","arguments":{}},{"name":"f","arguments":{}}]}`, "toolu_",
			regexp.MustCompile(`^toolu_[0-9a-f]{24}$`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &toolState{format: toolcall.Detect(tc.template), active: true}
			_, calls, err := st.splitCalls(tc.text, tc.prefix, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 2 {
				t.Fatalf("%d calls, want 2", len(calls))
			}
			for _, c := range calls {
				if !tc.want.MatchString(c.ID) {
					t.Errorf("call id %q does not match %v", c.ID, tc.want)
				}
			}
			if calls[0].ID == calls[1].ID {
				t.Errorf("two calls share the id %q", calls[0].ID)
			}
		})
	}
}
