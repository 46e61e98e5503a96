package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/jinja"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// referenceFiles maps the built-in goldens to the Jinja files they were
// made from and the special tokens of their models.
var referenceFiles = map[string]struct {
	file     string
	bos, eos string
}{
	"llama2":            {"llama2-chat.jinja", "<s>", "</s>"},
	"llama2-sys-bos":    {"ruvllm-test-llama.jinja", "<s>", "</s>"},
	"llama3":            {"llama3-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"},
	"mistral-v1":        {"mistral-v1.jinja", "<s>", "</s>"},
	"mistral-v3":        {"mistral-v3.jinja", "<s>", "</s>"},
	"mistral-v3-tekken": {"mistral-v3-tekken.jinja", "<s>", "</s>"},
	"chatml":            {"ruvllm-test-qwen2.jinja", "", "<|im_end|>"},
	"phi3":              {"phi3.jinja", "<s>", "<|endoftext|>"},
	"gemma":             {"gemma.jinja", "<bos>", "<eos>"},
}

// TestFileTemplateMatchesBuiltins renders the Jinja files the built-in
// families reproduce through FromJinja: the prompt (leading BOS removed,
// as the tokenizer adds it) must equal the built-in goldens, and the
// stop strings must be the family's.
func TestFileTemplateMatchesBuiltins(t *testing.T) {
	for _, g := range goldens {
		ref := referenceFiles[g.name]
		src, err := os.ReadFile(filepath.Join("testdata", ref.file))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := FromJinja(string(src), nil, SpecialTokens{BOS: ref.bos, EOS: ref.eos, AddBOS: true})
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		if !tmpl.FromFile() || len(tmpl.SHA256()) != 64 {
			t.Fatalf("%s: FromFile %v, sha %q", g.name, tmpl.FromFile(), tmpl.SHA256())
		}
		for _, c := range []struct {
			gen  bool
			want string
		}{{true, g.gen}, {false, g.nogen}} {
			got, err := tmpl.Render(conversation, c.gen)
			if err != nil {
				t.Fatalf("%s gen=%v: %v", g.name, c.gen, err)
			}
			if got != c.want {
				t.Errorf("%s gen=%v:\n got %q\nwant %q", g.name, c.gen, got, c.want)
			}
		}
		builtin, _ := ByName(g.name)
		if strings.Join(tmpl.StopStrings(), "|") != strings.Join(builtin.StopStrings(), "|") {
			t.Errorf("%s: stop strings %q, want %q", g.name, tmpl.StopStrings(), builtin.StopStrings())
		}
	}
}

