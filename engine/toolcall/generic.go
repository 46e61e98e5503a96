package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
)

// Generic is the format for models whose chat template does not render
// tools: the daemon describes the tools in the system prompt and the model
// answers with one JSON object, {"tool_calls": [{"name", "arguments"}]}
// to call tools or, where it may choose, {"response": "..."} to answer in
// text (as llama.cpp's generic format does). The grammar makes the object
// always valid, so even a model never trained on tools calls them
// correctly; the streamed content is the response string, decoded.
type Generic struct {
	// OwnFormat says the reply that calls no tool follows a format the
	// request gives (a JSON Schema beside the tools), not {"response"}:
	// the instructions say so.
	OwnFormat bool
}

// Name implements Format.
func (Generic) Name() string { return "generic" }

// Native implements Format: the template does not see the tools.
func (Generic) Native() bool { return false }

// Triggers implements Format: the whole reply is structured.
func (Generic) Triggers() []string { return nil }

func (Generic) callsSchema(tools []Tool, parallel bool) string {
	maxItems := ""
	if !parallel {
		maxItems = `,"maxItems":1`
	}
	return fmt.Sprintf(`{"type":"object","properties":{"tool_calls":{"type":"array","items":%s,"minItems":1%s}},"required":["tool_calls"],"additionalProperties":false}`,
		callSchema(tools, "arguments"), maxItems)
}

const responseSchema = `{"type":"object","properties":{"response":{"type":"string"}},"required":["response"],"additionalProperties":false}`

// Grammar implements Format: the calls object, or (not required) either it
// or the response object.
func (g Generic) Grammar(tools []Tool, required, parallel bool) (grammar.Part, []string) {
	schema := g.callsSchema(tools, parallel)
	if !required {
		schema = `{"anyOf":[` + schema + `,` + responseSchema + `]}`
	}
	return grammar.JSONValue([]byte(schema), grammar.JSONOptions{}), nil
}

// Instructions is the text the system prompt gains: the tools and how to
// call them.
func (g Generic) Instructions(tools []Tool, required bool) string {
	var b strings.Builder
	b.WriteString("You can call these tools (JSON Schema of each one's arguments):\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "- %s", t.Name)
		if t.Description != "" {
			fmt.Fprintf(&b, ": %s", t.Description)
		}
		fmt.Fprintf(&b, "\n  arguments: %s\n", compact(t.Parameters))
	}
	b.WriteString("To call tools, reply with only the JSON object {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": {...}}]}.")
	switch {
	case required:
	case g.OwnFormat:
		b.WriteString(" To answer without calling a tool, reply in the format you are asked for.")
	default:
		b.WriteString(" To answer without calling a tool, reply with only the JSON object {\"response\": <your answer as a string>}.")
	}
	return b.String()
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Parse implements Format.
func (Generic) Parse(text string) (string, []Call, error) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") {
		return text, nil, nil
	}
	var obj struct {
		ToolCalls []json.RawMessage `json:"tool_calls"`
		ToolCall  json.RawMessage   `json:"tool_call"`
		Response  *string           `json:"response"`
	}
	if err := json.Unmarshal([]byte(t), &obj); err != nil {
		// A reply cut short (the length limit): the response so far, and
		// no call from a half-written one.
		if strings.HasPrefix(t, responsePrefix) {
			partial, _, _ := decodeJSONString(t[len(responsePrefix):])
			return partial, nil, nil
		}
		if strings.HasPrefix(t, `{"tool_calls"`) {
			return "", completeCalls(t), nil
		}
		return text, nil, nil // not the structured reply: plain text
	}
	if obj.Response != nil {
		return *obj.Response, nil, nil
	}
	if len(obj.ToolCall) > 0 {
		obj.ToolCalls = append(obj.ToolCalls, obj.ToolCall)
	}
	var calls []Call
	for _, raw := range obj.ToolCalls {
		c, err := unmarshalCall(raw, "arguments")
		if err != nil {
			return "", calls, err
		}
		calls = append(calls, c)
	}
	return "", calls, nil
}

// completeCalls reads the calls that a {"tool_calls": [...] reply cut
// short still holds whole, so a cut drops only the half-written one (as the
// native formats do); a call that does not read as one is where it stops.
func completeCalls(text string) []Call {
	dec := json.NewDecoder(strings.NewReader(text))
	for _, want := range []any{json.Delim('{'), "tool_calls", json.Delim('[')} {
		if tok, err := dec.Token(); err != nil || tok != want {
			return nil
		}
	}
	var calls []Call
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		c, err := unmarshalCall(raw, "arguments")
		if err != nil {
			break
		}
		calls = append(calls, c)
	}
	return calls
}

// callArguments is a past call's arguments as its JSON reply holds them:
// the value they spell (OpenAI sends them as JSON text; none is {}), or,
// when that text is not JSON, the text itself, as chat templates get it;
// it was dropped for {}, so the model read a call other than the one made.
func callArguments(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return map[string]any{}
	}
	if s, ok := v.(string); ok {
		var inner any
		if json.Unmarshal([]byte(s), &inner) == nil {
			return inner
		}
		return s
	}
	return v
}

// PrepareMessages makes a conversation with tools readable by a template
// that knows nothing of them: the instructions join the system prompt, an
// assistant turn's calls become its JSON reply, and a tool result becomes
// a user turn that names its call (consecutive turns of one role are
// merged, as templates that insist on alternation need).
func (g Generic) PrepareMessages(msgs []chat.Message, tools []Tool, required bool) []chat.Message {
	var out []chat.Message
	add := func(m chat.Message) {
		if n := len(out); n > 0 && out[n-1].Role == m.Role && m.Role != "system" {
			out[n-1].Content += "\n\n" + m.Content
			return
		}
		out = append(out, m)
	}
	instr := ""
	if len(tools) > 0 {
		instr = g.Instructions(tools, required)
	}
	system := false
	for _, m := range msgs {
		switch {
		case m.Role == "system":
			if !system && instr != "" {
				m.Content = strings.TrimSpace(m.Content + "\n\n" + instr)
			}
			system = true
			add(chat.Message{Role: "system", Content: m.Content})
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			var calls []map[string]any
			for _, c := range m.ToolCalls {
				args := callArguments(c.Function.Arguments)
				calls = append(calls, map[string]any{"name": c.Function.Name, "arguments": args})
			}
			b, _ := json.Marshal(map[string]any{"tool_calls": calls})
			add(chat.Message{Role: "assistant", Content: string(b)})
		case m.Role == "tool":
			who := m.Name
			if m.ToolCallID != "" {
				who = strings.TrimSpace(who + " " + m.ToolCallID)
			}
			add(chat.Message{Role: "user", Content: fmt.Sprintf("Result of the tool call %s:\n%s", who, m.Content)})
		default:
			add(chat.Message{Role: m.Role, Content: m.Content})
		}
	}
	if !system && instr != "" {
		out = append([]chat.Message{{Role: "system", Content: instr}}, out...)
	}
	return out
}
