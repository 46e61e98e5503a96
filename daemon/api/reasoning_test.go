package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// qwen3Template writes the reply's reasoning as Qwen3's does: the model
// opens the block itself unless enable_thinking is false, when the prompt
// holds an empty one; its calls are Hermes' (<tool_call>), as Qwen3's.
const qwen3Template = `{# calls: <tool_call> #}{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.reasoning_content %}<think>
{{ m.reasoning_content }}
</think>

{% endif %}{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% endif %}{%- endif %}`

// r1Template opens the block in the prompt, as DeepSeek-R1's does, with no
// way to turn it off.
const r1Template = `{# a reply's </think> ends its reasoning #}{%- for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}{%- if add_generation_prompt %}assistant: <think>
{% endif %}`

// thinkingFakes are two thinking models: "thinker" (Qwen3's way) and "r1"
// (DeepSeek-R1's), whose scripts reason before they answer.
func thinkingFakes(t testing.TB) map[string]*fakeModel {
	reasoning := func(src string) *chat.Reasoning {
		tm, err := chat.FromJinja(src, nil, chat.SpecialTokens{})
		if err != nil {
			t.Fatal(err)
		}
		r := tm.Reasoning()
		if r == nil {
			t.Fatalf("no reasoning found in %q", src)
		}
		return r
	}
	return map[string]*fakeModel{
		"thinker": {name: "thinker", grammar: true, template: qwen3Template, reasoning: reasoning(qwen3Template),
			script: []string{"<th", "ink>\n", "Let me", " think.", "\n</th", "ink>\n\n", "Hello", " there"}},
		"r1": {name: "r1", template: r1Template, reasoning: reasoning(r1Template),
			script: []string{"Hmm,", " so", "\n", "</think>", "\n\nAnswer", "."}},
	}
}

