package api

import (
	"testing"

	"github.com/ruvllm/ruvllm/engine/toolcall"
)

// TestEitherReplyCutKeepsCalls: a reply that is either calls or a reply in
// the request's format (tool_choice auto beside a response format), cut
// by the length limit or a stop string once it began as calls, keeps its
// complete calls and drops the one cut, as a reply without a format does,
// and as its stream showed it. The complete calls were lost and the calls'
// markup returned as the reply's content (soak T).
func TestEitherReplyCutKeepsCalls(t *testing.T) {
	tools := []toolcall.Tool{{Name: "get_weather"}}
	for _, c := range []struct {
		name, template, text string
		cut                  bool
		content              string
		calls                int
	}{
		{"mistral args, second call cut", "[TOOL_CALLS] [ARGS]", `[TOOL_CALLS]get_weather[ARGS]{"city":"Oslo"}[TOOL_CALLS]get_weather[`, true, "", 1},
		{"mistral args, first call cut", "[TOOL_CALLS] [ARGS]", `[TOOL_CALLS]get_weather[ARGS]{"city":`, true, "", 0},
		{"hermes, second call cut", "<tool_call>", "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"na", true, "", 1},
		{"hermes, first call cut", "<tool_call>", "<tool_call>\n{\"name\":\"get_", true, "", 0},
		{"mistral, second call cut", "[TOOL_CALLS]", `[TOOL_CALLS][{"name":"get_weather","arguments":{"city":"Oslo"}},{"name":"get_w`, true, "", 1},
		{"llama 3, call cut", "<|python_tag|>", `{"name":"get_weather","parameters":{"ci`, true, "", 0},
		{"llama 3, reply cut", "<|python_tag|>", `{"name":"Ada","ag`, true, `{"name":"Ada","ag`, 0},
		// Replies in the format stay replies, cut or not.
		{"hermes, reply cut", "<tool_call>", `{"a": 1, "b"`, true, `{"a": 1, "b"`, 0},
		{"hermes, reply", "<tool_call>", `{"a": 1}`, false, `{"a": 1}`, 0},
		{"hermes, a marker not finished", "<tool_call>", "<tool_", true, "<tool_", 0},
		{"hermes, whole call", "<tool_call>", "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{}}\n</tool_call>", false, "", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &toolState{format: toolcall.Detect(c.template), active: true, either: true, tools: tools}
			content, calls, err := st.splitCalls(c.text, "call_", c.cut)
			if err != nil {
				t.Fatal(err)
			}
			if content != c.content || len(calls) != c.calls {
				t.Errorf("content %q, %d calls; want %q, %d", content, len(calls), c.content, c.calls)
			}
		})
	}
}