// TestSharedTemplatesThroughMessages renders ../shared/templates with the
// conversations converted to Message values (as the daemon and CLI pass
// them) and compares with Hugging Face's reference output: the template
// variables chat builds are the ones apply_chat_template passes.
func TestSharedTemplatesThroughMessages(t *testing.T) {
	dir := testpath.Shared(t, "templates")
	raw, err := os.ReadFile(filepath.Join(dir, "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		ID    string            `json:"id"`
		Msgs  []Message         `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
		Gen   *bool             `json:"add_generation_prompt"`
		Extra map[string]any    `json:"extra"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	byID := map[string]int{}
	for i, c := range cases {
		byID[c.ID] = i
	}
	f, err := os.Open(filepath.Join(dir, "expected.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	tmpls := map[string]Template{}
	ok, total := 0, 0
	for sc.Scan() {
		var e struct {
			Template string
			Case     *string
			Output   *string
			Raises   *string
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Case == nil || e.Output == nil && e.Raises == nil {
			continue
		}
		tmpl, seen := tmpls[e.Template]
		if !seen {
			src, err := os.ReadFile(filepath.Join(dir, e.Template+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			if tmpl, err = FromJinja(string(src), nil, SpecialTokens{BOS: "<BOS>", EOS: "<EOS>"}); err != nil {
				t.Fatalf("%s: %v", e.Template, err)
			}
			tmpls[e.Template] = tmpl
		}
		c := cases[byID[*e.Case]]
		conv := Conversation{Messages: c.Msgs, Tools: c.Tools, AddGenerationPrompt: c.Gen == nil || *c.Gen, Vars: c.Extra,
			Now: time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)} // render.py's fixed clock
		total++
		got, err := tmpl.Apply(context.Background(), conv)
		name := e.Template + "/" + *e.Case
		if e.Raises != nil {
			var re *jinja.RaiseError
			if !errors.As(err, &re) || re.Message != *e.Raises {
				t.Errorf("%s: got %v, want raise_exception(%q)", name, err, *e.Raises)
				continue
			}
		} else if err != nil || got != *e.Output {
			t.Errorf("%s: got %q, %v\nwant %q", name, got, err, *e.Output)
			continue
		}
		ok++
	}
	t.Logf("%d/%d cases of ../shared/templates render identically through chat.Message", ok, total)
}

// TestConversationValues checks what templates see of tool calls,
// tools and extra variables.
func TestConversationValues(t *testing.T) {
	src := `{% for m in messages %}{{ m | tojson }}
{% endfor %}{{ tools | tojson }}|{{ enable_thinking }}|{{ add_generation_prompt }}|{{ bos_token }}{{ eos_token }}`
	tmpl, err := FromJinja(src, nil, SpecialTokens{BOS: "<s>", EOS: "</s>"})
	if err != nil {
		t.Fatal(err)
	}
	conv := Conversation{
		Messages: []Message{
			{Role: "user", Content: "hi"},
			{Role: "assistant", ToolCalls: []ToolCall{
				{ID: "c1", Function: FunctionCall{Name: "f", Arguments: json.RawMessage(`"{\"z\": 1, \"a\": [true]}"`)}},
				{Function: FunctionCall{Name: "g", Arguments: json.RawMessage(`{"b": "x", "a": null}`)}},
				{Function: FunctionCall{Name: "h", Arguments: json.RawMessage(`"not json"`)}},
				{Function: FunctionCall{Name: "k"}},
			}},
			{Role: "tool", Content: "42", ToolCallID: "c1", Name: "f"},
			{Role: "assistant", Content: "done", ReasoningContent: "thought"},
		},
		Tools: []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}`)},
		Vars:  map[string]any{"enable_thinking": false},
	}
	got, err := tmpl.Apply(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role": "user", "content": "hi"}
{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": [true]}}}, {"type": "function", "function": {"name": "g", "arguments": {"b": "x", "a": null}}}, {"type": "function", "function": {"name": "h", "arguments": "not json"}}, {"type": "function", "function": {"name": "k", "arguments": {}}}]}
{"role": "tool", "content": "42", "tool_call_id": "c1", "name": "f"}
{"role": "assistant", "content": "done", "reasoning_content": "thought"}
[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]|False|False|<s></s>`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	for _, tc := range []struct {
		name string
		conv Conversation
		want string
	}{
		{"no messages", Conversation{}, "no messages"},
		{"reserved var", Conversation{Messages: conv.Messages[:1], Vars: map[string]any{"messages": 1}}, `"messages" is set by the conversation`},
		{"tool not object", Conversation{Messages: conv.Messages[:1], Tools: []json.RawMessage{json.RawMessage(`[1]`)}}, "tool 0: not a JSON object"},
		{"bad tool json", Conversation{Messages: conv.Messages[:1], Tools: []json.RawMessage{json.RawMessage(`{`)}}, "tool 0"},
		{"unnamed call", Conversation{Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{{}}}}}, "no function name"},
	} {
		if _, err := tmpl.Apply(context.Background(), tc.conv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestPromptStripsBOS checks that Prompt leaves out the BOS (and EOS)
// text that the tokenizer adds, while Apply keeps it.
func TestPromptStripsBOS(t *testing.T) {
	src := "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"
	conv := Conversation{Messages: []Message{{Role: "user", Content: "x"}}}
	for _, tc := range []struct {
		tok          SpecialTokens
		apply, promp string
	}{
		{SpecialTokens{BOS: "<s>", EOS: "</s>", AddBOS: true}, "<s>x</s>", "x</s>"},
		{SpecialTokens{BOS: "<s>", EOS: "</s>", AddBOS: true, AddEOS: true}, "<s>x</s>", "x"},
		{SpecialTokens{BOS: "<s>", EOS: "</s>"}, "<s>x</s>", "<s>x</s>"},
	} {
		tmpl, err := FromJinja(src, nil, tc.tok)
		if err != nil {
			t.Fatal(err)
		}
		a, err1 := tmpl.Apply(context.Background(), conv)
		p, err2 := tmpl.Prompt(context.Background(), conv)
		if err1 != nil || err2 != nil || a != tc.apply || p != tc.promp {
			t.Errorf("%+v: Apply %q %v, Prompt %q %v; want %q, %q", tc.tok, a, err1, p, err2, tc.apply, tc.promp)
		}
	}
}

// TestForModel checks the choice between the file's template, a bare
// built-in name and the architecture's built-in fallback, the tool_use
// variant, and that a template using an unsupported feature is an error
// naming it.
func TestForModel(t *testing.T) {
	tok := SpecialTokens{BOS: "<s>"}
	for _, tc := range []struct {
		name, src, arch string
		variants        map[string]string
		wantName        string
		wantErr         string
	}{
		{"file", "{{ messages[0].content }}", "llama", nil, "gguf", ""},
		{"bare name", " chatml\n", "llama", nil, "chatml", ""},
		{"fallback", "", "qwen2", nil, "chatml", ""},
		{"no fallback", "", "bert", nil, "", "unknown chat template"},
		{"unsupported", "{% include 'x' %}", "llama", nil, "", "unsupported template feature: the 'include' tag"},
		{"bad variant", "x", "llama", map[string]string{"tool_use": "{% if %}"}, "", `chat template "tool_use"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := ForModel(tc.src, tc.variants, tc.arch, tok)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || tmpl.Name != tc.wantName {
				t.Fatalf("got %q, %v; want %q", tmpl.Name, err, tc.wantName)
			}
			if d := tmpl.Describe(); d == "" || strings.Contains(d, "built-in") == tmpl.FromFile() {
				t.Fatalf("Describe() = %q", d)
			}
		})
	}
	tmpl, err := ForModel("main", map[string]string{"tool_use": "tools:{{ tools|length }}"}, "", tok)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "x"}}
	plain, _ := tmpl.Apply(context.Background(), Conversation{Messages: msgs})
	withTools, _ := tmpl.Apply(context.Background(), Conversation{Messages: msgs, Tools: []json.RawMessage{json.RawMessage(`{}`)}})
	if plain != "main" || withTools != "tools:1" || strings.Join(tmpl.Variants(), ",") != "tool_use" {
		t.Fatalf("plain %q, with tools %q, variants %v", plain, withTools, tmpl.Variants())
	}
	builtin, _ := ByName("llama3")
	if _, err := builtin.Apply(context.Background(), Conversation{Messages: msgs, Tools: []json.RawMessage{json.RawMessage(`{}`)}}); !errors.Is(err, ErrTools) {
		t.Fatalf("built-in with tools: %v, want ErrTools", err)
	}
}

// BenchmarkRenderFileTemplate renders a 20-turn conversation with tools
// through real models' templates (../shared/templates).
func BenchmarkRenderFileTemplate(b *testing.B) {
	dir := testpath.Shared(b, "templates")
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}`)}
	msgs := []Message{{Role: "system", Content: "You are a helpful assistant."}}
	for i := range 10 {
		msgs = append(msgs, Message{Role: "user", Content: strings.Repeat("question words ", 20) + string(rune('a'+i))},
			Message{Role: "assistant", Content: strings.Repeat("answer words ", 40)})
	}
	msgs = append(msgs, Message{Role: "user", Content: "last"})
	for _, name := range []string{"Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "google-gemma-4-31B-it"} {
		src, err := os.ReadFile(filepath.Join(dir, name+".jinja"))
		if err != nil {
			b.Fatal(err)
		}
		tmpl, err := FromJinja(string(src), nil, SpecialTokens{BOS: "<s>", EOS: "</s>"})
		if err != nil {
			b.Fatal(err)
		}
		conv := Conversation{Messages: msgs, Tools: tools, AddGenerationPrompt: true}
		b.Run(name, func(b *testing.B) {
			var n int
			for b.Loop() {
				out, err := tmpl.Apply(context.Background(), conv)
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.SetBytes(int64(n))
		})
	}
}
