// Package toolcall is function calling over a model's own chat format: it
// picks how a model writes tool calls from its chat template (Hermes/Qwen
// <tool_call> blocks, Llama 3.1 JSON with <|python_tag|>, Mistral
// [TOOL_CALLS], the XML arguments of Qwen3-Coder, GLM and MiniMax, or, for templates without tools, a generic JSON format that
// the daemon describes to the model itself), builds the grammar that holds
// a generation to valid calls of the offered tools, parses calls out of
// the generated text, and filters a stream so that no half-written call
// marker ever reaches the text a client shows.
package toolcall

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/grammar"
)

// Tool is one function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object ({} when the
	// function takes none).
	Parameters json.RawMessage
	// Definition is the tool as the client sent it in OpenAI's shape
	// ({"type": "function", "function": {...}}), for chat templates.
	Definition json.RawMessage
}

// Call is one tool call the model made.
type Call struct {
	ID        string
	Name      string
	Arguments json.RawMessage // a JSON object
}

// Choice says whether the model must, may or must not call a tool.
type Choice struct {
	Mode Mode
	// Name, with Mode Required, is the one tool the model must call.
	Name string
}

// Mode is OpenAI's tool_choice.
type Mode int

// The modes.
const (
	Auto     Mode = iota // the model decides: text or calls
	None                 // no calls: tools are not offered
	Required             // at least one call (of Choice.Name when set)
)

// ErrBadTool marks a tool definition or choice that cannot be used.
var ErrBadTool = errors.New("bad tool")

// MaxTools is the most tools one request may offer: a call's grammar has
// one alternative per tool, and a constraint takes at most 512 (beyond,
// the client got the grammar compiler's words about anyOf alternatives).
const MaxTools = 512

