package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// forecast has parameters of every kind the XML formats write: strings
// (raw text), an integer, an enum and an object (JSON).
var forecast = json.RawMessage(`{"type":"function","function":{"name":"forecast","description":"Weather ahead","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"units":{"type":"string","enum":["c","f"]},"opts":{"type":"object","properties":{"hourly":{"type":"boolean"}},"required":["hourly"]}},"required":["city","days"]}}}`)

// TestXMLFormatsThroughRealTemplates: for each family that writes its
// arguments as tagged values, the calls its real template renders back
// (../shared/templates) are what the calls' grammar accepts and what
// Parse reads into the same calls, strings kept as strings and the rest
// as JSON. Before, these templates got the Hermes JSON inside
// <tool_call>, a format the models never wrote.
func TestXMLFormatsThroughRealTemplates(t *testing.T) {
	dir := testpath.Shared(t, "templates")
	tools, err := ParseTools([]json.RawMessage{forecast, clock})
	if err != nil {
		t.Fatal(err)
	}
	calls := []chat.ToolCall{
		{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "forecast", Arguments: json.RawMessage(`{"city":"Oslo, <Norway>\nwest","days":3,"opts":{"hourly":true}}`)}},
		{ID: "call_2", Type: "function", Function: chat.FunctionCall{Name: "time_now", Arguments: json.RawMessage(`{}`)}},
	}
	want := []string{`forecast:{"city":"Oslo, <Norway>\nwest","days":3,"opts":{"hourly":true}}`, `time_now:{}`}
	for _, c := range []struct {
		file, format string
		end          string // what follows the calls in the rendered turn
	}{
		{"Qwen3-Coder", "qwen3-coder", "<|im_end|>"},
		{"Qwen3.5-4B", "qwen3-coder", "<|im_end|>"},
		{"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "qwen3-coder", "<|im_end|>"},
		{"StepFun3.5-Flash", "qwen3-coder", "<|im_end|>"},
		{"ByteDance-Seed-OSS", "seed", "<seed:eos>"},
		{"GLM-4.6", "glm", "<|observation|>"},
		{"GLM-4.7-Flash", "glm", "<|observation|>"},
		{"poolside-Laguna-S-2.1", "glm", "\x00"},
		{"inclusionai-ling-3.0-flash", "glm", "<|role_end|>"},
		{"MiniMax-M2", "minimax", "[e~["},
	} {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, c.file+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			f := Detect(string(src))
			if f.Name() != c.format {
				t.Fatalf("Detect = %s, want %s", f.Name(), c.format)
			}
			tmpl, err := chat.FromJinja(string(src), nil, chat.SpecialTokens{BOS: "<s>", EOS: "</s>"})
			if err != nil {
				t.Fatal(err)
			}
			var defs []json.RawMessage
			for _, tl := range tools {
				defs = append(defs, tl.Definition)
			}
			user := []chat.Message{{Role: "user", Content: "Weather in Oslo?"}}
			head, err := tmpl.Apply(context.Background(), chat.Conversation{Messages: user, Tools: defs, AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			full, err := tmpl.Apply(context.Background(), chat.Conversation{Tools: defs, Messages: append(user,
				chat.Message{Role: "assistant", ToolCalls: calls},
				chat.Message{Role: "tool", ToolCallID: "call_1", Name: "forecast", Content: "sunny"})})
			if err != nil {
				t.Fatal(err)
			}
			same := 0 // the assistant's turn starts where the texts part
			for same < len(head) && same < len(full) && head[same] == full[same] {
				same++
			}
			i := strings.Index(full[same:], f.Triggers()[0])
			if i < 0 {
				t.Fatalf("the rendered turn has no %s:\n%s", f.Triggers()[0], full[same:])
			}
			reply := full[same+i:]
			if j := strings.Index(reply, c.end); j >= 0 {
				reply = reply[:j]
			} else if c.end != "\x00" {
				t.Fatalf("no %q after the calls:\n%s", c.end, reply)
			}
			if c.end == "\x00" { // up to the tool result
				reply = reply[:strings.LastIndex(reply, "</tool_call>")+len("</tool_call>")]
			}
			reply = strings.TrimRight(reply, "\n")
			// Seed-OSS's template renders an object argument with Jinja's
			// string filter (a Python literal); the grammar holds the
			// model to JSON, which its schema can check.
			reply = strings.ReplaceAll(reply, "{'hourly': True}", `{"hourly": true}`)
			_, got, err := Bind(f, tools).Parse(reply)
			if err != nil {
				t.Fatalf("Parse(%q): %v", reply, err)
			}
			var names []string
			for _, cl := range got {
				names = append(names, cl.Name+":"+string(cl.Arguments))
			}
			if strings.Join(names, "|") != strings.Join(want, "|") {
				t.Errorf("Parse(%q) = %v, want %v", reply, names, want)
			}
			// The grammar writes JSON compactly, as everywhere; the
			// templates' tojson puts a space after the colon.
			reply = strings.ReplaceAll(reply, `{"hourly": true}`, `{"hourly":true}`)
			if err := acceptsCalls(t, f, tools, true, reply); err != nil {
				t.Errorf("the grammar refuses the template's own calls %q: %v", reply, err)
			}
		})
	}
}

