package api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/grammar/rx"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/toolcall"
	"github.com/ruvllm/ruvllm/ipc"
)

// Structured output and tool calling, shared by every API: a request's
// constraint (a JSON Schema, any JSON, a GBNF grammar, a regex) and its
// tools become the engine request's grammar once the model is known, the
// tools are offered through the model's chat template (or described to it,
// for templates without tools), and the generated text is split into
// content and calls.

// grammarModel is a model that compiles constraints (*llm.Model).
type grammarModel interface {
	Grammar(s grammar.Spec) (*grammar.Constraint, error)
	ComposedGrammar(p grammar.Part) (*grammar.Constraint, error)
}

// constraintSpec is a request's output constraint, before the model is
// known; param names the field it came from.
type constraintSpec struct {
	spec  grammar.Spec
	param string
}

// toolSpec is a request's tools, before the model is known.
type toolSpec struct {
	raw      []json.RawMessage
	choice   toolcall.Choice
	parallel bool
	param    string // "tools"
	// anthropic: the tools came in Anthropic's shape (errors use its
	// names).
	anthropic bool
}

// toolError is a 400 for err, a toolcall.ErrBadTool about the field
// param: its message names the place itself ("tools[2]: ...",
// "tool_choice names ..."), so it is not named twice, and Anthropic's
// requests read their own names (input_schema, not parameters).
func (ts *toolSpec) toolError(param string, err error) error {
	msg := strings.TrimPrefix(err.Error(), toolcall.ErrBadTool.Error()+": ")
	if !strings.HasPrefix(msg, param) {
		msg = param + " " + msg
	}
	if ts.anthropic {
		msg = strings.NewReplacer("function name", "name", "the function has no name", "the tool has no name",
			"parameters of", "input_schema of", "function ", "tool ").Replace(msg)
	}
	return &requestError{status: http.StatusBadRequest, msg: msg, param: param}
}

// toolState is what tool calling made of a request once the model is
// known: the format the model writes calls in, and whether calls may come.
type toolState struct {
	format toolcall.Format
	active bool
	// either: the reply is a call or text under the request's own
	// constraint (tool_choice auto with a response format), so only
	// calls of the offered tools are calls.
	either bool
	// required: the reply is calls from its first byte (tool_choice
	// required or a named tool), so none of it is content.
	required bool
	tools    []toolcall.Tool
}

// outputControls is a request's constraint and tools: prepare (a
// runSpec.prepare) applies them once the model is known and keeps what tool
// calling made of the request for the reply.
type outputControls struct {
	constraint *constraintSpec
	tools      *toolSpec
	thinking   *thinkingSpec
	state      *toolState
	think      *thinkingState
}

func (o *outputControls) prepare(m models.Model, req *llm.Request) error {
	think, err := applyThinking(m, req, o.thinking)
	if err != nil {
		return err
	}
	o.think = think
	if err := applyConstraint(m, req, o.constraint, think); err != nil {
		return err
	}
	st, err := applyTools(m, req, o.tools, think, o.constraint)
	if err != nil {
		return err
	}
	o.state = st
	think.continuePrefill(req)
	think.limit(req, o.thinking)
	return nil
}

// stream is a filter for one streamed choice's text: nil unless calls may
// come (prepare must have run).
func (o *outputControls) stream() *toolcall.Stream {
	if o.state == nil || !o.state.active {
		return nil
	}
	if o.state.either {
		return toolcall.NewEitherStream(o.state.format, o.state.tools)
	}
	if o.state.required {
		return toolcall.NewCallsStream(o.state.format)
	}
	return toolcall.NewStream(o.state.format)
}

// replyStream passes one choice's streamed text on: a thinking model's
// reasoning split off, then tool calls held back from the content. It
// counts the tokens the model reasoned in.
type replyStream struct {
	split     *chat.Splitter
	filter    *toolcall.Stream
	reasoning int // tokens of the reasoning, its tags included
}

// newStream returns a fresh replyStream for one choice (prepare must have
// run).
func (o *outputControls) newStream() replyStream {
	return replyStream{split: o.think.splitter(), filter: o.stream()}
}

// plain reports whether the text passes unchanged (no reasoning, no tools).
func (s replyStream) plain() bool { return s.split == nil && s.filter == nil }

