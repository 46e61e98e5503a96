package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
)

var weather = json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`)
var clock = json.RawMessage(`{"type":"function","function":{"name":"time_now"}}`)

func TestParseTools(t *testing.T) {
	tools, err := ParseTools([]json.RawMessage{weather, clock, json.RawMessage(`{"type":"function","name":"flat","parameters":{"type":"object"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 3 || tools[0].Name != "get_weather" || string(tools[1].Parameters) != `{"type":"object","properties":{}}` || tools[2].Name != "flat" {
		t.Fatalf("tools %+v", tools)
	}
	for _, c := range []struct{ tool, want string }{
		{`{"type":"function","function":{"description":"x"}}`, "no name"},
		{`{"type":"function","function":{"name":"bad name"}}`, "may hold only"},
		{`{"type":"retrieval"}`, "not supported"},
		{`{"type":"function","function":{"name":"f","parameters":[1]}}`, "JSON Schema object"},
		{`{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}`, `must describe an object ("type": "object"), not string`},
		{`{"type":"function","function":{"name":"f","parameters":{"type":["object","null"]}}}`, `not ["object","null"]`},
		{`[]`, "not a tool object"},
	} {
		if _, err := ParseTools([]json.RawMessage{json.RawMessage(c.tool)}); !errors.Is(err, ErrBadTool) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.tool, err, c.want)
		}
	}
	if _, err := ParseTools([]json.RawMessage{clock, clock}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a tool defined twice: %v", err)
	}
	if _, err := Select(tools, Choice{Mode: Required, Name: "nope"}); !errors.Is(err, ErrBadTool) {
		t.Errorf("unknown named choice: %v", err)
	}
	if one, _ := Select(tools, Choice{Mode: Required, Name: "time_now"}); len(one) != 1 || one[0].Name != "time_now" {
		t.Errorf("named choice %v", one)
	}
}