// ParseTools reads OpenAI-style tool definitions ({"type": "function",
// "function": {"name", "description", "parameters"}}; the Responses API's
// flat {"type": "function", "name", ...} too). Every tool needs a unique
// name of letters, digits, '_', '-' and '.' and, when parameters are
// given, a JSON object schema; there may be at most MaxTools.
func ParseTools(raw []json.RawMessage) ([]Tool, error) {
	if len(raw) > MaxTools {
		return nil, fmt.Errorf("%w: %d tools, more than the %d a request may offer", ErrBadTool, len(raw), MaxTools)
	}
	var tools []Tool
	seen := map[string]bool{}
	for i, r := range raw {
		var def struct {
			Type     string `json:"type"`
			Function *struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(r, &def); err != nil {
			return nil, fmt.Errorf("%w: tools[%d]: not a tool object (%v)", ErrBadTool, i, err)
		}
		if def.Type != "" && def.Type != "function" {
			return nil, fmt.Errorf("%w: tools[%d].type: %q tools are not supported (only function)", ErrBadTool, i, def.Type)
		}
		t := Tool{Name: def.Name, Description: def.Description, Parameters: def.Parameters}
		if def.Function != nil {
			t = Tool{Name: def.Function.Name, Description: def.Function.Description, Parameters: def.Function.Parameters}
		}
		if t.Name == "" {
			return nil, fmt.Errorf("%w: tools[%d]: the function has no name", ErrBadTool, i)
		}
		if !validName(t.Name) {
			return nil, fmt.Errorf("%w: tools[%d]: function name %q may hold only letters, digits, '_', '-' and '.' (at most 64)", ErrBadTool, i, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: tools[%d]: function %q is defined twice", ErrBadTool, i, t.Name)
		}
		seen[t.Name] = true
		p := bytes.TrimSpace(t.Parameters)
		if len(p) == 0 || string(p) == "null" {
			t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		} else if p[0] != '{' {
			return nil, fmt.Errorf("%w: tools[%d]: parameters of %q must be a JSON Schema object", ErrBadTool, i, t.Name)
		} else if typ, ok := schemaType(p); ok && typ != "object" {
			return nil, fmt.Errorf("%w: tools[%d]: parameters of %q must describe an object (\"type\": \"object\"), not %s", ErrBadTool, i, t.Name, typ)
		}
		def2, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": t.Parameters}})
		t.Definition = def2
		tools = append(tools, t)
	}
	return tools, nil
}

// schemaType returns the "type" of a schema object as it is written (its
// JSON text unless it is a string), and whether the schema has one.
func schemaType(schema []byte) (string, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil || top["type"] == nil {
		return "", false
	}
	var s string
	if json.Unmarshal(top["type"], &s) == nil {
		return s, true
	}
	return string(bytes.TrimSpace(top["type"])), true
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// Select narrows the tools to what choice allows: none for None, the named
// one for a named choice (an unknown name is an ErrBadTool).
func Select(tools []Tool, c Choice) ([]Tool, error) {
	switch {
	case c.Mode == None:
		return nil, nil
	case c.Name != "":
		for _, t := range tools {
			if t.Name == c.Name {
				return []Tool{t}, nil
			}
		}
		return nil, fmt.Errorf("%w: tool_choice names %q, which is not among the tools", ErrBadTool, c.Name)
	}
	return tools, nil
}

// CheckParameters compiles each tool's parameters alone and returns the
// first error, naming the tool and a place within its parameters. Compiled
// inside the calls' grammar, the same error names a place in the call
// schema the client never wrote ("#/anyOf/0/properties/tool_calls/...").
func CheckParameters(tools []Tool) error {
	for _, t := range tools {
		if _, err := grammar.CompileJSONSchema(t.Parameters, grammar.JSONOptions{}); err != nil {
			return fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
	}
	return nil
}

// callSchema is the schema of one call object: {"name": <one of the tools>,
// <argsKey>: <that tool's parameters>}.
func callSchema(tools []Tool, argsKey string) []byte {
	var alts []string
	for _, t := range tools {
		name, _ := json.Marshal(t.Name)
		alts = append(alts, fmt.Sprintf(`{"type":"object","properties":{"name":{"const":%s},%q:%s},"required":["name",%q],"additionalProperties":false}`,
			name, argsKey, rooted(t), argsKey))
	}
	if len(alts) == 1 {
		return []byte(alts[0])
	}
	return []byte(`{"anyOf":[` + strings.Join(alts, ",") + `]}`)
}

// rooted is t's parameters with a base URI of their own ($id), so that
// their references within themselves ("#", "#/$defs/...", the
// "#/definitions/..." that schema generators write) still name their parts
// once the parameters sit inside the call schema; they named the call
// schema's root instead. A $id the parameters give follows and wins.
// Parameters that give no type get "type": "object": arguments are an
// object whatever else the schema allows ({} allowed any JSON value, and a
// string came back as arguments that are not JSON).
func rooted(t Tool) string {
	p := bytes.TrimSpace(t.Parameters)
	if len(p) < 2 || p[0] != '{' {
		return string(p) // ParseTools lets only objects through
	}
	id, _ := json.Marshal("urn:ruvllm:tool:" + t.Name)
	head := `{"$id":` + string(id)
	if _, ok := schemaType(p); !ok {
		head += `,"type":"object"`
	}
	rest := bytes.TrimSpace(p[1:])
	if rest[0] == '}' {
		return head + `}`
	}
	return head + `,` + string(rest)
}

// Format is how one family of models writes tool calls.
type Format interface {
	// Name names the format ("hermes", "llama3", "mistral",
	// "mistral-args", "qwen3-coder", "glm", "minimax", "generic").
	Name() string
	// Native reports whether the model's chat template renders the tools
	// and tool messages itself; the generic format is described to the
	// model by the daemon instead (Instructions, Messages).
	Native() bool
	// Grammar is the grammar of the calls (only calls: Required; text or
	// calls: Auto, through the triggers), at most one call when !parallel.
	Grammar(tools []Tool, required, parallel bool) (grammar.Part, []string)
	// Triggers are the texts whose appearance starts the calls.
	Triggers() []string
	// Parse splits generated text into content and calls.
	Parse(text string) (content string, calls []Call, err error)
}

// Detect picks the format of a chat template from what it renders.
func Detect(template string) Format {
	switch {
	case strings.Contains(template, "<seed:tool_call>") && strings.Contains(template, "<function="):
		return xmlCalls{xmlLayout: seedLayout}
	case strings.Contains(template, "<function=") && strings.Contains(template, "<parameter="):
		return xmlCalls{xmlLayout: qwen3CoderLayout}
	case strings.Contains(template, "<arg_key>") && strings.Contains(template, "<arg_value>"):
		return xmlCalls{xmlLayout: glmLayout}
	case strings.Contains(template, "<minimax:tool_call>") && strings.Contains(template, "<invoke name="):
		return xmlCalls{xmlLayout: minimaxLayout}
	case strings.Contains(template, "<tool_call>"):
		return hermes{}
	case strings.Contains(template, "[TOOL_CALLS]") && strings.Contains(template, "[ARGS]"):
		return mistralArgs{}
	case strings.Contains(template, "[TOOL_CALLS]"):
		return mistral{}
	case strings.Contains(template, "<|python_tag|>") || (strings.Contains(template, "ipython") && strings.Contains(template, `"parameters"`)):
		return llama3{}
	}
	return Generic{}
}

// unmarshalCall reads a call object with the arguments under argsKey.
func unmarshalCall(b []byte, argsKey string) (Call, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Call{}, fmt.Errorf("tool call is not a JSON object: %w", err)
	}
	var c Call
	if err := json.Unmarshal(raw["name"], &c.Name); err != nil || c.Name == "" {
		return Call{}, errors.New("tool call has no name")
	}
	args := raw[argsKey]
	if len(args) == 0 {
		args = raw["arguments"]
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	// Some models write the arguments as a JSON string.
	var s string
	if json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s)
	}
	if t := bytes.TrimSpace(args); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		// Every API hands the client an object (Ollama's arguments are
		// one); the grammar only ever writes one.
		return Call{}, fmt.Errorf("tool call %s: arguments are not a JSON object", c.Name)
	}
	c.Arguments = args
	if id, ok := raw["id"]; ok {
		json.Unmarshal(id, &c.ID)
	}
	return c, nil
}

// hermes is Hermes/Qwen: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
type hermes struct{}

func (hermes) Name() string       { return "hermes" }
func (hermes) Native() bool       { return true }
func (hermes) Triggers() []string { return []string{"<tool_call>"} }

func (hermes) Grammar(tools []Tool, required, parallel bool) (grammar.Part, []string) {
	one := grammar.Seq(grammar.Special("<tool_call>"), grammar.Lit("\n"), grammar.JSONValue(callSchema(tools, "arguments"), grammar.JSONOptions{}),
		grammar.Lit("\n"), grammar.Special("</tool_call>"))
	max := -1
	if !parallel {
		max = 1
	}
	return grammar.Repeat(one, 1, max, grammar.Lit("\n")), []string{"<tool_call>"}
}

func (hermes) Parse(text string) (string, []Call, error) {
	i := strings.Index(text, "<tool_call>")
	if i < 0 {
		return text, nil, nil
	}
	content, rest := text[:i], text[i:]
	var calls []Call
	for {
		start := strings.Index(rest, "<tool_call>")
		if start < 0 {
			break
		}
		// The call is read as one JSON value, not up to the next
		// </tool_call>: an argument may hold the markers' text.
		raw, after, err := nextJSON(rest[start+len("<tool_call>"):])
		if err != nil {
			return content, calls, fmt.Errorf("tool call is not a JSON object: %w", err)
		}
		c, err := unmarshalCall(raw, "arguments")
		if err != nil {
			return content, calls, err
		}
		calls = append(calls, c)
		rest = strings.TrimPrefix(strings.TrimLeft(after, " \t\r\n"), "</tool_call>")
	}
	return strings.TrimRight(content, " \n"), calls, nil
}

// nextJSON reads the JSON value text begins with (after white space) and
// returns it and the text after it.
func nextJSON(text string) (json.RawMessage, string, error) {
	text = strings.TrimLeft(text, " \t\r\n")
	dec := json.NewDecoder(strings.NewReader(text))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, "", err
	}
	return raw, text[dec.InputOffset():], nil
}