// TestThinkingModels: a thinking model's reasoning comes back apart from
// its reply in every chat API, streamed or not, and each API's switch
// reaches the template.
func TestThinkingModels(t *testing.T) {
	ta := startAPIWith(t, false)
	const user = `"messages":[{"role":"user","content":"Hi"}]`

	// OpenAI: message.reasoning_content, streamed as delta.reasoning_content.
	for _, c := range []struct{ model, reasoning, content string }{
		{"thinker", "Let me think.", "Hello there"},
		{"r1", "Hmm, so", "Answer."},
	} {
		resp := ta.postOK(t, "/v1/chat/completions", `{"model":"`+c.model+`",`+user+`}`)
		msg := field(resp, "choices", 0, "message").(map[string]any)
		if msg["reasoning_content"] != c.reasoning || msg["content"] != c.content {
			t.Fatalf("%s: %v", c.model, msg)
		}
		_, b := ta.post(t, "/v1/chat/completions", `{"model":"`+c.model+`",`+user+`,"stream":true}`)
		var reasoning, content strings.Builder
		for _, e := range sseEvents(t, b) {
			if e == "[DONE]" {
				continue
			}
			ev := mustJSON(t, e)
			if choices := ev["choices"].([]any); len(choices) > 0 {
				d := choices[0].(map[string]any)["delta"].(map[string]any)
				if s, ok := d["reasoning_content"].(string); ok {
					reasoning.WriteString(s)
				}
				if s, ok := d["content"].(string); ok {
					content.WriteString(s)
				}
			}
		}
		if reasoning.String() != c.reasoning || content.String() != c.content {
			t.Fatalf("%s streamed: reasoning %q, content %q", c.model, reasoning.String(), content.String())
		}
	}
	// The tokens it reasoned in are counted (its 8 tokens: 5 or 6 of the
	// reasoning, by where the split opening tag is counted; 2 of the reply).
	for _, c := range []struct {
		path, body string
		at         []any
	}{
		{"/v1/chat/completions", `{"model":"thinker",` + user + `}`, []any{"usage", "completion_tokens_details", "reasoning_tokens"}},
		{"/v1/responses", `{"model":"thinker","input":"Hi"}`, []any{"usage", "output_tokens_details", "reasoning_tokens"}},
	} {
		if n, _ := field(ta.postOK(t, c.path, c.body), c.at...).(float64); n < 5 || n > 6 {
			t.Fatalf("%s: %v reasoning tokens", c.path, n)
		}
	}
	// reasoning_format "none" leaves the text as the model wrote it.
	resp := ta.postOK(t, "/v1/chat/completions", `{"model":"thinker",`+user+`,"reasoning_format":"none"}`)
	if msg := field(resp, "choices", 0, "message").(map[string]any); msg["content"] != "<think>\nLet me think.\n</think>\n\nHello there" || msg["reasoning_content"] != nil {
		t.Fatalf("reasoning_format none: %v", msg)
	}
	// The switches reach the template; the history's reasoning too.
	thinker := ta.fakes["thinker"]
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"thinker",` + user + `,"chat_template_kwargs":{"enable_thinking":false}}`},
		{"/v1/chat/completions", `{"model":"thinker",` + user + `,"reasoning_effort":"none"}`},
		{"/api/chat", `{"model":"thinker",` + user + `,"think":false,"stream":false}`},
		{"/api/generate", `{"model":"thinker","prompt":"Hi","think":false,"stream":false}`},
	} {
		ta.postOK(t, c.path, c.body)
		if v, ok := thinker.lastRequest().TemplateVars["enable_thinking"]; !ok || v != false {
			t.Fatalf("%s %s: template variables %v", c.path, c.body, thinker.lastRequest().TemplateVars)
		}
	}
	ta.postOK(t, "/api/chat", `{"model":"thinker","think":true,"stream":false,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo","thinking":"greet"},{"role":"user","content":"Again"}]}`)
	if last := thinker.lastRequest(); last.TemplateVars["enable_thinking"] != true || last.Messages[1].ReasoningContent != "greet" {
		t.Fatalf("think true with a history: %v %+v", last.TemplateVars, last.Messages)
	}
	ta.postOK(t, "/v1/chat/completions", `{"model":"thinker","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo","reasoning_content":"greet"},{"role":"user","content":"Again"}]}`)
	if last := thinker.lastRequest(); last.Messages[1].ReasoningContent != "greet" || last.TemplateVars != nil {
		t.Fatalf("a history with reasoning_content: %v %+v", last.TemplateVars, last.Messages)
	}

	// With tools (auto), the call's marker counts only after the reasoning.
	ta.postOK(t, "/v1/chat/completions", `{"model":"thinker",`+user+`,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`)
	if g := thinker.lastRequest().GrammarGate; g == nil || g.Open != "<think>" || g.Close != "</think>" || g.StartsOpen || len(thinker.lastRequest().GrammarTriggers) == 0 {
		t.Fatalf("tools on a thinking model: gate %+v, triggers %v", g, thinker.lastRequest().GrammarTriggers)
	}
	ta.postOK(t, "/v1/chat/completions", `{"model":"hermes",`+user+`,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`)
	if g := ta.fakes["hermes"].lastRequest().GrammarGate; g != nil {
		t.Fatalf("tools on a model that does not think: gate %+v", g)
	}

	// Ollama: message.thinking (and thinking on /api/generate).
	chatResp := ta.postOK(t, "/api/chat", `{"model":"thinker",`+user+`,"stream":false}`)
	if msg := chatResp["message"].(map[string]any); msg["thinking"] != "Let me think." || msg["content"] != "Hello there" {
		t.Fatalf("/api/chat: %v", msg)
	}
	gen := ta.postOK(t, "/api/generate", `{"model":"r1","prompt":"Hi","stream":false}`)
	if gen["thinking"] != "Hmm, so" || gen["response"] != "Answer." {
		t.Fatalf("/api/generate: %v", gen)
	}
	for _, path := range []string{"/api/chat", "/api/generate"} {
		body := `{"model":"thinker",` + user + `}`
		if path == "/api/generate" {
			body = `{"model":"thinker","prompt":"Hi"}`
		}
		_, b := ta.post(t, path, body)
		var thinking, content strings.Builder
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var obj struct {
				Message  struct{ Content, Thinking string }
				Response string
				Thinking string
			}
			if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
				t.Fatalf("%s: %q: %v", path, sc.Text(), err)
			}
			thinking.WriteString(obj.Message.Thinking + obj.Thinking)
			content.WriteString(obj.Message.Content + obj.Response)
		}
		if thinking.String() != "Let me think." || content.String() != "Hello there" {
			t.Fatalf("%s streamed: thinking %q, content %q", path, thinking.String(), content.String())
		}
	}

	// Responses: a reasoning item (reasoning_text) before the message.
	rs := ta.postOK(t, "/v1/responses", `{"model":"thinker","input":"Hi"}`)
	if field(rs, "output", 0, "type") != "reasoning" || field(rs, "output", 0, "content", 0, "type") != "reasoning_text" ||
		field(rs, "output", 0, "content", 0, "text") != "Let me think." || fmt.Sprint(field(rs, "output", 0, "summary")) != "[]" ||
		field(rs, "output", 1, "type") != "message" || field(rs, "output", 1, "content", 0, "text") != "Hello there" {
		t.Fatalf("/v1/responses: %v", rs)
	}
	_, b := ta.post(t, "/v1/responses", `{"model":"thinker","input":"Hi","stream":true}`)
	var events []string
	for _, block := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		ev := mustJSON(t, block[strings.Index(block, "data: ")+6:])
		switch typ := ev["type"].(string); typ {
		case "response.reasoning_text.delta", "response.output_text.delta":
			events = append(events, fmt.Sprintf("%s %v %v", typ, ev["output_index"], ev["delta"]))
		case "response.output_item.added", "response.output_item.done":
			events = append(events, fmt.Sprintf("%s %v %v", typ, ev["output_index"], field(ev, "item", "type")))
		}
	}
	want := "response.output_item.added 0 reasoning|response.reasoning_text.delta 0 Let me|response.reasoning_text.delta 0  think.|" +
		"response.output_item.done 0 reasoning|response.output_item.added 1 message|response.output_text.delta 1 Hello|" +
		"response.output_text.delta 1  there|response.output_item.done 1 message"
	if got := strings.Join(events, "|"); got != want {
		t.Fatalf("/v1/responses streamed:\n%s\nwant\n%s", got, want)
	}
	ta.postOK(t, "/v1/responses", `{"model":"thinker","input":"Hi","reasoning":{"effort":"none"}}`)
	if v, ok := thinker.lastRequest().TemplateVars["enable_thinking"]; !ok || v != false {
		t.Fatalf("reasoning effort none: template variables %v", thinker.lastRequest().TemplateVars)
	}
	ta.postOK(t, "/v1/responses", `{"model":"thinker","input":[{"role":"user","content":"Hi"},{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"greet"}]},{"role":"assistant","content":"Yo"},{"role":"user","content":"Again"}]}`)
	if last := thinker.lastRequest(); last.Messages[1].ReasoningContent != "greet" || last.Messages[1].Content != "Yo" {
		t.Fatalf("responses input with a reasoning item: %+v", last.Messages)
	}

	// Anthropic: a thinking block before the text, streamed in order.
	const anth = `"max_tokens":200,"messages":[{"role":"user","content":"Hi"}]`
	msg := ta.postOK(t, "/v1/messages", `{"model":"thinker",`+anth+`,"thinking":{"type":"enabled","budget_tokens":100}}`)
	if thinker.lastRequest().TemplateVars["enable_thinking"] != true || field(msg, "content", 0, "type") != "thinking" ||
		field(msg, "content", 0, "thinking") != "Let me think." || field(msg, "content", 0, "signature") != "" ||
		field(msg, "content", 1, "type") != "text" || field(msg, "content", 1, "text") != "Hello there" {
		t.Fatalf("/v1/messages with thinking: %v (template variables %v)", msg, thinker.lastRequest().TemplateVars)
	}
	// Its budget bounds the reasoning's tokens (the engine writes the
	// closing tag when they are spent): TestReasoningBudget in engine/llm.
	if r := thinker.lastRequest(); r.ReasoningBudget != 100 || r.Reasoning == nil || r.Reasoning.Open != "<think>" ||
		r.Reasoning.Close != "</think>" || r.Reasoning.StartsOpen {
		t.Fatalf("/v1/messages with thinking: budget %d, reasoning %+v", r.ReasoningBudget, r.Reasoning)
	}
	ta.postOK(t, "/v1/messages", `{"model":"thinker",`+anth+`}`) // Anthropic's default: no thinking
	if v, ok := thinker.lastRequest().TemplateVars["enable_thinking"]; !ok || v != false {
		t.Fatalf("/v1/messages without thinking: template variables %v", thinker.lastRequest().TemplateVars)
	}
	if r := thinker.lastRequest(); r.ReasoningBudget != 0 {
		t.Fatalf("/v1/messages without thinking: budget %d", r.ReasoningBudget)
	}
	_, b = ta.post(t, "/v1/messages", `{"model":"r1","stream":true,`+anth+`,"thinking":{"type":"enabled","budget_tokens":100}}`)
	var got []string
	for _, block := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		data := block[strings.Index(block, "data: ")+6:]
		ev := mustJSON(t, data)
		switch ev["type"] {
		case "content_block_start":
			got = append(got, fmt.Sprintf("start %v %v", ev["index"], field(ev, "content_block", "type")))
		case "content_block_delta":
			d := ev["delta"].(map[string]any)
			got = append(got, fmt.Sprintf("delta %v %v%v", ev["index"], d["thinking"], d["text"]))
		case "content_block_stop":
			got = append(got, fmt.Sprintf("stop %v", ev["index"]))
		}
	}
	joined := strings.Join(got, "|")
	if !strings.HasPrefix(joined, "start 0 thinking|delta 0 Hmm,<nil>|delta 0  so<nil>|stop 0|start 1 text|delta 1 <nil>Answer|") || !strings.HasSuffix(joined, "stop 1") {
		t.Fatalf("/v1/messages streamed: %s", joined)
	}
	ta.postOK(t, "/v1/messages", `{"model":"thinker","max_tokens":50,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"greet","signature":"x"},{"type":"redacted_thinking","data":"zz"},{"type":"text","text":"Yo"}]},{"role":"user","content":"Again"}]}`)
	if last := thinker.lastRequest(); last.Messages[1].ReasoningContent != "greet" || last.Messages[1].Content != "Yo" {
		t.Fatalf("a history with a thinking block: %+v", last.Messages)
	}

	for _, c := range []struct{ path, body, want string }{
		{"/v1/messages", `{"model":"fake",` + anth + `,"thinking":{"type":"enabled","budget_tokens":10}}`, "thinking"},
		{"/v1/messages", `{"model":"thinker",` + anth + `,"thinking":{"type":"enabled","budget_tokens":200}}`, "thinking.budget_tokens"},
		{"/v1/messages", `{"model":"thinker",` + anth + `,"thinking":{"type":"enabled"}}`, "thinking.budget_tokens"},
		{"/v1/messages", `{"model":"thinker",` + anth + `,"thinking":{"type":"sometimes"}}`, "thinking.type"},
		{"/v1/messages", `{"model":"thinker",` + anth + `,"thinking":true}`, "thinking"},
		{"/v1/messages", `{"model":"thinker","max_tokens":5,"messages":[{"role":"user","content":[{"type":"thinking","thinking":"x"}]}]}`, "messages[0].content[0]"},
		{"/v1/responses", `{"model":"thinker","input":"Hi","reasoning":{"effort":"high"}}`, "reasoning.effort"},
		{"/v1/responses", `{"model":"thinker","input":"Hi","reasoning":{"summary":"auto"}}`, "reasoning.summary"},
		{"/api/chat", `{"model":"fake",` + user + `,"think":true}`, "think"},
		{"/api/generate", `{"model":"fake","prompt":"x","think":true}`, "think"},
		{"/api/chat", `{"model":"thinker",` + user + `,"think":"high"}`, "think"},
		{"/api/chat", `{"model":"thinker",` + user + `,"think":3}`, "think"},
		{"/v1/chat/completions", `{"model":"thinker",` + user + `,"reasoning_effort":"high"}`, "reasoning_effort"},
		{"/v1/chat/completions", `{"model":"thinker",` + user + `,"reasoning_format":"xml"}`, "reasoning_format"},
		{"/v1/chat/completions", `{"model":"thinker",` + user + `,"chat_template_kwargs":{"messages":[]}}`, "chat_template_kwargs.messages"},
	} {
		resp, b := ta.post(t, c.path, c.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s, want a 400 naming %s", c.path, c.body, resp.StatusCode, b, c.want)
		}
	}
	// A model that does not think takes think: false and a kwarg alike.
	ta.postOK(t, "/api/chat", `{"model":"fake",`+user+`,"think":false,"stream":false}`)
	ta.postOK(t, "/v1/responses", `{"model":"fake","input":"Hi","reasoning":{"effort":"none"}}`)
	ta.postOK(t, "/v1/chat/completions", `{"model":"fake",`+user+`,"chat_template_kwargs":{"enable_thinking":true}}`)
}

