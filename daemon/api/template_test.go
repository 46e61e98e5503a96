package api

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

// toolTemplate is a small chat template that reads everything the
// endpoint passes: tools, tool calls with their arguments, tool results,
// extra variables, and raises on a conversation it refuses.
const toolTemplate = `{{ bos_token }}{% if tools is defined %}[TOOLS]{{ tools | tojson }}[/TOOLS]{% endif %}
{%- for m in messages %}
{%- if m.role == 'system' and not loop.first %}{{ raise_exception('System message must come first') }}{% endif %}
<{{ m.role }}>{{ m.content }}
{%- for c in m.tool_calls | default([]) %}[CALL {{ c.id }} {{ c.function.name }} {{ c.function.arguments | tojson }}]{% endfor %}
{%- if m.tool_call_id is defined %}[RESULT {{ m.tool_call_id }}]{% endif %}
{%- endfor %}
{%- if enable_thinking is defined and not enable_thinking %}<nothink>{% endif %}
{%- if add_generation_prompt %}<assistant>{% endif %}`

// TestChatTemplateEndpoint renders conversations through POST
// /v1/chat/template with a model that carries toolTemplate (the expected
// prompts were checked with jinja2), and checks that bad input is a 400
// naming the field.
func TestChatTemplateEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a synthetic model with the real engine")
	}
	o := testmodel.DefaultOptions()
	o.Arch, o.Type, o.ContextLength, o.ChatTemplate = "qwen2", quant.Q8_0, 256, toolTemplate
	model := filepath.Join(t.TempDir(), "tools.gguf")
	if err := testmodel.Write(context.Background(), o, model); err != nil {
		t.Fatal(err)
	}
	ta := startAPIWith(t, true)
	tools := `[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]`
	for _, tc := range []struct {
		name, body string
		status     int
		want       string // the prompt, or a substring of the error
	}{
		{"plain", `{"model": "` + model + `", "messages": [{"role": "user", "content": "Hi"}]}`, 200,
			"<|endoftext|><user>Hi<assistant>"},
		{"no generation prompt", `{"model": "` + model + `", "add_generation_prompt": false, "messages": [{"role": "user", "content": "Hi"}]}`, 200,
			"<|endoftext|><user>Hi"},
		{"tools and calls", `{"model": "` + model + `", "tools": ` + tools + `, "chat_template_kwargs": {"enable_thinking": false}, "messages": [
			{"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Oslo?"}]},
			{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
			{"role": "tool", "tool_call_id": "c1", "content": "-3 C"}]}`, 200,
			`<|endoftext|>[TOOLS][{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}][/TOOLS]<user>Weather in ` + "\n" + `Oslo?<assistant>[CALL c1 get_weather {"city": "Oslo"}]<tool>-3 C[RESULT c1]<nothink><assistant>`},
		{"template raises", `{"model": "` + model + `", "messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]}`, 400,
			"System message must come first"},
		{"no messages", `{"model": "` + model + `", "messages": []}`, 400, "messages must not be empty"},
		{"no role", `{"model": "` + model + `", "messages": [{"content": "x"}]}`, 400, "messages[0].role is required"},
		// Roles as chat requests take them: a preview of a request chat
		// would refuse is refused too, and developer renders as system.
		{"unknown role", `{"model": "` + model + `", "messages": [{"role": "wizard", "content": "x"}]}`, 400, "messages[0].role"},
		{"developer", `{"model": "` + model + `", "messages": [{"role": "developer", "content": "Be brief"}, {"role": "user", "content": "Hi"}]}`, 200,
			"<|endoftext|><system>Be brief<user>Hi<assistant>"},
		{"bad content", `{"model": "` + model + `", "messages": [{"role": "user", "content": 5}]}`, 400, "messages[0].content must be a string"},
		{"image part", `{"model": "` + model + `", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}`, 400, `messages[0].content part 0: only text parts`},
		{"unnamed call", `{"model": "` + model + `", "messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]}`, 400, "messages[0].tool_calls[0].function.name is required"},
		{"bad arguments", `{"model": "` + model + `", "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": }}}]}]}`, 400, "invalid JSON"},
		{"unnamed tool", `{"model": "` + model + `", "tools": [{"type": "function"}], "messages": [{"role": "user", "content": "x"}]}`, 400, "tools[0].function.name is required"},
		{"tool not object", `{"model": "` + model + `", "tools": [3], "messages": [{"role": "user", "content": "x"}]}`, 400, "tools[0] must be an object"},
		{"reserved kwarg", `{"model": "` + model + `", "chat_template_kwargs": {"bos_token": "x"}, "messages": [{"role": "user", "content": "x"}]}`, 400, "chat_template_kwargs.bos_token"},
		{"wrong type", `{"model": "` + model + `", "add_generation_prompt": "yes", "messages": [{"role": "user", "content": "x"}]}`, 400, `"add_generation_prompt" must be a boolean`},
		{"unknown model", `{"model": "nope", "messages": [{"role": "user", "content": "x"}]}`, 404, "nope"},
		{"fake model", `{"model": "fake", "messages": [{"role": "user", "content": "x"}]}`, 400, "cannot render chat templates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ta.post(t, "/v1/chat/template", tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status != 200 {
				var e ipc.OpenAIError
				if err := json.Unmarshal(b, &e); err != nil || !strings.Contains(e.Error.Message, tc.want) {
					t.Fatalf("error %s, want one containing %q", b, tc.want)
				}
				return
			}
			var r ipc.ChatTemplateResponse
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if r.Prompt != tc.want || r.Model != "tools" || !strings.Contains(r.ChatFormat, "from the file") {
				t.Fatalf("got %+v\nwant prompt %q", r, tc.want)
			}
		})
	}
	c, err := ipc.Dial(context.Background(), ipc.WithSocket(ta.sock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.ChatTemplate(context.Background(), ipc.ChatTemplateRequest{Model: model, Messages: []ipc.ChatTemplateMessage{
		{Role: "user", Content: json.RawMessage(`"Hi"`)}}})
	if err != nil || r.Prompt != "<|endoftext|><user>Hi<assistant>" {
		t.Fatalf("ipc client: %+v, %v", r, err)
	}
}