// llama3 is Llama 3.1+: optionally <|python_tag|>, then {"name": ..., "parameters": {...}}.
type llama3 struct{}

func (llama3) Name() string       { return "llama3" }
func (llama3) Native() bool       { return true }
func (llama3) Triggers() []string { return []string{"<|python_tag|>", `{"name"`} }

// Grammar allows one call whatever parallel says: Llama 3.x's templates
// raise "This model only supports single tool-calls at once!" on an
// assistant turn of several, so the turn that sends their results back
// could not be rendered (llama.cpp's Llama 3.x grammar has one call too).
func (llama3) Grammar(tools []Tool, required, parallel bool) (grammar.Part, []string) {
	one := grammar.JSONValue(callSchema(tools, "parameters"), grammar.JSONOptions{})
	return grammar.Seq(grammar.Opt(grammar.Special("<|python_tag|>")), one),
		[]string{"<|python_tag|>", `{"name"`}
}

func (llama3) Parse(text string) (string, []Call, error) {
	i := strings.Index(text, "<|python_tag|>")
	body := ""
	content := text
	if i >= 0 {
		content, body = text[:i], text[i+len("<|python_tag|>"):]
	} else if j := strings.Index(text, `{"name"`); j >= 0 {
		content, body = text[:j], text[j:]
	} else {
		return text, nil, nil
	}
	// Calls are JSON objects joined by ';'. They are read one JSON value at
	// a time: a ';' may sit inside an argument's string ("ls; pwd").
	var calls []Call
	rest := strings.TrimSpace(body)
	for rest != "" {
		dec := json.NewDecoder(strings.NewReader(rest))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return content, calls, fmt.Errorf("tool call is not a JSON object: %w", err)
		}
		c, err := unmarshalCall(raw, "parameters")
		if err != nil {
			return content, calls, err
		}
		calls = append(calls, c)
		rest = strings.TrimSpace(rest[dec.InputOffset():])
		if rest != "" && rest[0] != ';' {
			return content, calls, fmt.Errorf("tool call %s: %q follows it instead of ';' or the end", c.Name, truncate(rest, 20))
		}
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ";"))
	}
	return strings.TrimSpace(content), calls, nil
}

