package api

import (
	"testing"

	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/toolcall"
)

// TestToolCallsCutByStopString splits replies that a client's stop string
// ended inside a tool call (stop: ["}"] matches in any call's arguments):
// like a reply the length limit cut, the complete calls are kept and the
// half one dropped. It was a 500, "the model's tool call does not parse",
// in every native format (soak P). A reply the model itself ended inside a
// call is still an error.
func TestToolCallsCutByStopString(t *testing.T) {
	stopped := llm.Result{FinishReason: llm.FinishStop, StopSequence: "}"}
	long := llm.Result{FinishReason: llm.FinishLength}
	ended := llm.Result{FinishReason: llm.FinishStop}
	for _, tc := range []struct {
		name, template, text string
		res                  llm.Result
		calls                int
		fails                bool
	}{
		{"hermes, first call", "<tool_call>", "<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":1", stopped, 0, false},
		{"hermes, second call", "<tool_call>", "<tool_call>\n{\"name\":\"f\",\"arguments\":{}}\n</tool_call>\n<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":1", stopped, 1, false},
		{"llama3", "<|python_tag|>", `<|python_tag|>{"name":"f","parameters":{"a":1`, stopped, 0, false},
		{"mistral", "[TOOL_CALLS]", `[TOOL_CALLS][{"name":"f","arguments":{"a":1`, stopped, 0, false},
		{"length", "<tool_call>", "<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":1", long, 0, false},
		{"ended by the model", "<tool_call>", "<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":1", ended, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oc := &outputControls{state: &toolState{format: toolcall.Detect(tc.template), active: true}}
			_, calls, err := oc.split(tc.text, "call_", tc.res)
			if (err != nil) != tc.fails || len(calls) != tc.calls {
				t.Errorf("%d calls, error %v; want %d calls, error %v", len(calls), err, tc.calls, tc.fails)
			}
		})
	}
}