func TestFormatsParseAndCompile(t *testing.T) {
	tools, _ := ParseTools([]json.RawMessage{weather, clock})
	cases := []struct {
		template string
		format   string
		text     string
		content  string
		calls    []string // name:args
	}{
		{`{% if tools %}<tool_call>{% endif %}`, "hermes", "Let me check.\n<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\":\"time_now\",\"arguments\":{}}\n</tool_call>",
			"Let me check.", []string{`get_weather:{"city":"Oslo"}`, `time_now:{}`}},
		{`<|python_tag|>`, "llama3", `{"name":"get_weather","parameters":{"city":"Rome"}}`, "", []string{`get_weather:{"city":"Rome"}`}},
		// A ';' inside an argument is not the separator of calls (it was a 500).
		{`<|python_tag|>`, "llama3", `<|python_tag|>{"name":"get_weather","parameters":{"city":"ls; rm -rf x"}}`, "", []string{`get_weather:{"city":"ls; rm -rf x"}`}},
		{`<|python_tag|>`, "llama3", `Sure. <|python_tag|>{"name":"get_weather","parameters":{"city":"a;b"}}; {"name":"time_now","parameters":{}};`,
			"Sure.", []string{`get_weather:{"city":"a;b"}`, `time_now:{}`}},
		{`[TOOL_CALLS]`, "mistral", `[TOOL_CALLS][{"name":"time_now","arguments":{}},{"name":"get_weather","arguments":"{\"city\":\"Lima\"}"}]`,
			"", []string{`time_now:{}`, `get_weather:{"city":"Lima"}`}},
		// Mistral Small 3.2, Devstral, Magistral: [TOOL_CALLS]name[ARGS]{...} (the array form was forced on them).
		{`[TOOL_CALLS]' + name + '[ARGS]'`, "mistral-args", `Checking.[TOOL_CALLS]get_weather[ARGS]{"city":"Lima"}[TOOL_CALLS]time_now[CALL_ID]a1b2c3d4e[ARGS]{}`,
			"Checking.", []string{`get_weather:{"city":"Lima"}`, `time_now:{}`}},
		{`{{ messages }}`, "generic", `{"tool_calls":[{"name":"get_weather","arguments":{"city":"Kyiv"}}]}`, "", []string{`get_weather:{"city":"Kyiv"}`}},
		{`{{ messages }}`, "generic", `{"response":"It is \"sunny\".\n"}`, "It is \"sunny\".\n", nil},
		{`<tool_call>`, "hermes", "Just text, no calls.", "Just text, no calls.", nil},
	}
	for _, c := range cases {
		f := Detect(c.template)
		if f.Name() != c.format {
			t.Fatalf("Detect(%q) = %s, want %s", c.template, f.Name(), c.format)
		}
		content, calls, err := f.Parse(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		var got []string
		for _, cl := range calls {
			got = append(got, cl.Name+":"+string(cl.Arguments))
		}
		if content != c.content || strings.Join(got, "|") != strings.Join(c.calls, "|") {
			t.Errorf("%s %q: content %q calls %v, want %q %v", c.format, c.text, content, got, c.content, c.calls)
		}
		for _, required := range []bool{true, false} {
			p, _ := f.Grammar(tools, required, false)
			if _, err := grammar.Compose(p); err != nil {
				t.Errorf("%s grammar (required %v): %v", c.format, required, err)
			}
		}
	}
}

func TestStreamHoldsTriggers(t *testing.T) {
	s := NewStream(hermes{})
	var shown strings.Builder
	for _, piece := range []string{"Sure", ", one", " moment <to", "ol_", "call>\n{\"name\"", ":\"x\"}"} {
		shown.WriteString(s.Push(piece))
	}
	shown.WriteString(s.Close())
	if shown.String() != "Sure, one moment " || !s.InCalls() {
		t.Fatalf("shown %q, in calls %v", shown.String(), s.InCalls())
	}
	// A partial trigger that turns out to be text is shown in the end.
	s = NewStream(hermes{})
	got := s.Push("a <tool") + s.Push("s are nice") + s.Close()
	if got != "a <tools are nice" || s.InCalls() {
		t.Fatalf("got %q", got)
	}
}

func TestGenericStreamDecodesResponse(t *testing.T) {
	text := `{"response":"Hi \"you\"\n\u00e9\ud83d\ude00 end"}`
	for split := 1; split < len(text); split++ {
		s := NewStream(Generic{})
		got := s.Push(text[:split]) + s.Push(text[split:]) + s.Close()
		if got != "Hi \"you\"\né😀 end" {
			t.Fatalf("split at %d: %q", split, got)
		}
	}
	s := NewStream(Generic{})
	if got := s.Push(`{"tool_calls":[`) + s.Push(`{"name":"x","arguments":{}}]}`); got != "" || !s.InCalls() {
		t.Fatalf("calls shown as %q", got)
	}
}

func TestGenericPrepareMessages(t *testing.T) {
	tools, _ := ParseTools([]json.RawMessage{weather})
	msgs := []chat.Message{
		{Role: "user", Content: "Weather in Oslo?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_1", Function: chat.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`"{\"city\":\"Oslo\"}"`)}}}},
		{Role: "tool", ToolCallID: "call_1", Name: "get_weather", Content: "12 C"},
		{Role: "user", Content: "Thanks"},
	}
	out := Generic{}.PrepareMessages(msgs, tools, false)
	if len(out) != 4 || out[0].Role != "system" || !strings.Contains(out[0].Content, "get_weather") ||
		out[2].Content != `{"tool_calls":[{"arguments":{"city":"Oslo"},"name":"get_weather"}]}` ||
		out[3].Role != "user" || !strings.Contains(out[3].Content, "12 C") || !strings.Contains(out[3].Content, "Thanks") {
		b, _ := json.MarshalIndent(out, "", " ")
		t.Fatalf("prepared %s", b)
	}
}

// TestGenericParseCutShort: a reply the length limit cuts keeps its
// response so far, or the calls written whole before the half one (as the
// native formats keep them); the generic format used to drop them all.
func TestGenericParseCutShort(t *testing.T) {
	for _, c := range []struct {
		text, content string
		calls         []string // name and arguments of each call kept
	}{
		{`{"response":"half an ans`, "half an ans", nil},
		{`{"tool_calls":[{"name":"get_weather","argu`, "", nil},
		{`{"tool_calls"`, "", nil},
		{`{"tool_calls":[`, "", nil},
		{`{"tool_calls":[{"name":"get_weather","arguments":{"city":"Oslo"}}`, "", []string{`get_weather{"city":"Oslo"}`}},
		{`{"tool_calls":[{"name":"get_weather","arguments":{"city":"Oslo"}},{"name":"add","arguments":{"a":1,"b":2}},{"name":"add","argu`, "",
			[]string{`get_weather{"city":"Oslo"}`, `add{"a":1,"b":2}`}},
		{`{"tool_calls":[{"name":"add","arguments":{"a":1}}, {"na`, "", []string{`add{"a":1}`}},
	} {
		content, calls, err := Generic{}.Parse(c.text)
		var got []string
		for _, call := range calls {
			got = append(got, call.Name+string(call.Arguments))
		}
		if err != nil || content != c.content || !slices.Equal(got, c.calls) {
			t.Errorf("%q: content %q, calls %q, err %v; want %q, %q", c.text, content, got, err, c.content, c.calls)
		}
	}
}