// TestThinkingStateRaw: a raw or absent thinking state leaves the reply
// whole.
func TestThinkingStateRaw(t *testing.T) {
	r := thinkingFakes(t)["thinker"].reasoning
	text := "<think>a</think>b"
	for _, st := range []*thinkingState{{r: r, raw: true}, nil} {
		if st.splitter() != nil {
			t.Fatalf("%+v splits", st)
		}
		if reasoning, content := st.splitReasoning(text); reasoning != "" || content != text {
			t.Fatalf("%+v: %q, %q", st, reasoning, content)
		}
	}
	if reasoning, content := (&thinkingState{r: r}).splitReasoning(text); reasoning != "a" || content != "b" {
		t.Fatalf("split: %q, %q", reasoning, content)
	}
}

// TestThinkingConstraint: on a real model with a thinking template, a JSON
// Schema holds the reply after the reasoning, which may come first: the
// text may open the reasoning block (made likely by logit_bias) where the
// schema alone would not let it.
func TestThinkingConstraint(t *testing.T) {
	ta := startAPIWith(t, true)
	path := filepath.Join(t.TempDir(), "thinker.gguf")
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
	o.ChatTemplate = qwen3Template
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
	model := quote(path)
	if caps := fmt.Sprint(ta.postOK(t, "/api/show", `{"model":`+model+`}`)["capabilities"]); !strings.Contains(caps, "thinking") {
		t.Fatalf("capabilities %s", caps)
	}
	tk := ta.postOK(t, "/tokenize", `{"model":`+model+`,"content":"<"}`)
	lt := int(tk["tokens"].([]any)[0].(float64))
	for _, c := range []struct {
		format string
		raw    bool
	}{{`"reasoning_format":"none"`, true}, {`"reasoning_format":"auto"`, false}} {
		body := `{"model":` + model + `,"messages":[{"role":"user","content":"Hi"}],"max_tokens":12,"temperature":0,` + c.format +
			`,"logit_bias":{"` + itoa(lt) + `":100},"response_format":{"type":"json_schema","json_schema":{"name":"b","schema":{"type":"boolean"}}}}`
		msg := field(ta.postOK(t, "/v1/chat/completions", body), "choices", 0, "message").(map[string]any)
		content, _ := msg["content"].(string)
		reasoning, _ := msg["reasoning_content"].(string)
		if c.raw && !strings.HasPrefix(content, "<think>") || !c.raw && (content != "" || !strings.HasPrefix(reasoning, "<")) {
			t.Fatalf("%s: content %q, reasoning %q: the reply did not open its reasoning", c.format, content, reasoning)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestRealThinkingTemplates serves models with real thinking models'
// templates (Qwen3's, DeepSeek-R1's distill's): chats with reasoning in
// their history, thinking on and off, and tools render and answer, and the
// prompt with thinking off holds the template's empty block.
func TestRealThinkingTemplates(t *testing.T) {
	dir := testpath.Shared(t, "templates")
	ta := startAPIWith(t, true)
	for _, c := range []struct {
		file, arch string
		open       bool // the prompt opens the block (thinking on)
	}{
		{"Qwen-Qwen3-0.6B.jinja", "qwen3", false},
		{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "qwen2", true},
	} {
		src, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), c.arch+".gguf")
		o := testmodel.DefaultOptions()
		o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = c.arch, 1, 32, 2, 1, 64, 1024
		o.ChatTemplate = string(src)
		if err := testmodel.Write(context.Background(), o, path); err != nil {
			t.Fatal(err)
		}
		model := quote(path)
		history := `"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!","reasoning_content":"A greeting."},{"role":"user","content":"Why is the sky blue?"}]`
		for _, extra := range []string{``, `,"chat_template_kwargs":{"enable_thinking":false}`, `,"stream":true`, `,"n":2`,
			`,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`} {
			if resp, b := ta.post(t, "/v1/chat/completions", `{"model":`+model+`,`+history+`,"max_tokens":6`+extra+`}`); resp.StatusCode != 200 {
				t.Fatalf("%s%s: %d %s", c.file, extra, resp.StatusCode, b)
			}
		}
		for _, think := range []string{"true", "false"} {
			ta.postOK(t, "/api/chat", `{"model":`+model+`,"stream":false,"think":`+think+`,"options":{"num_predict":6},`+history+`}`)
		}
		on := ta.postOK(t, "/v1/chat/template", `{"model":`+model+`,`+history+`,"chat_template_kwargs":{"enable_thinking":true}}`)["prompt"].(string)
		off := ta.postOK(t, "/v1/chat/template", `{"model":`+model+`,`+history+`,"chat_template_kwargs":{"enable_thinking":false}}`)["prompt"].(string)
		if got := strings.HasSuffix(strings.TrimSpace(on), "<think>"); got != c.open {
			t.Errorf("%s: thinking on, the prompt opens the block: %v (%q)", c.file, got, on)
		}
		if !strings.HasSuffix(strings.TrimSpace(off), "</think>") {
			t.Errorf("%s: thinking off, the prompt ends %q", c.file, off[max(0, len(off)-40):])
		}
	}
}