// TestXMLGrammarHoldsCallsToSchema: the calls' grammar of a tagged-value
// format takes a call of an offered tool with its required parameters,
// values of their types (an enum's words only, text without the tag that
// ends it), parameters in schema order, and several calls only when
// parallel.
func TestXMLGrammarHoldsCallsToSchema(t *testing.T) {
	tools, err := ParseTools([]json.RawMessage{forecast, clock})
	if err != nil {
		t.Fatal(err)
	}
	f := Detect("<function=f><parameter=p>")
	call := func(params string) string {
		return "<tool_call>\n<function=forecast>\n" + params + "</function>\n</tool_call>"
	}
	p := func(k, v string) string { return "<parameter=" + k + ">\n" + v + "\n</parameter>\n" }
	ok := call(p("city", "Oslo") + p("days", "2"))
	clockCall := "<tool_call>\n<function=time_now>\n</function>\n</tool_call>"
	for _, c := range []struct {
		name, text string
		parallel   bool
		want       bool
	}{
		{"required only", ok, false, true},
		{"every parameter", call(p("city", "Oslo") + p("days", "2") + p("units", "c") + p("opts", `{"hourly":false}`)), false, true},
		{"multi-line text", call(p("city", "Oslo\n\nNorway <west>") + p("days", "2")), false, true},
		{"two calls, parallel", ok + "\n" + clockCall, true, true},
		{"two calls, not parallel", ok + "\n" + clockCall, false, false},
		{"a required parameter missing", call(p("city", "Oslo")), false, false},
		{"an unknown parameter", call(p("city", "Oslo") + p("days", "2") + p("town", "x")), false, false},
		{"an integer that is text", call(p("city", "Oslo") + p("days", "two")), false, false},
		{"a word outside the enum", call(p("city", "Oslo") + p("days", "2") + p("units", "k")), false, false},
		{"an object that misses its required key", call(p("city", "Oslo") + p("days", "2") + p("opts", `{}`)), false, false},
		{"text holding the end tag", call(p("city", "a</parameter>b") + p("days", "2")), false, false},
		{"out of schema order", call(p("days", "2") + p("city", "Oslo")), false, false},
		{"an unknown tool", "<tool_call>\n<function=nope>\n</function>\n</tool_call>", false, false},
		{"Hermes JSON", "<tool_call>\n{\"name\":\"time_now\",\"arguments\":{}}\n</tool_call>", false, false},
	} {
		if got := acceptsCalls(t, f, tools, c.parallel, c.text) == nil; got != c.want {
			t.Errorf("%s: accepted %v, want %v\n%s", c.name, got, c.want, c.text)
		}
	}
}

// TestXMLParse: arguments are read by the bound tools' schemas; a reply
// cut short keeps its complete calls; text that is not a call stays text.
func TestXMLParse(t *testing.T) {
	tools, err := ParseTools([]json.RawMessage{forecast, clock})
	if err != nil {
		t.Fatal(err)
	}
	text := "Let me look.\n\n<tool_call>\n<function=forecast>\n<parameter=city>\n42\n</parameter>\n<parameter=days>\n 7 \n</parameter>\n</function>\n</tool_call>"
	cases := []struct {
		name, format, text string
		bound              bool
		content            string
		calls              []string
		fails              bool
	}{
		{"a number-like string stays a string", "<function=f><parameter=p>", text, true, "Let me look.", []string{`forecast:{"city":"42","days":7}`}, false},
		{"unbound, values are text", "<function=f><parameter=p>", text, false, "Let me look.", []string{`forecast:{"city":"42","days":" 7 "}`}, false},
		{"cut in the second call", "<function=f><parameter=p>", text + "\n<tool_call>\n<function=time_", true, "Let me look.", []string{`forecast:{"city":"42","days":7}`}, true},
		{"cut in a value", "<function=f><parameter=p>", "<tool_call>\n<function=forecast>\n<parameter=city>\nOs", true, "", nil, true},
		{"no call", "<function=f><parameter=p>", "Just text.", true, "Just text.", nil, false},
		{"an argument given twice", "<function=f><parameter=p>", "<tool_call>\n<function=time_now>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>", true, "", nil, true},
		{"GLM, no newlines", "<arg_key></arg_key><arg_value>", "<tool_call>forecast<arg_key>city</arg_key><arg_value>Oslo</arg_value><arg_key>days</arg_key><arg_value>1</arg_value></tool_call><tool_call>time_now</tool_call>", true, "",
			[]string{`forecast:{"city":"Oslo","days":1}`, `time_now:{}`}, false},
		{"MiniMax, block not closed", "<minimax:tool_call><invoke name=", "<minimax:tool_call>\n<invoke name=\"time_now\">\n</invoke>\n", true, "", []string{`time_now:{}`}, true},
	}
	for _, c := range cases {
		f := Detect(c.format)
		if c.bound {
			f = Bind(f, tools)
		}
		content, calls, err := f.Parse(c.text)
		var got []string
		for _, cl := range calls {
			got = append(got, cl.Name+":"+string(cl.Arguments))
		}
		if content != c.content || strings.Join(got, "|") != strings.Join(c.calls, "|") || (err != nil) != c.fails {
			t.Errorf("%s: content %q calls %v err %v; want %q %v (fails %v)", c.name, content, got, err, c.content, c.calls, c.fails)
		}
	}
}

// acceptsCalls is nil when format f's grammar of required calls of tools
// (parallel or not) takes the whole of text, else why it does not.
func acceptsCalls(t *testing.T, f Format, tools []Tool, parallel bool, text string) error {
	t.Helper()
	p, _ := f.Grammar(tools, true, parallel)
	g, err := grammar.Compose(p)
	if err != nil {
		t.Fatal(err)
	}
	m := grammar.NewConstraint(g, byteVocab(t)).NewMatcher()
	if err := m.AcceptText([]byte(text)); err != nil {
		return err
	}
	if !m.CanEnd() {
		return errors.New("the text ends before the calls do")
	}
	return nil
}