// TestMaxTools: MaxTools tools compile into a call grammar; one more is a
// clear refusal, not the grammar compiler's words.
func TestMaxTools(t *testing.T) {
	raw := make([]json.RawMessage, MaxTools+1)
	for i := range raw {
		raw[i] = json.RawMessage(fmt.Sprintf(`{"type":"function","function":{"name":"f%d","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}`, i))
	}
	if _, err := ParseTools(raw); !errors.Is(err, ErrBadTool) || !strings.Contains(err.Error(), fmt.Sprintf("%d tools, more than the %d", MaxTools+1, MaxTools)) {
		t.Fatalf("%d tools: %v", MaxTools+1, err)
	}
	tools, err := ParseTools(raw[:MaxTools])
	if err != nil {
		t.Fatal(err)
	}
	for _, required := range []bool{true, false} {
		part, _ := Generic{}.Grammar(tools, required, true)
		if _, err := grammar.Compose(part); err != nil {
			t.Fatalf("%d tools (required %v) do not compile: %v", MaxTools, required, err)
		}
	}
}

// TestToolParametersOwnRefs: a tool's parameters that refer to their own
// parts ("#/$defs/...", "#/definitions/...", "#" for recursion), as schema
// generators write them, are held to in every format: the references once
// named the call schema's root, so $defs were "no such location" (a 400 for
// a schema response_format takes) and "#" recursed into the whole call.
func TestToolParametersOwnRefs(t *testing.T) {
	raw := []json.RawMessage{
		json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object",` +
			`"$defs":{"Unit":{"enum":["C","F"]}},"definitions":{"Day":{"type":"integer","minimum":1,"maximum":7}},` +
			`"properties":{"unit":{"$ref":"#/$defs/Unit"},"day":{"$ref":"#/definitions/Day"},"next":{"$ref":"#"}},` +
			`"required":["unit"],"additionalProperties":false}}}`),
		json.RawMessage(`{"type":"function","function":{"name":"g","parameters":{ }}}`),
	}
	tools, err := ParseTools(raw)
	if err != nil {
		t.Fatal(err)
	}
	v := byteVocab(t)
	part, _ := Generic{}.Grammar(tools, true, true)
	g, err := grammar.Compose(part)
	if err != nil {
		t.Fatalf("tools do not compile: %v", err)
	}
	c := grammar.NewConstraint(g, v)
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{`{"unit":"C","day":3}`, true},
		{`{"unit":"F","next":{"unit":"C","next":{"unit":"F"}}}`, true},
		{`{"unit":"K"}`, false},
		{`{"unit":"C","day":9}`, false},
		{`{"unit":"C","next":{"tool_calls":[]}}`, false},
	} {
		m := c.NewMatcher()
		text := `{"tool_calls":[{"name":"f","arguments":` + tc.args + `},{"name":"g","arguments":{}}]}`
		if ok := m.AcceptText([]byte(text)) == nil && m.CanEnd(); ok != tc.ok {
			t.Errorf("arguments %s: accepted %v, want %v", tc.args, ok, tc.ok)
		}
	}
}

