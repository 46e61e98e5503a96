package api

import (
	"context"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/ipc"
)

// mistralToolTemplate is the part of Mistral Nemo's chat template that
// renders tool calls and results, with its check of their ids.
const mistralToolTemplate = `{%- for message in messages %}
{%- if message.tool_calls is defined and message.tool_calls is not none %}[TOOL_CALLS][
{%- for tool_call in message.tool_calls %}{{ tool_call.function.name }}
{%- if not tool_call.id is defined or tool_call.id|length != 9 %}{{ raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}{% endif %} {{ tool_call.id }}
{%- if not loop.last %}, {% endif %}{% endfor %}]
{%- elif message.role == "tool" %}
{%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}{{ raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}{% endif %}[TOOL_RESULTS]{{ message.tool_call_id }}:{{ message.content }}[/TOOL_RESULTS]
{%- else %}[{{ message.role }}]{{ message.content }}{% endif %}
{%- endfor %}`

// TestToolTurnsWithoutIDs sends conversations as Ollama clients write
// them, with calls and tool turns that carry no ids: each call gets an id,
// each tool turn the id of the call it answers (by tool_name, else in
// order), so Mistral's templates render them; they raised "Tool call IDs
// should be alphanumeric strings with length 9!" (soak P).
func TestToolTurnsWithoutIDs(t *testing.T) {
	tmpl, err := chat.FromJinja(mistralToolTemplate, nil, chat.SpecialTokens{})
	if err != nil {
		t.Fatal(err)
	}
	call := func(names ...string) []ipc.ToolCall {
		var out []ipc.ToolCall
		for _, n := range names {
			out = append(out, ipc.ToolCall{Function: ipc.ToolCallFunction{Name: n, Arguments: []byte(`{}`)}})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		msgs []ipc.Message
		want string
	}{
		{"one call", []ipc.Message{
			{Role: "user", Content: "time?"},
			{Role: "assistant", ToolCalls: call("get_time")},
			{Role: "tool", ToolName: "get_time", Content: "12:00"},
		}, "[user]time?[TOOL_CALLS][get_time call00001][TOOL_RESULTS]call00001:12:00[/TOOL_RESULTS]"},
		{"results by tool_name, out of order", []ipc.Message{
			{Role: "user", Content: "x"},
			{Role: "assistant", ToolCalls: call("a", "b")},
			{Role: "tool", ToolName: "b", Content: "B"},
			{Role: "tool", ToolName: "a", Content: "A"},
			{Role: "assistant", ToolCalls: call("a")},
			{Role: "tool", Content: "A2"},
		}, "[user]x[TOOL_CALLS][a call00001, b call00002][TOOL_RESULTS]call00002:B[/TOOL_RESULTS][TOOL_RESULTS]call00001:A[/TOOL_RESULTS]" +
			"[TOOL_CALLS][a call00003][TOOL_RESULTS]call00003:A2[/TOOL_RESULTS]"},
		{"ids given are kept", []ipc.Message{
			{Role: "user", Content: "x"},
			{Role: "assistant", ToolCalls: []ipc.ToolCall{{ID: "abcDEF123", Function: ipc.ToolCallFunction{Name: "a"}}, {Function: ipc.ToolCallFunction{Name: "a"}}}},
			{Role: "tool", ToolCallID: "abcDEF123", Content: "1"},
			{Role: "tool", Content: "2"},
		}, "[user]x[TOOL_CALLS][a abcDEF123, a call00002][TOOL_RESULTS]abcDEF123:1[/TOOL_RESULTS][TOOL_RESULTS]call00002:2[/TOOL_RESULTS]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := chatMessages(tc.msgs, "messages")
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Apply(context.Background(), chat.Conversation{Messages: msgs})
			if err != nil {
				t.Fatal(err)
			}
			if got = strings.ReplaceAll(got, "\n", ""); got != tc.want {
				t.Errorf("rendered\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