// token takes the next generated token (ID -1: text the decoder held
// back, flushed) and returns the reasoning and content now final.
func (s *replyStream) token(t llm.Token) (reasoning, content string) {
	in := s.split != nil && s.split.InReasoning()
	reasoning, content = s.push(t.Text)
	if t.ID >= 0 && (in || s.split != nil && s.split.InReasoning()) {
		s.reasoning++
	}
	return reasoning, content
}

// push takes the next streamed text and returns the reasoning and content
// now final.
func (s *replyStream) push(text string) (reasoning, content string) {
	content = text
	if s.split != nil {
		reasoning, content = s.split.Push(text)
	}
	if s.filter != nil {
		content = s.filter.Push(content)
	}
	return reasoning, content
}

// close returns what is held back at the end of the reply.
func (s *replyStream) close() (reasoning, content string) {
	if s.split != nil {
		reasoning, content = s.split.Close()
	}
	if s.filter != nil {
		content = s.filter.Push(content) + s.filter.Close()
	}
	return reasoning, content
}

// split divides a reply into content and calls. A reply that ended before
// the model ended it (the length limit, or a stop string of the client's,
// which may match inside a call's arguments) keeps its complete calls and
// drops one it cut short.
func (o *outputControls) split(text, idPrefix string, res llm.Result) (string, []toolcall.Call, error) {
	cut := res.FinishReason == llm.FinishLength || res.StopSequence != ""
	return o.state.splitCalls(text, idPrefix, cut)
}

// grammarError turns a constraint's compile error into a 400 naming the
// field and, for a JSON Schema keyword the engine cannot enforce, the
// keyword.
func grammarError(param string, err error) error {
	var ue *grammar.UnsupportedError
	switch {
	case errors.As(err, &ue):
		return badParam(param, "uses %v", err)
	case errors.Is(err, grammar.ErrSchema), errors.Is(err, grammar.ErrGBNF), errors.Is(err, rx.ErrSyntax):
		return badParam(param, "%v", err)
	}
	return badParam(param, "cannot be enforced: %v", err)
}

// applyConstraint compiles c for the model into req.Grammar; for a model
// that may think first, the constraint holds the reply after the
// reasoning.
func applyConstraint(m models.Model, req *llm.Request, c *constraintSpec, think *thinkingState) error {
	if c == nil {
		return nil
	}
	gm, ok := m.(grammarModel)
	if !ok {
		return badParam(c.param, "this model cannot constrain its output")
	}
	var (
		g   *grammar.Constraint
		err error
	)
	if think.thinks() {
		var p grammar.Part
		if p, err = c.spec.Part(); err == nil {
			g, err = gm.ComposedGrammar(think.wrap(p))
		}
	} else {
		g, err = gm.Grammar(c.spec)
	}
	if err != nil {
		return grammarError(c.param, err)
	}
	req.Grammar = g
	return nil
}

