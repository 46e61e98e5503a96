package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"text/template"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/toolcall"
)

// render parses src and renders msgs (and tools) with it.
func render(t *testing.T, src string, msgs []chat.Message, tools ...string) (string, error) {
	t.Helper()
	g, err := parseGoTemplate(src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	conv := chat.Conversation{Messages: msgs, AddGenerationPrompt: true}
	for _, tl := range tools {
		conv.Tools = append(conv.Tools, json.RawMessage(tl))
	}
	return g.Prompt(context.Background(), conv)
}

// legacyChatML is an older Ollama template, of one exchange: no
// .Messages, and text after .Response.
const legacyChatML = `{{ if .System }}<|im_start|>system
{{ .System }}<|im_end|>
{{ end }}{{ if .Prompt }}<|im_start|>user
{{ .Prompt }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ .Response }}<|im_end|>
`

// TestGoTemplateOneTurnTemplates: a template without .Messages is
// rendered once per exchange, as Ollama does, so a chat keeps its history,
// and the last rendering stops where the reply begins. Before, only the
// last user message was rendered, followed by the text after .Response:
// the model read an empty, ended assistant turn.
func TestGoTemplateOneTurnTemplates(t *testing.T) {
	chatHistory := []chat.Message{{Role: "system", Content: "SYS"}, {Role: "user", Content: "q1"}, {Role: "assistant", Content: "a1"}, {Role: "user", Content: "q2"}}
	for _, c := range []struct {
		name, src string
		msgs      []chat.Message
		want      string
	}{
		{"history", legacyChatML, chatHistory,
			"<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n" +
				"<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n"},
		{"one turn", legacyChatML, []chat.Message{{Role: "user", Content: "hi"}}, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{"no .Response: the reply follows", `[INST] {{ .Prompt }} [/INST]`, chatHistory[1:], "[INST] q1 [/INST]a1[INST] q2 [/INST]"},
		{"a later system prompt starts an exchange", legacyChatML, []chat.Message{{Role: "user", Content: "q1"}, {Role: "system", Content: "S2"}, {Role: "user", Content: "q2"}},
			"<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n<|im_start|>system\nS2<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n"},
		{"cut inside an if", `{{ if .Prompt }}U:{{ .Prompt }} A:{{ .Response }}</s>{{ end }}<end>`, chatHistory[1:], "U:q1 A:a1</s><end>U:q2 A:"},
	} {
		got, err := render(t, c.src, c.msgs)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v\nwant %q", c.name, got, err, c.want)
		}
	}
}

// qwenTools is a template in the manner of Ollama's qwen2.5: tools,
// calls and tool results through .Messages.
const qwenTools = `{{- if or .System .Tools }}<|im_start|>system
{{- if .System }}
{{ .System }}
{{- end }}
{{- if .Tools }}
# Tools
<tools>
{{- range .Tools }}
{"type": "function", "function": {{ .Function }}}
{{- end }}
</tools>
{{- end }}<|im_end|>
{{ end }}
{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 -}}
{{- if eq .Role "user" }}<|im_start|>user
{{ .Content }}<|im_end|>
{{ else if eq .Role "assistant" }}<|im_start|>assistant
{{ if .Content }}{{ .Content }}
{{- else if .ToolCalls }}<tool_call>
{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
{{ end }}</tool_call>
{{- end }}{{ if not $last }}<|im_end|>
{{ end }}
{{- else if eq .Role "tool" }}<|im_start|>user
<tool_response>
{{ .Content }}
</tool_response><|im_end|>
{{ end }}
{{- if and (ne .Role "assistant") $last }}<|im_start|>assistant
{{ end }}
{{- end }}`

// TestGoTemplateTools: a template that reads .Messages sees the tools
// (printed as JSON, as Ollama's types print, the parameters' keys in the
// client's order), the assistant's calls with
// their arguments and the tool results, with nested ranges; the calls'
// format is the one the template writes.
func TestGoTemplateTools(t *testing.T) {
	msgs := []chat.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c1", Function: chat.FunctionCall{Name: "weather", Arguments: json.RawMessage(`"{\"city\":\"Paris\"}"`)}}}},
		{Role: "tool", Content: "18C", Name: "weather"},
	}
	tool := `{"type":"function","function":{"name":"weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	got, err := render(t, qwenTools, msgs, tool)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nBe brief.\n# Tools\n<tools>\n" +
		`{"type": "function", "function": {"name":"weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}` +
		"\n</tools><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n" +
		`{"name": "weather", "arguments": {"city":"Paris"}}` + "\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\n18C\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	g, _ := parseGoTemplate(qwenTools)
	if f := g.toolFormat(); f.Name() != "hermes" {
		t.Errorf("tool format %s, want hermes", f.Name())
	}
	plain, _ := parseGoTemplate(legacyChatML)
	if _, generic := plain.toolFormat().(toolcall.Generic); !generic {
		t.Errorf("a template without .Tools: format %s, want generic", plain.toolFormat().Name())
	}
	// Consecutive messages of one role are one message, as in Ollama;
	// every system message is in .System.
	got, err = render(t, `{{ .System }}|{{ range .Messages }}[{{ .Role }}:{{ .Content }}]{{ end }}`,
		[]chat.Message{{Role: "system", Content: "a"}, {Role: "user", Content: "x"}, {Role: "user", Content: "y"}, {Role: "system", Content: "b"}})
	if want := "a\n\nb|[system:a][user:x\n\ny][system:b]"; got != want || err != nil {
		t.Errorf("collated: %q, %v; want %q", got, err, want)
	}
}

// TestGoTemplateWorkBounded: a template's work is bounded before it runs,
// from the sizes of what it ranges over, so nested ranges are allowed
// (a message's tool calls, the tools of the last message) while ones
// whose work grows past the bound are refused: at parse when no chat can
// render them (recursion, fan-out), else at render, quickly, with an
// error. Nested ranges over .Messages rendered for 30 s per request (200
// messages, four levels) and went on after the client had gone, as
// text/template cannot be cancelled and the output bound never fired.
func TestGoTemplateWorkBounded(t *testing.T) {
	var fanOut strings.Builder // 40 templates, each calling the next twice: 2^40 calls
	for i := range 40 {
		fmt.Fprintf(&fanOut, `{{define "t%d"}}{{template "t%d" .}}{{template "t%d" .}}{{end}}`, i, i+1, i+1)
	}
	fanOut.WriteString(`{{define "t40"}}{{end}}{{template "t0" .}}{{.Prompt}}`)
	for _, c := range []struct{ name, src, err string }{
		{"range over a number", `{{range 100000000000}}{{end}}`, "range over a number"},
		// A number reaches a range through a variable, a pipeline, dot
		// or a template's argument: each ran a billion steps (30 s that
		// could not be stopped) where the cost tree counted one.
		{"range over a variable's number", `{{ $n := 1000000000 }}{{ range $n }}{{ end }}{{ .Prompt }}`, "steps"},
		{"range over an assigned number", `{{ $n := 1 }}{{ $n = 1000000000 }}{{ range $n }}{{ end }}`, "steps"},
		{"range over a number in parentheses", `{{ range (1000000000) }}{{ end }}{{ .Prompt }}`, "steps"},
		{"range over a number as dot", `{{ with 1000000000 }}{{ range . }}{{ end }}{{ end }}`, "steps"},
		{"range over or's number", `{{ range (or 0 1000000000) }}{{ end }}`, "steps"},
		{"range over a template's argument", `{{ define "a" }}{{ range . }}{{ end }}{{ end }}{{ template "a" 1000000000 }}`, "steps"},
		{"recursion", `{{define "a"}}{{template "a" .}}{{template "a" .}}{{end}}{{template "a" .}}`, "calls itself"},
		{"fan-out", fanOut.String(), "steps"},
		{"fan-out not called", strings.Replace(fanOut.String(), `{{template "t0" .}}`, "", 1), "steps"},
	} {
		_, err := parseGoTemplate(c.src)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want one saying %q", c.name, err, c.err)
		}
	}
	for _, src := range []string{`{{ $n := 3 }}{{ range $n }}x{{ end }}`, `{{ range $i, $_ := .Messages }}{{ if eq $i 0 }}first{{ end }}{{ end }}`} {
		if _, err := parseGoTemplate(src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	many := make([]chat.Message, 400)
	for i := range many {
		many[i] = chat.Message{Role: []string{"user", "assistant"}[i%2], Content: "x"}
	}
	for _, c := range []struct {
		name, src string
		ok        bool
	}{
		{"one range", `{{range .Messages}}<{{.Role}}>{{.Content}}{{end}}`, true},
		{"two ranges in a row", `{{range .Messages}}{{.Role}}{{end}}{{range .Messages}}{{.Content}}{{end}}`, true},
		{"calls in messages", `{{range .Messages}}{{range .ToolCalls}}{{.Function.Name}}{{end}}{{end}}`, true},
		{"call in a range", `{{define "m"}}[{{.Role}}]{{.Content}}{{end}}{{range .Messages}}{{template "m" .}}{{end}}`, true},
		{"three nested over messages", `{{range .Messages}}{{range $.Messages}}{{range $.Messages}}{{end}}{{end}}{{end}}`, false},
		{"nested through a template", `{{define "all"}}{{range $.Messages}}{{range $.Messages}}{{end}}{{end}}{{end}}{{range .Messages}}{{template "all" $}}{{end}}`, false},
		{"over a length", `{{range .Messages}}{{range $n := len $.Messages}}{{range $.Messages}}{{end}}{{end}}{{end}}`, false},
	} {
		_, err := render(t, c.src, many)
		if c.ok != (err == nil) || !c.ok && !strings.Contains(err.Error(), "steps") {
			t.Errorf("%s: err = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// FuzzGoTemplate: any template source either fails to parse or renders
// a chat with tools without panicking, within its output bound; what it
// refuses to render, it refuses with an error.
func FuzzGoTemplate(f *testing.F) {
	for _, s := range []string{legacyChatML, qwenTools, `{{ range .Messages }}{{ range .ToolCalls }}{{ json .Function.Arguments }}{{ end }}{{ end }}`,
		`{{ if .Response }}{{ .Response }}{{ else }}{{ .Prompt }}{{ end }}x`, `{{ define "a" }}{{ .Role }}{{ end }}{{ range .Messages }}{{ template "a" . }}{{ end }}`,
		`{{ range $k, $v := (index .Tools 0).Function.Parameters.properties }}{{ $k }}={{ $v }}{{ end }}`} {
		f.Add(s)
	}
	msgs := []chat.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{Function: chat.FunctionCall{Name: "f", Arguments: json.RawMessage(`{"a":[1,2]}`)}}}},
		{Role: "tool", Content: "r", Name: "f"}, {Role: "user", Content: "v"}}
	tool := json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"array"}}}}}`)
	f.Fuzz(func(t *testing.T, src string) {
		g, err := parseGoTemplate(src)
		if err != nil {
			return
		}
		out, err := g.Prompt(context.Background(), chat.Conversation{Messages: msgs, Tools: []json.RawMessage{tool}})
		if err == nil && len(out) > maxRenderedBytes {
			t.Fatalf("rendered %d bytes", len(out))
		}
	})
}

// thinkingTemplate renders an empty reasoning block when thinking is
// turned off, as Ollama's templates of thinking models do.
const thinkingTemplate = `{{ range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ if and .IsThinkSet (not .Think) }}<think>

</think>

{{ end }}`

// TestGoTemplateThinking: a request's think (Ollama) or enable_thinking
// reaches a template as .Think and .IsThinkSet, and a template that marks
// reasoning with <think> gets it split from the reply; one that reads no
// .Think refuses think: true. The choice was ignored: a created model's
// template never saw it, and its reasoning came back as content.
func TestGoTemplateThinking(t *testing.T) {
	on, off := true, false
	for _, c := range []struct {
		name, src string
		ts        thinkingSpec
		err       string
		split     bool
		ends      string
	}{
		{"off", thinkingTemplate, thinkingSpec{want: &off, param: "think"}, "", true, "<think>\n\n</think>\n\n"},
		{"on", thinkingTemplate, thinkingSpec{want: &on, param: "think"}, "", true, "assistant\n"},
		{"unset", thinkingTemplate, thinkingSpec{}, "", true, "assistant\n"},
		{"enable_thinking", thinkingTemplate, thinkingSpec{vars: map[string]any{"enable_thinking": false}}, "", true, "</think>\n\n"},
		{"another kwarg", thinkingTemplate, thinkingSpec{vars: map[string]any{"tools_in_user": true}}, "chat_template_kwargs.tools_in_user", false, ""},
		{"no .Think, on", legacyChatML, thinkingSpec{want: &on, param: "think"}, "does not think", false, ""},
		{"no .Think, off", legacyChatML, thinkingSpec{want: &off, param: "think"}, "", false, "assistant\n"},
	} {
		g, err := parseGoTemplate(c.src)
		if err != nil {
			t.Fatal(err)
		}
		st, err := g.applyThinking(&c.ts)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want one naming %s", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (st != nil) != c.split {
			t.Errorf("%s: reasoning split %v, want %v", c.name, st != nil, c.split)
		}
		out, err := g.Prompt(context.Background(), chat.Conversation{Messages: []chat.Message{{Role: "user", Content: "hi"}}})
		if err != nil || !strings.HasSuffix(out, c.ends) {
			t.Errorf("%s: prompt %q (%v), want it to end in %q", c.name, out, err, c.ends)
		}
	}
}

// TestCreatedThinkingTemplateSplitsReasoning: a created model whose
// TEMPLATE reads .Think returns its reasoning apart from its reply (as
// Ollama's message.thinking), whether the template opens the block for
// it or the model writes the opening tag itself; think: false reaches
// the template.
func TestCreatedThinkingTemplateSplitsReasoning(t *testing.T) {
	ta := startAPI(t)
	opens := `{{ range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ if .IsThinkSet }}{{ if .Think }}<think>
{{ else }}<think></think>{{ end }}{{ else }}<think>
{{ end }}`
	ta.postOK(t, "/api/create", `{"model":"t-writes","from":"thinker","template":`+quote(thinkingTemplate)+`,"stream":false}`)
	ta.postOK(t, "/api/create", `{"model":"t-opens","from":"r1","template":`+quote(opens)+`,"stream":false}`)
	for _, c := range []struct{ model, think, thinking, content string }{
		{"t-writes", ``, "Let me think.", "Hello there"},
		{"t-opens", ``, "Hmm, so", "Answer."},
		{"t-opens", `,"think":true`, "Hmm, so", "Answer."},
	} {
		out := ta.postOK(t, "/api/chat", `{"model":"`+c.model+`","stream":false`+c.think+`,"messages":[{"role":"user","content":"Hi"}]}`)
		msg := out["message"].(map[string]any)
		if th, _ := msg["thinking"].(string); strings.TrimSpace(th) != c.thinking || strings.TrimSpace(msg["content"].(string)) != c.content {
			t.Errorf("%s%s: thinking %q, content %q; want %q, %q", c.model, c.think, msg["thinking"], msg["content"], c.thinking, c.content)
		}
	}
	// think: false reaches the template: the block it writes is closed.
	ta.postOK(t, "/api/chat", `{"model":"t-opens","stream":false,"think":false,"messages":[{"role":"user","content":"Hi"}]}`)
	if p := ta.fakes["r1"].lastRequest().Template; p == nil {
		t.Fatal("the request had no template")
	} else if got, _ := p.Prompt(context.Background(), chat.Conversation{Messages: []chat.Message{{Role: "user", Content: "Hi"}}}); !strings.HasSuffix(got, "<think></think>") {
		t.Errorf("think false rendered %q", got)
	}
	ta.postOK(t, "/api/create", `{"model":"plain","from":"fake","template":`+quote(legacyChatML)+`,"stream":false}`)
	if resp, b := ta.post(t, "/api/chat", `{"model":"plain","stream":false,"think":true,"messages":[{"role":"user","content":"Hi"}]}`); resp.StatusCode != 400 || !strings.Contains(string(b), "think") {
		t.Errorf("think: true on a template without .Think: %d %s", resp.StatusCode, b)
	}
}

// TestGoTemplateUnsetNames: names a template reads that this request does
// not set (.Suffix of a code model's template, .Tools without tools) are
// empty, as in Ollama, so the template renders its chat branch; such a
// template was refused at create ("can't evaluate field Suffix").
func TestGoTemplateUnsetNames(t *testing.T) {
	src := `{{- if .Suffix }}<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix }}<|fim_middle|>
{{- else if .Messages }}{{ if .Tools }}T{{ end }}{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}<assistant>
{{- else }}{{ .Prompt }}{{ end }}`
	got, err := render(t, src, []chat.Message{{Role: "user", Content: "hi"}})
	if err != nil || got != "<user>hi<assistant>" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// TestGoTemplateFunctionsMetered: the functions that cost as much as the
// text they read give text/template's results, and a rendering whose
// calls would compare or write more than maxFuncBytes fails quickly,
// where comparing a long message in every turn of a long chat ran for
// minutes that could not be stopped.
func TestGoTemplateFunctionsMetered(t *testing.T) {
	msgs := []chat.Message{{Role: "user", Content: "a<b"}, {Role: "assistant", Content: "ok"}}
	for _, c := range []struct{ src, want string }{
		{`{{ range $i, $_ := .Messages }}{{ eq .Role "user" "x" }}{{ ne .Role "user" }}{{ eq (len (slice $.Messages $i)) 1 }};{{ end }}`, "truefalsefalse;falsetruetrue;"},
		{`{{ lt 1 2 }}{{ le 2 2 }}{{ gt "b" "a" }}{{ ge 1 2 }}{{ eq 1.5 1.5 }}{{ lt "a" "b" }}`, "truetruetruefalsetruetrueok"}, // one-turn: the reply follows
		{`{{ print "x" 1 }}|{{ printf "%03d" 7 }}|{{ println "y" }}|{{ html (index .Messages 0).Content }}|{{ js "'" }}|{{ urlquery "a b" }}|{{ json (index .Messages 0).Content }}`, "x1|007|y\n|a&lt;b|\\'|a+b|\"a\\u003cb\""},
	} {
		got, err := render(t, c.src, msgs)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.src, got, err, c.want)
		}
	}
	if _, err := render(t, `{{ eq 1 "a" }}`, msgs); err == nil || !strings.Contains(err.Error(), "incompatible types") {
		t.Errorf("eq of an int and a text: err = %v", err)
	}
	long := strings.Repeat("a", 1<<20)
	many := []chat.Message{{Role: "system", Content: long}}
	for i := range 1200 {
		many = append(many, chat.Message{Role: []string{"user", "assistant"}[i%2], Content: long})
	}
	_, err := render(t, `{{ range .Messages }}{{ if eq $.System .Content }}={{ end }}{{ end }}`, many)
	if !errors.Is(err, errFuncBudget) {
		t.Fatalf("1,200 comparisons of 1 MiB texts: err = %v, want the functions' bound", err)
	}
}

// TestGoTemplateToolsPrintAsJSONArray: {{ $.Tools }}, as Mistral's
// templates write it inside [AVAILABLE_TOOLS], prints the tools as one JSON
// array, as Ollama does, not as Go prints a slice (elements joined by a
// space), which no model can read as JSON once there are two tools.
func TestGoTemplateToolsPrintAsJSONArray(t *testing.T) {
	weather := `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}`
	clock := `{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}`
	src := `{{ range .Messages }}{{ if .Content }}[AVAILABLE_TOOLS] {{ $.Tools }}[/AVAILABLE_TOOLS][INST] {{ .Content }}[/INST]{{ end }}{{ end }}`
	for _, c := range []struct {
		name  string
		tools []string
		want  string
	}{
		{"one tool", []string{weather}, `[AVAILABLE_TOOLS] [` + weather + `][/AVAILABLE_TOOLS][INST] hi[/INST]`},
		{"two tools", []string{weather, clock}, `[AVAILABLE_TOOLS] [` + weather + `,` + clock + `][/AVAILABLE_TOOLS][INST] hi[/INST]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := render(t, src, []chat.Message{{Role: "user", Content: "hi"}}, c.tools...)
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestGoTemplateToolSchemaFields: a tool's parameters read by the names of
// Ollama's struct, as Command R's template reads them
// (.Function.Parameters.Properties, each property's .Type, .Description
// and .Enum; .Required, .Type), render what Ollama renders; they rendered
// nothing ("<no value>"), the JSON's keys being lower-case. The keys read
// as before, and the parameters still print as JSON.
func TestGoTemplateToolSchemaFields(t *testing.T) {
	tool := `{"type":"function","function":{"name":"get_weather","description":"Get weather","parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string","description":"The city"},"unit":{"type":["string","null"],"enum":["c","f"]}}}}}`
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	for _, c := range []struct{ name, src, want string }{
		{"command-r signature", `{{ range .Tools }}def {{ .Function.Name }}({{ range $name, $prop := .Function.Parameters.Properties }}{{ $name }}: {{ $prop.Type }}, {{ end }}){{ end }}`,
			`def get_weather(city: string, unit: [string null], )`},
		{"args", `{{ range .Tools }}{{ range $name, $prop := .Function.Parameters.Properties }}{{ $name }} ({{ $prop.Type }}): {{ $prop.Description }}{{ if $prop.Enum }} {{ $prop.Enum }}{{ end }};{{ end }}{{ end }}`,
			`city (string): The city;unit ([string null]):  [c f];`},
		{"required and type", `{{ range .Tools }}{{ .Function.Parameters.Required }} {{ .Function.Parameters.Type }}{{ end }}`, `[city] object`},
		{"keys", `{{ range .Tools }}{{ range $k, $v := .Function.Parameters.properties }}{{ $k }}={{ $v.type }};{{ end }}{{ end }}`, `city=string;unit=[string null];`},
		{"json", `{{ range .Tools }}{{ .Function.Parameters.Properties.city }}{{ end }}`, `{"description":"The city","type":"string"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := render(t, c.src+`{{ range .Messages }}{{ end }}`, msgs, tool)
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestGoTemplateErrorsAreTheRequests: a created model's or a request's
// TEMPLATE that cannot render a conversation (its own error on this
// chat, or a bound this chat passes) is a 400 with the template's
// message, as a chat template's error is; it was a 500 server_error on
// every API.
func TestGoTemplateErrorsAreTheRequests(t *testing.T) {
	many := make([]chat.Message, 401)
	for i := range many {
		many[i] = chat.Message{Role: []string{"user", "assistant"}[i%2], Content: "x"}
	}
	hi := []chat.Message{{Role: "user", Content: "hi"}}
	for _, c := range []struct {
		name, src string
		msgs      []chat.Message
		want      string
	}{
		{"index past the chat", `{{ (index .Messages 1).Content }}`, hi, "index out of range"},
		{"slice past a text", `{{ slice .Prompt 5 1 }}`, hi, "index out of range"},
		{"field of a text", `{{ .Prompt.Foo }}`, hi, "can't evaluate field Foo"},
		{"template not defined", `{{ template "nope" }}`, hi, "not defined"},
		{"call of a text", `{{ call .Prompt }}`, hi, "non-function"},
		{"too many steps for this chat", `{{range .Messages}}{{range $.Messages}}{{range $.Messages}}{{end}}{{end}}{{end}}`, many, "steps"},
	} {
		_, err := render(t, c.src, c.msgs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one saying %q", c.name, err, c.want)
			continue
		}
		if got := statusOf(fmt.Errorf("generate: %w", err)); got != 400 {
			t.Errorf("%s: status %d, want 400", c.name, got)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g, err := parseGoTemplate(legacyChatML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Prompt(ctx, chat.Conversation{Messages: hi}); !errors.Is(err, context.Canceled) || statusOf(err) == 400 {
		t.Errorf("a cancelled rendering: %v (status %d)", err, statusOf(err))
	}
}

// TestGoTemplateFunctionsChargedFirst: a text function is charged what
// it may write before it writes, so a call past the budget fails without
// building its text. They were charged after: a 20 KB /api/generate
// template of 2,000 999,999-wide printf verbs took the daemon to 6 GB
// before failing, and a 256 KiB one could take some 25 GB (soak T).
func TestGoTemplateFunctionsChargedFirst(t *testing.T) {
	big := strings.Repeat("<", 1<<20)
	for _, c := range []struct {
		name string
		call func(template.FuncMap) (string, error)
	}{
		{"printf widths", func(f template.FuncMap) (string, error) {
			return f["printf"].(func(string, ...any) (string, error))("%999999d%999999d%999999d%999999d", 1, 2, 3, 4)
		}},
		{"printf star widths", func(f template.FuncMap) (string, error) {
			return f["printf"].(func(string, ...any) (string, error))("%*d%*d%*d%*d", 999999, 1, 999999, 2, 999999, 3, 999999, 4)
		}},
		{"printf one argument again and again", func(f template.FuncMap) (string, error) {
			return f["printf"].(func(string, ...any) (string, error))("%[1]s%[1]s%[1]s%[1]s", big)
		}},
		{"print", func(f template.FuncMap) (string, error) {
			return f["print"].(func(...any) (string, error))(big, big, big, big)
		}},
		{"println of a list", func(f template.FuncMap) (string, error) {
			return f["println"].(func(...any) (string, error))([]templateMessage{{Content: big}, {Content: big}, {Content: big}, {Content: big}})
		}},
		{"html", func(f template.FuncMap) (string, error) { return f["html"].(func(...any) (string, error))(big) }},
		{"js", func(f template.FuncMap) (string, error) { return f["js"].(func(...any) (string, error))(big) }},
		{"json", func(f template.FuncMap) (string, error) { return f["json"].(func(any) (string, error))(big) }},
	} {
		m := &funcMeter{used: maxFuncBytes - 1000}
		f := m.funcs()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := c.call(f)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, errFuncBudget) {
			t.Errorf("%s: err = %v, want the functions' bound", c.name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s: allocated %d bytes before failing", c.name, grew)
		}
	}
	// Within the budget, the same calls write what text/template's do.
	m := &funcMeter{}
	if s, err := m.funcs()["printf"].(func(string, ...any) (string, error))("%[1]s-%[1]s|%5d|%.2f|%d", "ab", 7, 1.0, "x"); err != nil || s != "ab-ab|    7|1.00|%!d(string=x)" {
		t.Errorf("printf: %q, %v", s, err)
	}
}

// TestGoTemplateToolFormat: a template that renders .Tools in a call
// format of its own has that format, but a one-turn template (no
// .Messages), which renders without .Tools and without the chat's calls
// and results, has the generic one: its tools are described in the
// system prompt and past calls reach the prompt as text. With the
// format its text named, the tools were never described and a chat's
// calls and results were dropped (soak T).
func TestGoTemplateToolFormat(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"chat template, mistral", `{{ if .Tools }}[AVAILABLE_TOOLS]{{ json .Tools }}[/AVAILABLE_TOOLS]{{ end }}{{ range .Messages }}{{ .Content }}{{ range .ToolCalls }}[TOOL_CALLS]{{ json . }}{{ end }}{{ end }}`, "mistral"},
		{"chat template, hermes", qwenTools, "hermes"},
		{"chat template without .Tools", `{{ range .Messages }}<tool_call>{{ .Content }}{{ end }}`, "generic"},
		{"one-turn template reading .Tools", `[INST] {{ if .Tools }}[AVAILABLE_TOOLS] {{ json .Tools }}[/AVAILABLE_TOOLS]{{ end }}{{ .Prompt }} [/INST] [TOOL_CALLS] {{ .Response }}`, "generic"},
	} {
		g, err := parseGoTemplate(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := g.toolFormat().Name(); got != c.want {
			t.Errorf("%s: format %s, want %s", c.name, got, c.want)
		}
	}
	// The one-turn template's chat keeps its calls and results, as text.
	g, _ := parseGoTemplate(`[INST] {{ if .Tools }}[AVAILABLE_TOOLS] {{ json .Tools }}[/AVAILABLE_TOOLS]{{ end }}{{ .Prompt }} [/INST] [TOOL_CALLS] {{ .Response }}`)
	msgs := []chat.Message{{Role: "user", Content: "w?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "abcdefghi", Function: chat.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}}}},
		{Role: "tool", ToolCallID: "abcdefghi", Content: "sunny"}}
	tools := []toolcall.Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}
	gen, ok := g.toolFormat().(toolcall.Generic)
	if !ok {
		t.Fatalf("one-turn template: format %s, want generic", g.toolFormat().Name())
	}
	out, err := g.Prompt(context.Background(), chat.Conversation{Messages: gen.PrepareMessages(msgs, tools, false)})
	if err != nil || !strings.Contains(out, "get_weather") || !strings.Contains(out, "Oslo") || !strings.Contains(out, "sunny") {
		t.Errorf("one-turn chat with calls: %q, %v", out, err)
	}
}

// TestCreatedTemplateFillInTheMiddle: /api/generate's suffix on a created
// model whose TEMPLATE has a .Suffix branch renders that branch, as
// Ollama does (code models' templates); it used only the GGUF's FIM
// tokens, a 400 on a model without them.
func TestCreatedTemplateFillInTheMiddle(t *testing.T) {
	ta := startAPIWith(t, true)
	base := quote(realTinyModel(t))
	const tmpl = `{{ if .Suffix }}<PRE> {{ .Prompt }} <SUF>{{ .Suffix }} <MID>{{ else }}{{ .Prompt }}{{ end }}`
	ta.postOK(t, "/api/create", `{"model":"coder","from":`+base+`,"template":`+quote(tmpl)+`,"stream":false}`)
	fim := ta.postOK(t, "/api/generate", `{"model":"coder","prompt":"def f(x):","suffix":"return y","stream":false,"options":{"num_predict":1}}`)
	raw := ta.postOK(t, "/api/generate", `{"model":`+base+`,"prompt":"<PRE> def f(x): <SUF>return y <MID>","raw":true,"stream":false,"options":{"num_predict":1}}`)
	if fim["prompt_eval_count"] != raw["prompt_eval_count"] {
		t.Errorf("the .Suffix branch read %v prompt tokens, its text %v", fim["prompt_eval_count"], raw["prompt_eval_count"])
	}
	if caps := fmt.Sprint(ta.postOK(t, "/api/show", `{"model":"coder"}`)["capabilities"]); !strings.Contains(caps, "insert") {
		t.Errorf("/api/show capabilities %s, want insert", caps)
	}
	// A TEMPLATE without the branch keeps the FIM tokens' path (none here).
	ta.postOK(t, "/api/create", `{"model":"plain","from":`+base+`,"template":"{{ .Prompt }}","stream":false}`)
	if resp, b := ta.post(t, "/api/generate", `{"model":"plain","prompt":"a","suffix":"b","stream":false}`); resp.StatusCode != 400 || !strings.Contains(string(b), "fill-in-the-middle") {
		t.Errorf("suffix without a .Suffix branch or FIM tokens: %d %s", resp.StatusCode, b)
	}
}

// TestGoTemplateToolCallArgumentsMustBeObjects: an assistant call whose
// arguments are not a JSON object (OpenAI's string holding broken JSON,
// an array) makes the rendering fail with the message and call named, a
// template error the APIs answer with a 400, as Ollama refuses such
// arguments; they were rendered as no arguments. Empty or null arguments
// are {}.
func TestGoTemplateToolCallArgumentsMustBeObjects(t *testing.T) {
	call := func(args string) []chat.Message {
		return []chat.Message{{Role: "user", Content: "Weather?"},
			{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c1", Function: chat.FunctionCall{Name: "weather", Arguments: json.RawMessage(args)}}}},
			{Role: "tool", Content: "18C", Name: "weather"}}
	}
	for _, c := range []struct{ args, want string }{
		{`"{bad"`, "messages[1]: tool_calls[0] (weather): the arguments are not a JSON object"},
		{`"[1,2]"`, "not a JSON object"},
		{`[1,2]`, "not a JSON object"},
		{`""`, `{"name": "weather", "arguments": {}}`},
		{`null`, `{"name": "weather", "arguments": {}}`},
		{`{"city":"Oslo"}`, `{"name": "weather", "arguments": {"city":"Oslo"}}`},
	} {
		got, err := render(t, qwenTools, call(c.args))
		var ge *goTemplateError
		switch {
		case strings.HasPrefix(c.want, "{"):
			if err != nil || !strings.Contains(got, c.want) {
				t.Errorf("arguments %s: %v\n%s", c.args, err, got)
			}
		case err == nil || !errors.As(err, &ge) || !strings.Contains(err.Error(), c.want) || !isTemplateError(err):
			t.Errorf("arguments %s: %v, want a template error saying %q", c.args, err, c.want)
		}
	}
}