// IDMaker is a Format whose chat template checks the ids of the calls and
// results it renders back, so the ids the daemon gives calls must have the
// template's shape (a follow-up turn with its tool results fails to render
// otherwise).
type IDMaker interface {
	// NewCallID returns a fresh call id of the format's shape.
	NewCallID() string
}

// truncate is s cut to at most n bytes, for error messages.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// mistral is Mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...].
type mistral struct{}

// NewCallID returns nine random letters and digits: Mistral's templates
// refuse any other call id ("Tool call IDs should be alphanumeric strings
// with length 9!").
func (mistral) NewCallID() string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 9)
	rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return string(b)
}

func (mistral) Name() string       { return "mistral" }
func (mistral) Native() bool       { return true }
func (mistral) Triggers() []string { return []string{"[TOOL_CALLS]"} }

func (mistral) Grammar(tools []Tool, required, parallel bool) (grammar.Part, []string) {
	maxItems := ""
	if !parallel {
		maxItems = `,"maxItems":1`
	}
	arr := fmt.Sprintf(`{"type":"array","items":%s,"minItems":1%s}`, callSchema(tools, "arguments"), maxItems)
	return grammar.Seq(grammar.Special("[TOOL_CALLS]"), grammar.JSONValue([]byte(arr), grammar.JSONOptions{})), []string{"[TOOL_CALLS]"}
}

func (mistral) Parse(text string) (string, []Call, error) {
	i := strings.Index(text, "[TOOL_CALLS]")
	if i < 0 {
		return text, nil, nil
	}
	// The array is read an element at a time, so that one the length limit
	// cut short keeps the calls before the cut.
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(text[i+len("[TOOL_CALLS]"):])))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return text[:i], nil, errors.New("tool calls are not a JSON array")
	}
	var calls []Call
	for dec.More() {
		var it json.RawMessage
		if err := dec.Decode(&it); err != nil {
			return text[:i], calls, fmt.Errorf("tool calls are not a JSON array: %w", err)
		}
		c, err := unmarshalCall(it, "arguments")
		if err != nil {
			return text[:i], calls, err
		}
		calls = append(calls, c)
	}
	if _, err := dec.Token(); err != nil {
		return text[:i], calls, fmt.Errorf("tool calls are not a JSON array: %w", err)
	}
	return strings.TrimSpace(text[:i]), calls, nil
}