// applyTools offers ts's tools to the model in its format: through the chat
// template (req.Tools) or, for a template without tools, described in the
// system prompt; the calls' grammar holds the output to valid calls, from
// the first byte (tool_choice required or a named tool) or from the
// format's opening marker on (auto). Tool messages in the history are
// rendered the same way.
func applyTools(m models.Model, req *llm.Request, ts *toolSpec, think *thinkingState, c *constraintSpec) (*toolState, error) {
	format := toolcall.Format(toolcall.Generic{})
	if gt, ok := req.Template.(*goTemplate); ok {
		format = gt.toolFormat() // a created model's TEMPLATE
	} else if m != nil {
		format = toolcall.Detect(m.Info().ChatTemplate)
	}
	st := &toolState{format: format}
	var tools []toolcall.Tool
	if ts != nil {
		all, err := toolcall.ParseTools(ts.raw)
		if err != nil {
			return nil, ts.toolError(ts.param, err)
		}
		if tools, err = toolcall.Select(all, ts.choice); err != nil {
			return nil, ts.toolError("tool_choice", err)
		}
	}
	hasToolTurns := false
	for _, msg := range req.Messages {
		if msg.Role == "tool" || len(msg.ToolCalls) > 0 {
			hasToolTurns = true
		}
	}
	required := ts != nil && ts.choice.Mode == toolcall.Required
	either := c != nil && !required && len(tools) > 0
	if _, generic := format.(toolcall.Generic); generic && either {
		format = toolcall.Generic{OwnFormat: true}
		st.format = format
	}
	if !format.Native() {
		if len(tools) > 0 || hasToolTurns {
			req.Messages = toolcall.Generic{}.PrepareMessages(req.Messages, tools, required)
		}
	} else {
		for _, t := range tools {
			req.Tools = append(req.Tools, t.Definition)
		}
	}
	if len(tools) == 0 {
		return st, nil
	}
	gm, ok := m.(grammarModel)
	if !ok {
		return nil, badParam(ts.param, "this model cannot call tools")
	}
	if err := toolcall.CheckSchemas(format, tools); err != nil {
		return nil, grammarError(ts.param, err)
	}
	// A format that writes arguments as tagged text reads them by the
	// tools' schemas (a string's "007" stays a string, an integer's 7 is
	// a number); its grammar takes the parameters it read.
	format = toolcall.Bind(format, tools)
	st.format = format
	part, triggers := format.Grammar(tools, required || either, ts.parallel)
	if either {
		// A response format beside tools: the reply is the calls or a
		// reply under the format, from the first byte (after any
		// reasoning), never free text.
		own, err := c.spec.Part()
		if err != nil {
			return nil, grammarError(c.param, err)
		}
		part, triggers = grammar.Choice(part, own), nil
	}
	if required || either { // a call (or the format) is due after any reasoning (auto: free text until a call begins)
		part = think.wrap(part)
	}
	g, err := gm.ComposedGrammar(part)
	if err != nil {
		if perr := toolcall.CheckParameters(tools); perr != nil {
			err = perr // names the tool, and the place in what the client wrote
		}
		return nil, grammarError(ts.param, err)
	}
	req.Grammar = g
	st.either, st.required, st.tools = either, required, tools
	if !required && len(triggers) > 0 {
		req.GrammarTriggers = triggers // free text until a call begins
		if think.thinks() {
			// A thinking model's reasoning may mention the marker.
			req.GrammarGate = &grammar.Gate{Open: think.r.Open, Close: think.r.Close, StartsOpen: think.startsOpen}
		}
	}
	st.active = true
	return st, nil
}

// newCallID is a tool call's id, as OpenAI spells them.
func newCallID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// splitCalls parses a reply into its content and calls (ids filled in:
// of the format's own shape where its template checks them, else
// idPrefix and hex). The grammar holds every call to its format, so only
// a reply cut short (cut: the length limit or a client's stop string) can
// end in a call that does not parse: that call is dropped, the complete
// ones before it kept.
func (st *toolState) splitCalls(text, idPrefix string, cut bool) (string, []toolcall.Call, error) {
	if st == nil || !st.active { // no tools were offered: it is text
		return text, nil, nil
	}
	content, calls, err := st.format.Parse(text)
	if st.either && (err != nil || !st.offered(calls)) {
		// The reply under the request's format, which a format's call
		// marker can read as a call ({"name": ...} for Llama 3.1's),
		// unless it began as calls (as its stream saw it) and was cut
		// short: then, as without a format, the complete calls are kept
		// and the one cut dropped, not returned as the reply's text.
		if !cut || !st.beganCalls(text) || (len(calls) > 0 && !st.offered(calls)) {
			return text, nil, nil
		}
	}
	if err != nil && !cut {
		return content, nil, fmt.Errorf("the model's tool call does not parse: %w", err)
	}
	if st.required {
		// Text before a call's marker was complete (a reply cut short
		// at "<tool") is the start of a call, not content.
		content = ""
	}
	for i := range calls {
		if calls[i].ID != "" {
			continue
		}
		if m, ok := st.format.(toolcall.IDMaker); ok {
			calls[i].ID = m.NewCallID()
		} else {
			calls[i].ID = newCallID(idPrefix)
		}
	}
	return content, calls, nil
}

// beganCalls reports whether a reply that is either calls or a reply in
// the request's format began as calls: what its stream holds back as
// calls (toolcall.NewEitherStream).
func (st *toolState) beganCalls(text string) bool {
	s := toolcall.NewEitherStream(st.format, st.tools)
	s.Push(text)
	return s.InCalls()
}

// offered reports whether calls are calls of the offered tools, and the
// reply nothing else (what a reply under the calls' grammar is).
func (st *toolState) offered(calls []toolcall.Call) bool {
	if len(calls) == 0 {
		return false
	}
	for _, c := range calls {
		if !slices.ContainsFunc(st.tools, func(t toolcall.Tool) bool { return t.Name == c.Name }) {
			return false
		}
	}
	return true
}