// TestEitherStream: a reply that may be calls or text in the request's
// own format is held until its start shows which; a reply then streams as
// it comes (raw, even in the generic format), calls are kept back, and a
// reply still ambiguous at its end is released.
func TestEitherStream(t *testing.T) {
	tools := []Tool{{Name: "get_weather"}}
	for _, c := range []struct {
		name   string
		f      Format
		pieces []string
		want   []string // what each Push returns, then Close
	}{
		{"hermes reply", hermes{}, []string{`{"ans`, `wer":"hi"}`}, []string{`{"ans`, `wer":"hi"}`, ""}},
		{"hermes call", hermes{}, []string{"<tool", "_call>\n{", `"name":"get_weather"}`}, []string{"", "", "", ""}},
		{"hermes call after space", hermes{}, []string{"\n", "<tool_call>", "{}"}, []string{"", "\n", "", ""}}, // as NewStream: text before the marker
		{"llama3 reply naming no tool", llama3{}, []string{`{"name":"`, `Bob"}`}, []string{"", `{"name":"Bob"}`, ""}},
		{"llama3 call", llama3{}, []string{`{"name":"get_`, `weather","parameters":{}}`}, []string{"", "", ""}},
		{"generic reply", Generic{}, []string{`{"`, `response":"x"}`}, []string{"", `{"response":"x"}`, ""}},
		{"generic call", Generic{}, []string{`{"tool_`, `calls":[]}`}, []string{"", "", ""}},
		{"ambiguous at the end", hermes{}, []string{"<tool"}, []string{"", "<tool"}},
	} {
		s := NewEitherStream(c.f, tools)
		var got []string
		for _, p := range c.pieces {
			got = append(got, s.Push(p))
		}
		got = append(got, s.Close())
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestToolArgumentsAreObjects checks that a call's arguments are an
// object whatever the tool's parameters allow: parameters of {} (as
// clients send for a function without arguments), a bare "$ref": "#" or
// an anyOf with non-object branches let the model write a string, which
// came back as a 500 ("arguments are not JSON"), or a number or an array
// as the arguments (soak P).
func TestToolArgumentsAreObjects(t *testing.T) {
	v := byteVocab(t)
	for _, tc := range []struct {
		params string
		args   string
		ok     bool
	}{
		{`{}`, `{}`, true},
		{`{}`, `{"a":[1,"x"]}`, true},
		{`{}`, `"text"`, false},
		{`{}`, `5`, false},
		{`{}`, `[]`, false},
		{`{ }`, `"{}"`, false},
		{`{"$ref":"#"}`, `{"a":1}`, true},
		{`{"$ref":"#"}`, `"a"`, false},
		{`{"anyOf":[{"type":"string"},{"properties":{"a":{"type":"integer"}},"required":["a"]}]}`, `{"a":1}`, true},
		{`{"anyOf":[{"type":"string"},{"properties":{"a":{"type":"integer"}},"required":["a"]}]}`, `"a"`, false},
		{`{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"a":2}`, true},
	} {
		tools, err := ParseTools([]json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f","parameters":` + tc.params + `}}`)})
		if err != nil {
			t.Fatalf("%s: %v", tc.params, err)
		}
		part, _ := Detect("<tool_call>").Grammar(tools, true, false)
		g, err := grammar.Compose(part)
		if err != nil {
			t.Fatalf("%s: %v", tc.params, err)
		}
		m := grammar.NewConstraint(g, v).NewMatcher()
		text := "<tool_call>\n{\"name\":\"f\",\"arguments\":" + tc.args + "}\n</tool_call>"
		if ok := m.AcceptText([]byte(text)) == nil && m.CanEnd(); ok != tc.ok {
			t.Errorf("parameters %s, arguments %s: accepted %v, want %v", tc.params, tc.args, ok, tc.ok)
		}
	}
}

// TestLlama3OneCall checks that a Llama 3.x model makes one call per turn
// even when parallel calls are allowed: its templates raise on an
// assistant turn of several, so the follow-up with their results was a
// 400 (soak P). Other formats keep parallel calls.
func TestLlama3OneCall(t *testing.T) {
	tools, err := ParseTools([]json.RawMessage{weather, clock})
	if err != nil {
		t.Fatal(err)
	}
	v := byteVocab(t)
	one := `{"name":"get_weather","parameters":{"city":"Oslo"}}`
	for _, tc := range []struct {
		template, text string
		parallel, ok   bool
	}{
		{"<|python_tag|>", one, true, true},
		{"<|python_tag|>", "<|python_tag|>" + one, true, true},
		{"<|python_tag|>", one + `;{"name":"time_now","parameters":{}}`, true, false},
		{"<|python_tag|>", one + `;{"name":"time_now","parameters":{}}`, false, false},
		{"<tool_call>", "<tool_call>\n{\"name\":\"time_now\",\"arguments\":{}}\n</tool_call>\n<tool_call>\n{\"name\":\"time_now\",\"arguments\":{}}\n</tool_call>", true, true},
	} {
		part, _ := Detect(tc.template).Grammar(tools, true, tc.parallel)
		g, err := grammar.Compose(part)
		if err != nil {
			t.Fatal(err)
		}
		m := grammar.NewConstraint(g, v).NewMatcher()
		if ok := m.AcceptText([]byte(tc.text)) == nil && m.CanEnd(); ok != tc.ok {
			t.Errorf("%s, parallel %v: %s accepted %v, want %v", tc.template, tc.parallel, tc.text, ok, tc.ok)
		}
	}
}

// TestNativeParseCutShort parses native-format replies the length limit
// cut inside a call: the complete calls before the cut are kept (the
// daemon returns them with finish_reason "length"). Mistral's array lost
// them all, so a tool_choice "required" reply cut short had no call (soak P).
func TestNativeParseCutShort(t *testing.T) {
	for _, c := range []struct {
		template, text string
		calls          []string // name and arguments of each call kept
	}{
		{"[TOOL_CALLS]", `[TOOL_CALLS][{"name":"add","arguments":{"a":1}}, {"name":"add","argu`, []string{`add{"a":1}`}},
		{"[TOOL_CALLS]", `[TOOL_CALLS][{"name":"add","arguments":{"a":1}},{"name":"time_now","arguments":{}},`, []string{`add{"a":1}`, `time_now{}`}},
		{"[TOOL_CALLS]", `[TOOL_CALLS][{"name":"add","argu`, nil},
		{"[TOOL_CALLS]", `[TOOL_CALLS][`, nil},
		{"[TOOL_CALLS]", `[TOOL_CALLS]`, nil},
		{"<tool_call>", "<tool_call>\n{\"name\":\"add\",\"arguments\":{\"a\":1}}\n</tool_call>\n<tool_call>\n{\"name\":\"a", []string{`add{"a":1}`}},
	} {
		_, calls, _ := Detect(c.template).Parse(c.text)
		var got []string
		for _, call := range calls {
			got = append(got, call.Name+string(call.Arguments))
		}
		if !slices.Equal(got, c.calls) {
			t.Errorf("%q: calls %q, want %q", c.text, got, c.calls)
		}
	}
}

// TestGenericPastCallArguments: a past call's arguments reach the generic
// format's JSON reply as sent, as chat templates get them: the value of
// OpenAI's JSON text or Ollama's object, and text that is not JSON as
// that text. Such text became {}, a call the client never made (soak P).
func TestGenericPastCallArguments(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`"{\"city\":\"Oslo\"}"`, `{"city":"Oslo"}`},
		{`{"city":"Oslo"}`, `{"city":"Oslo"}`},
		{`"{not json"`, `"{not json"`},
		{`"[1,2]"`, `[1,2]`},
		{``, `{}`},
		{`null`, `{}`},
	} {
		msgs := []chat.Message{{Role: "user", Content: "q"},
			{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c", Function: chat.FunctionCall{Name: "f", Arguments: json.RawMessage(tc.args)}}}}}
		out := Generic{}.PrepareMessages(msgs, nil, false)
		want := `{"tool_calls":[{"arguments":` + tc.want + `,"name":"f"}]}`
		if len(out) != 2 || out[1].Content != want {
			t.Errorf("arguments %s: %q, want %q", tc.args, out[len(out)-1].Content, want)
		}
	}
}

// TestMistralArgsGrammar: the grammar of [TOOL_CALLS]name[ARGS]{...} takes
// a call of each tool with its arguments, several in a row only when
// parallel, and nothing else; a call the length limit cut is dropped,
// the complete ones kept.
func TestMistralArgsGrammar(t *testing.T) {
	tools, _ := ParseTools([]json.RawMessage{weather, clock})
	f := Detect(`[TOOL_CALLS]{{ name }}[ARGS]{{ args }}`)
	accepts := func(parallel bool, text string) bool { return acceptsCalls(t, f, tools, parallel, text) == nil }
	one := `[TOOL_CALLS]get_weather[ARGS]{"city":"Oslo"}`
	two := one + `[TOOL_CALLS]time_now[ARGS]{}`
	for _, c := range []struct {
		text     string
		parallel bool
		want     bool
	}{
		{one, false, true},
		{two, true, true},
		{two, false, false},
		{`[TOOL_CALLS]get_weather[ARGS]{"town":"Oslo"}`, false, false},
		{`[TOOL_CALLS]nope[ARGS]{}`, false, false},
		{`[TOOL_CALLS][{"name":"time_now","arguments":{}}]`, false, false},
	} {
		if got := accepts(c.parallel, c.text); got != c.want {
			t.Errorf("%s (parallel %v): accepted %v, want %v", c.text, c.parallel, got, c.want)
		}
	}
	_, calls, err := f.Parse(one + `[TOOL_CALLS]time_now[ARGS]{"zo`)
	if err == nil || len(calls) != 1 || calls[0].Name != "get_weather" {
		t.Errorf("cut reply: calls %v, err %v; want the first call and an error", calls, err)
	}
}

// TestParseMarkersInArguments: a call whose argument holds a format's own
// markers ("[TOOL_CALLS]", "</tool_call>"), which the calls' grammar
// allows in a JSON string, parses as the model wrote it; the parsers split
// the text at the marker and the reply was a 500 (soak T). Arguments that
// are not an object are refused.
func TestParseMarkersInArguments(t *testing.T) {
	for _, c := range []struct {
		template, text string
		calls          []string // name and arguments of each call
		err            bool
	}{
		{"[TOOL_CALLS] [ARGS]", `[TOOL_CALLS]run[ARGS]{"cmd":"echo [TOOL_CALLS]x"}`, []string{`run{"cmd":"echo [TOOL_CALLS]x"}`}, false},
		{"[TOOL_CALLS] [ARGS]", `[TOOL_CALLS]run[ARGS]{"cmd":"[TOOL_CALLS]a[ARGS]b"}[TOOL_CALLS]run[CALL_ID]a1b2c3d4e[ARGS]{}`, []string{`run{"cmd":"[TOOL_CALLS]a[ARGS]b"}`, `run{}`}, false},
		{"[TOOL_CALLS] [ARGS]", `[TOOL_CALLS]run[ARGS]{"cmd":"x"} [TOOL_CALLS]run[ARGS]{"cmd":"[TOOL_CALLS]`, []string{`run{"cmd":"x"}`}, true},
		{"[TOOL_CALLS] [ARGS]", `[TOOL_CALLS]run[ARGS]null`, nil, true},
		{"[TOOL_CALLS] [ARGS]", `[TOOL_CALLS]run[ARGS][1]`, nil, true},
		{"[TOOL_CALLS] [ARGS]", `[TOOL_CALLS]run[ARGS]{} trailing`, []string{`run{}`}, true},
		{"<tool_call>", "<tool_call>\n{\"name\":\"run\",\"arguments\":{\"cmd\":\"</tool_call><tool_call>\"}}\n</tool_call>", []string{`run{"cmd":"</tool_call><tool_call>"}`}, false},
		{"<tool_call>", "<tool_call>\n{\"name\":\"run\",\"arguments\":{\"cmd\":\"</tool_call>\"}}\n</tool_call>\n<tool_call>\n{\"name\":\"run\",\"arguments\":{}}\n</tool_call>",
			[]string{`run{"cmd":"</tool_call>"}`, `run{}`}, false},
		{"<tool_call>", "<tool_call>\n{\"name\":\"run\",\"arguments\":{}}", []string{`run{}`}, false},
	} {
		_, calls, err := Detect(c.template).Parse(c.text)
		var got []string
		for _, call := range calls {
			got = append(got, call.Name+string(call.Arguments))
		}
		if !slices.Equal(got, c.calls) || (err != nil) != c.err {
			t.Errorf("%q: calls %q, err %v; want %q, error %v", c.text, got, err, c.calls, c.err)
		}
	}
}

// byteVocab is a vocabulary of the 127 ASCII bytes and an end token, on
// which a grammar's matcher reads text byte by byte.
func byteVocab(t *testing.T) *grammar.Vocab {
	t.Helper()
	toks := []grammar.Token{{EOG: true}}
	for b := 1; b < 0x80; b++ {
		toks = append(toks, grammar.Token{Bytes: []byte{byte(b)}})
	}
	v, err := grammar.NewVocab(toks)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