// openAIToolChoice reads OpenAI's tool_choice: "none", "auto", "required"
// or {"type": "function", "function": {"name"}} (the Responses API's
// {"type": "function", "name"} too).
func openAIToolChoice(raw json.RawMessage) (toolcall.Choice, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return toolcall.Choice{Mode: toolcall.Auto}, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "auto":
			return toolcall.Choice{Mode: toolcall.Auto}, nil
		case "none":
			return toolcall.Choice{Mode: toolcall.None}, nil
		case "required":
			return toolcall.Choice{Mode: toolcall.Required}, nil
		}
		return toolcall.Choice{}, badParam("tool_choice", "must be \"auto\", \"none\", \"required\" or a function, not %q", mode)
	}
	var named struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" {
		return toolcall.Choice{}, badParam("tool_choice", "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}")
	}
	name := named.Function.Name
	if name == "" {
		name = named.Name
	}
	if name == "" {
		return toolcall.Choice{}, badParam("tool_choice.function.name", "is required")
	}
	return toolcall.Choice{Mode: toolcall.Required, Name: name}, nil
}

// openAIResponseFormat reads OpenAI's response_format.
func openAIResponseFormat(raw json.RawMessage) (*constraintSpec, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, badParam("response_format", "must be an object with a type")
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindJSONObject}, param: "response_format"}, nil
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
			return nil, badParam("response_format.json_schema.schema", "is required")
		}
		return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindJSONSchema, Source: string(rf.JSONSchema.Schema)},
			param: "response_format.json_schema.schema"}, nil
	}
	return nil, badParam("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\", not %q", rf.Type)
}

// nativeConstraint reads ruvllm's own grammar and regex fields.
func nativeConstraint(grammarSrc, regex string) (*constraintSpec, error) {
	switch {
	case grammarSrc != "" && regex != "":
		return nil, badParam("regex", "cannot be combined with grammar")
	case grammarSrc != "":
		return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindGBNF, Source: grammarSrc}, param: "grammar"}, nil
	case regex != "":
		return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindRegex, Source: regex}, param: "regex"}, nil
	}
	return nil, nil
}

// ollamaFormat reads Ollama's format: "json" (a JSON object, as Ollama's
// JSON grammar makes it) or a JSON Schema object.
func ollamaFormat(raw json.RawMessage) (*constraintSpec, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" || s == `""` {
		return nil, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		if str == "json" {
			return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindJSONObject}, param: "format"}, nil
		}
		return nil, badParam("format", "must be \"json\" or a JSON Schema object, not %q", str)
	}
	if s[0] != '{' {
		return nil, badParam("format", "must be \"json\" or a JSON Schema object")
	}
	return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindJSONSchema, Source: s}, param: "format"}, nil
}

// chatToolCalls converts a message's calls for the engine.
func chatToolCalls(calls []ipc.ToolCall, at string) ([]chat.ToolCall, error) {
	var out []chat.ToolCall
	for j, c := range calls {
		if c.Function.Name == "" {
			return nil, badParam(fmt.Sprintf("%s.tool_calls[%d].function.name", at, j), "is required")
		}
		if len(c.Function.Arguments) > 0 && !json.Valid(c.Function.Arguments) {
			return nil, badParam(fmt.Sprintf("%s.tool_calls[%d].function.arguments", at, j), "is not JSON")
		}
		out = append(out, chat.ToolCall{ID: c.ID, Type: c.Type, Function: chat.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments}})
	}
	return out, nil
}

// openAIToolCalls are calls as OpenAI returns them: arguments as JSON text.
func openAIToolCalls(calls []toolcall.Call) []ipc.ToolCall {
	out := make([]ipc.ToolCall, 0, len(calls))
	for _, c := range calls {
		args, _ := json.Marshal(string(c.Arguments))
		out = append(out, ipc.ToolCall{ID: c.ID, Type: "function", Function: ipc.ToolCallFunction{Name: c.Name, Arguments: args}})
	}
	return out
}

// ollamaToolCalls are calls as Ollama returns them: arguments as an object.
func ollamaToolCalls(calls []toolcall.Call) []ipc.ToolCall {
	out := make([]ipc.ToolCall, 0, len(calls))
	for _, c := range calls {
		out = append(out, ipc.ToolCall{Function: ipc.ToolCallFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}
