package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/toolcall"
	"github.com/ruvllm/ruvllm/ipc"
)

// Ollama prompt templates (a Modelfile's TEMPLATE, /api/generate's
// template): Go text/template over Ollama's names. A template that reads
// .Messages sees the whole chat (.System, .Messages with their tool calls,
// .Tools); one that does not is an older, one-turn template, rendered once
// per exchange with .System, .Prompt and .Response, the last time only up
// to .Response, where the model's reply begins. Both are Ollama's rules,
// so that a TEMPLATE copied from `ollama show --modelfile` gives the same
// prompt here.

// maxRenderSteps bounds the template nodes one rendering may execute,
// counted before it runs from the sizes of what it ranges over: execution
// cannot be cancelled, and a template may loop without writing anything.
// (Four nested ranges over 200 messages rendered for 30 s and went on
// after the client had gone.) A usual template takes 20 to 60 nodes a
// message, so this is some 100,000 messages.
const maxRenderSteps = 1 << 22

// maxRenderedBytes bounds a template's rendering: the messages' text is
// at most 12 MiB (what the engine passes a chat template), and the
// template adds its own.
const maxRenderedBytes = 16 << 20

// goTemplate is a parsed Ollama prompt template. It renders chats for the
// engine (chat.Renderer, as llm.Request.Template).
type goTemplate struct {
	src      string
	tmpl     *template.Template
	messages bool      // it reads .Messages: one rendering of the whole chat
	tools    bool      // it reads .Tools
	thinks   bool      // it reads .Think: a thinking model's template
	suffix   bool      // it reads .Suffix: a fill-in-the-middle branch
	cost     *costTree // the nodes a rendering executes
	// literal is the largest integer the template writes: a range over
	// a variable, a pipeline or dot may range over it.
	literal int
	// think is the request's choice, rendered as .Think and .IsThinkSet
	// (nil: not set).
	think *bool
}

// templateFuncs are the functions Ollama's templates may call besides
// text/template's own.
var templateFuncs = template.FuncMap{
	"json": func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	},
}

// parseGoTemplate parses an Ollama prompt template, refusing one whose
// work cannot be bounded before it runs: a range over a number, a template
// that calls itself, or one whose nodes exceed maxRenderSteps even over a
// chat of one message.
func parseGoTemplate(src string) (*goTemplate, error) {
	if len(src) > MaxTemplateBytes {
		return nil, fmt.Errorf("the template is %d bytes; at most %d are allowed", len(src), MaxTemplateBytes)
	}
	t, err := template.New("prompt").Option("missingkey=zero").Funcs(templateFuncs).Parse(src)
	if err != nil {
		return nil, err
	}
	g := &goTemplate{src: src, tmpl: t}
	names := map[string]bool{}
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			identifiers(tt.Tree.Root, names)
		}
	}
	g.messages, g.tools, g.thinks = names["messages"], names["tools"], names["think"] || names["isthinkset"]
	g.suffix = names["suffix"]
	if !g.messages && !names["response"] && t.Tree != nil {
		// Ollama: a one-turn template without .Response writes the
		// reply after everything it renders.
		t.Tree.Root.Nodes = append(t.Tree.Root.Nodes, responseNode())
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			g.literal = max(g.literal, largestInt(tt.Tree.Root))
		}
	}
	c := costBuilder{t: t, done: map[string]*costTree{}, active: map[string]bool{}}
	if g.cost, err = c.named("prompt"); err != nil {
		return nil, err
	}
	for _, tt := range t.Templates() { // defined but not called: refused alike
		if tt.Tree == nil {
			continue
		}
		k, err := c.named(tt.Name())
		if err != nil {
			return nil, err
		}
		if k.steps(g.bound(listSizes{1, 1, 1, 1, 1})) > maxRenderSteps {
			return nil, fmt.Errorf("the template runs more than %d steps", maxRenderSteps)
		}
	}
	return g, nil
}

// bound is s with the template's own integers counted: a range over
// anything but a field may range over one of them ({{ $n := 1000000000 }}
// {{ range $n }}, {{ range (1000000000) }}, {{ with 1000000000 }}{{ range . }}),
// as text/template ranges over integers.
func (g *goTemplate) bound(s listSizes) listSizes {
	s.any = max(s.any, g.literal)
	return s
}

// steps is the nodes the template executes over lists of sizes s, the
// template's own integers counted as possible range lengths (bound).
func (g *goTemplate) steps(s listSizes) int { return g.cost.steps(g.bound(s)) }

// instance is one rendering's own copy of the template, its functions
// metered, and the bounded buffer it writes to.
func (g *goTemplate) instance() (*template.Template, *limitedBuilder, error) {
	tmpl, err := g.tmpl.Clone()
	if err != nil {
		return nil, nil, err
	}
	tmpl.Funcs((&funcMeter{}).funcs())
	return tmpl, &limitedBuilder{max: maxRenderedBytes}, nil
}

// largestInt is the largest integer literal in n and below it.
func largestInt(n parse.Node) int {
	most := 0
	switch x := n.(type) {
	case *parse.NumberNode:
		if x.IsInt && x.Int64 > 0 {
			most = int(min(x.Int64, int64(maxRenderSteps)+1))
		}
	case *parse.ListNode:
		if x != nil {
			for _, c := range x.Nodes {
				most = max(most, largestInt(c))
			}
		}
	case *parse.ActionNode:
		most = largestInt(x.Pipe)
	case *parse.TemplateNode:
		if x.Pipe != nil {
			most = largestInt(x.Pipe)
		}
	case *parse.IfNode:
		most = largestInt(&x.BranchNode)
	case *parse.RangeNode:
		most = largestInt(&x.BranchNode)
	case *parse.WithNode:
		most = largestInt(&x.BranchNode)
	case *parse.BranchNode:
		most = max(largestInt(x.Pipe), largestInt(x.List))
		if x.ElseList != nil {
			most = max(most, largestInt(x.ElseList))
		}
	case *parse.PipeNode:
		if x != nil {
			for _, c := range x.Cmds {
				for _, a := range c.Args {
					most = max(most, largestInt(a))
				}
			}
		}
	case *parse.ChainNode:
		most = largestInt(x.Node)
	}
	return most
}

// responseNode is {{ .Response }}.
func responseNode() parse.Node {
	return &parse.ActionNode{NodeType: parse.NodeAction, Pipe: &parse.PipeNode{NodeType: parse.NodePipe,
		Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Args: []parse.Node{&parse.FieldNode{NodeType: parse.NodeField, Ident: []string{"Response"}}}}}}}
}

// identifiers adds the field and variable names n uses, lower-cased.
func identifiers(n parse.Node, into map[string]bool) {
	switch x := n.(type) {
	case *parse.ListNode:
		if x != nil {
			for _, c := range x.Nodes {
				identifiers(c, into)
			}
		}
	case *parse.ActionNode:
		identifiers(x.Pipe, into)
	case *parse.TemplateNode:
		if x.Pipe != nil {
			identifiers(x.Pipe, into)
		}
	case *parse.IfNode:
		identifiers(&x.BranchNode, into)
	case *parse.RangeNode:
		identifiers(&x.BranchNode, into)
	case *parse.WithNode:
		identifiers(&x.BranchNode, into)
	case *parse.BranchNode:
		identifiers(x.Pipe, into)
		identifiers(x.List, into)
		if x.ElseList != nil {
			identifiers(x.ElseList, into)
		}
	case *parse.PipeNode:
		if x == nil {
			return
		}
		for _, c := range x.Cmds {
			for _, a := range c.Args {
				identifiers(a, into)
			}
		}
	case *parse.ChainNode:
		identifiers(x.Node, into)
		for _, f := range x.Field {
			into[strings.ToLower(f)] = true
		}
	case *parse.FieldNode:
		for _, f := range x.Ident {
			into[strings.ToLower(f)] = true
		}
	case *parse.VariableNode:
		for _, f := range x.Ident {
			into[strings.ToLower(f)] = true
		}
	}
}

// toolFormat is how a model prompted by this template writes tool calls:
// the format its template describes when it renders .Tools, else the
// generic one (the tools described in the system prompt). A one-turn
// template (no .Messages) is rendered without .Tools, tool calls or tool
// results, as Ollama renders it, so it gets the generic format even where
// it reads .Tools: with its own format the tools were never described
// and a chat's calls and results were dropped from the prompt.
func (g *goTemplate) toolFormat() toolcall.Format {
	if !g.tools || !g.messages {
		return toolcall.Generic{}
	}
	return toolcall.Detect(g.src)
}

// Prompt implements chat.Renderer: conv rendered by Ollama's rules. The
// generation prompt is the template's own (Ollama templates always end
// with the assistant's turn open), so AddGenerationPrompt is not read.
// A rendering that fails (the template's own error, or its bounds) is a
// *goTemplateError: the template refuses this conversation.
func (g *goTemplate) Prompt(ctx context.Context, conv chat.Conversation) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	prompt, err := g.render(conv)
	if err != nil {
		return "", &goTemplateError{err: err}
	}
	return prompt, nil
}

// goTemplateError is why a Go TEMPLATE could not render a conversation:
// an error of the template's own (an index out of range, a field of a
// text), or a bound of its work or output that this chat passes. It is
// the request's (a 400), as a chat template's error is.
type goTemplateError struct{ err error }

func (e *goTemplateError) Error() string { return e.err.Error() }

func (e *goTemplateError) Unwrap() error { return e.err }

// render is Prompt's rendering of conv.
func (g *goTemplate) render(conv chat.Conversation) (string, error) {
	system, msgs, err := collate(conv.Messages)
	if err != nil {
		return "", &goTemplateError{err}
	}
	tmpl, out, err := g.instance()
	if err != nil {
		return "", err
	}
	if g.messages {
		data := templateData{System: system, Messages: msgs}
		if g.think != nil {
			data.Think, data.IsThinkSet = *g.think, true
		}
		for _, raw := range conv.Tools {
			t, err := newTemplateTool(raw)
			if err != nil {
				return "", err
			}
			data.Tools = append(data.Tools, t)
		}
		if n := g.steps(data.sizes()); n > maxRenderSteps {
			return "", fmt.Errorf("the template would run more than %d steps over this chat of %d messages", maxRenderSteps, len(msgs))
		}
		if err := tmpl.Execute(out, data); err != nil {
			return "", err
		}
		return out.String(), nil
	}
	// One rendering per exchange, as Ollama renders one-turn templates.
	turn := templateData{}
	turns, longest := 1, 0
	for _, m := range msgs {
		if m.Role == "user" || m.Role == "system" {
			turns++
		}
		longest = max(longest, len(m.Content))
	}
	if n := g.steps(listSizes{any: longest}); n > maxRenderSteps/turns {
		return "", fmt.Errorf("the template would run more than %d steps over this chat of %d messages", maxRenderSteps, len(msgs))
	}
	if g.think != nil {
		turn.Think, turn.IsThinkSet = *g.think, true
	}
	flush := func() error {
		err := tmpl.Execute(out, turn)
		turn = templateData{Think: turn.Think, IsThinkSet: turn.IsThinkSet}
		return err
	}
	for _, m := range msgs {
		switch m.Role {
		case "system":
			if turn.Prompt != "" || turn.Response != "" {
				if err := flush(); err != nil {
					return "", err
				}
			}
			turn.System = m.Content
		case "user":
			if turn.Response != "" {
				if err := flush(); err != nil {
					return "", err
				}
			}
			turn.Prompt = m.Content
		case "assistant":
			turn.Response = m.Content
		}
	}
	last, err := untilResponse(tmpl)
	if err != nil {
		return "", err
	}
	if err := last.Execute(out, turn); err != nil {
		return "", err
	}
	return out.String(), nil
}

// applyThinking takes a request's thinking choice for this template, as
// Ollama does: it reaches the template as .Think and .IsThinkSet, and for a
// template that marks the reasoning with <think> and </think> the reply's
// reasoning is split from its content. A template that does not read
// .Think cannot turn thinking on.
func (g *goTemplate) applyThinking(ts *thinkingSpec) (*thinkingState, error) {
	for k, v := range ts.vars {
		on, isBool := v.(bool)
		if (k != "enable_thinking" && k != "thinking") || !isBool {
			return nil, badParam("chat_template_kwargs."+k, "a model with its own TEMPLATE takes only enable_thinking (true or false) here: its template reads .Think")
		}
		if ts.want == nil {
			ts.want, ts.param = &on, "chat_template_kwargs."+k
		}
	}
	if !g.thinks {
		if ts.want != nil && *ts.want {
			return nil, badParam(ts.param, "asks for thinking, but this model's TEMPLATE does not think (it reads no .Think)")
		}
		return nil, nil
	}
	g.think = ts.want
	r := &chat.Reasoning{Open: "<think>", Close: "</think>"}
	if !strings.Contains(g.src, r.Open) || !strings.Contains(g.src, r.Close) {
		return nil, nil // no block to split: the reply is all content
	}
	probe, err := g.Prompt(context.Background(), chat.Conversation{Messages: []chat.Message{{Role: chat.RoleUser, Content: "Hello"}}, AddGenerationPrompt: true})
	if err != nil {
		return nil, badParam("model", "its template failed: %v", err)
	}
	open := strings.HasSuffix(strings.TrimRight(probe, " \t\r\n"), r.Open)
	return &thinkingState{r: r, startsOpen: open, raw: ts.raw, off: g.think != nil && !*g.think}, nil
}

// fillInTheMiddle renders a fill-in-the-middle request with a template
// that reads .Suffix, as Ollama does for /api/generate's suffix: one
// rendering with .Prompt (the text before the insertion point) and
// .Suffix (the text after it); ok is false for a template without such
// a branch.
func (g *goTemplate) fillInTheMiddle(prompt, suffix string) (text string, ok bool, err error) {
	if !g.suffix {
		return "", false, nil
	}
	if n := g.steps(listSizes{any: max(len(prompt), len(suffix))}); n > maxRenderSteps {
		return "", true, &goTemplateError{fmt.Errorf("the template would run more than %d steps", maxRenderSteps)}
	}
	tmpl, out, err := g.instance()
	if err != nil {
		return "", true, err
	}
	if err := tmpl.Execute(out, templateData{Prompt: prompt, Suffix: suffix}); err != nil {
		return "", true, &goTemplateError{err}
	}
	return out.String(), true, nil
}

// untilResponse cuts tmpl (a rendering's own copy) after its first
// .Response: the last exchange's rendering ends where the model's reply
// begins.
func untilResponse(tmpl *template.Template) (*template.Template, error) {
	root := tmpl.Tree.Root.CopyList()
	cutAfterResponse(root, new(bool))
	return tmpl.AddParseTree("prompt", &parse.Tree{Name: "prompt", Root: root})
}

// cutAfterResponse removes from n, in place, every node that comes after
// the first one reading .Response (cut is set once it is found).
func cutAfterResponse(n parse.Node, cut *bool) (keep bool) {
	if *cut {
		return false
	}
	switch x := n.(type) {
	case *parse.ListNode:
		if x == nil {
			return true
		}
		kept := x.Nodes[:0]
		for _, c := range x.Nodes {
			if cutAfterResponse(c, cut) {
				kept = append(kept, c)
			}
		}
		x.Nodes = kept
	case *parse.ActionNode:
		*cut = readsResponse(x.Pipe)
	case *parse.IfNode:
		cutBranch(&x.BranchNode, cut)
	case *parse.RangeNode:
		cutBranch(&x.BranchNode, cut)
	case *parse.WithNode:
		cutBranch(&x.BranchNode, cut)
	}
	return true
}

func cutBranch(b *parse.BranchNode, cut *bool) {
	cutAfterResponse(b.List, cut)
	if b.ElseList != nil {
		cutAfterResponse(b.ElseList, cut)
	}
}

// readsResponse reports whether p reads .Response.
func readsResponse(p *parse.PipeNode) bool {
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			if f, ok := a.(*parse.FieldNode); ok && slices.Contains(f.Ident, "Response") {
				return true
			}
		}
	}
	return false
}

// collate is the chat as Ollama's templates see it: the system messages'
// text joined, and consecutive messages of one role (but tool results)
// merged into one.
func collate(in []chat.Message) (string, []templateMessage, error) {
	var system []string
	var out []templateMessage
	for i, m := range in {
		if m.Role == chat.RoleSystem {
			system = append(system, m.Content)
		}
		first := 0
		n := len(out)
		merge := n > 0 && out[n-1].Role == m.Role && m.Role != "tool"
		if merge {
			first = len(out[n-1].ToolCalls)
		}
		calls, err := templateCalls(m.ToolCalls, first)
		if err != nil {
			return "", nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		if merge {
			out[n-1].Content += "\n\n" + m.Content
			out[n-1].ToolCalls = append(out[n-1].ToolCalls, calls...)
			continue
		}
		out = append(out, templateMessage{Role: m.Role, Content: m.Content, Thinking: m.ReasoningContent,
			ToolName: m.Name, ToolCallID: m.ToolCallID, ToolCalls: calls})
	}
	return strings.Join(system, "\n\n"), out, nil
}

// templateData is what an Ollama template renders (Ollama's names).
type templateData struct {
	System, Prompt, Response string
	Messages                 []templateMessage
	Tools                    templateTools
	Think, IsThinkSet        bool
	// Suffix, Query, Document and Instruction are Ollama's names for
	// other uses of a template (fill in the middle, embedding and
	// reranking models' templates): always empty here, so that a chat
	// reaches such a template's chat branch.
	Suffix, Query, Document, Instruction string
}

// templateMessage is one message of .Messages.
type templateMessage struct {
	Role, Content, Thinking string
	// ToolName is the tool a "tool" message answers, ToolCallID its call.
	ToolName, ToolCallID string
	ToolCalls            []templateCall
	Images               []string
}

// templateCall is one of an assistant message's .ToolCalls.
type templateCall struct {
	ID       string
	Function templateCallFunction
}

// templateCallFunction is a call's function: its index in the message,
// name and arguments.
type templateCallFunction struct {
	Index     int
	Name      string
	Arguments jsonObject
}

// templateTool is one of .Tools.
type templateTool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

// String is the tool as JSON, what Ollama templates print with {{ . }}.
func (t templateTool) String() string { return jsonText(t) }

// templateTools is .Tools. Mistral's templates print the list whole
// ([AVAILABLE_TOOLS] {{ $.Tools }}), which Ollama writes as a JSON array;
// a plain slice would print as Go does, space-separated in brackets.
type templateTools []templateTool

// String is the tools as a JSON array ({{ .Tools }}).
func (ts templateTools) String() string { return jsonText([]templateTool(ts)) }

// toolFunction is a tool's function.
type toolFunction struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Parameters  toolSchema `json:"parameters"`
	// params are the parameters as the client wrote them, which the
	// function's JSON keeps (their keys in the client's order, as Hugging
	// Face templates print them, not sorted).
	params json.RawMessage
}

// String is the function as JSON ({{ .Function }}).
func (f toolFunction) String() string { return jsonText(f) }

// MarshalJSON writes the function with its parameters as the client
// wrote them.
func (f toolFunction) MarshalJSON() ([]byte, error) {
	params := f.params
	if len(params) == 0 {
		var err error
		if params, err = json.Marshal(f.Parameters); err != nil {
			return nil, err
		}
	}
	return json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}{f.Name, f.Description, params})
}

// toolSchema is a JSON Schema object of a tool's parameters, every object
// in it one too (schemaValue). A template reads it by key
// (.Function.Parameters.properties) or by the names of Ollama's struct
// (.Properties, .Required, .Type, with each property's .Type,
// .Description and .Enum, as Command R's template writes them), and
// prints it as JSON. The methods are found before the keys and cost no
// more than a key's lookup.
type toolSchema map[string]any

// String is the schema as JSON ({{ .Function.Parameters }}).
func (s toolSchema) String() string { return jsonText(map[string]any(s)) }

// Type is the "type": a name, or names as Ollama prints several ([a b]).
func (s toolSchema) Type() string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		if len(t) == 1 {
			return fmt.Sprint(t[0])
		}
		return fmt.Sprint(t)
	}
	return ""
}

// Properties is the "properties" object, each property a toolSchema.
func (s toolSchema) Properties() toolSchema { p, _ := s["properties"].(toolSchema); return p }

// Required is the "required" list.
func (s toolSchema) Required() []any { r, _ := s["required"].([]any); return r }

// Description is the "description".
func (s toolSchema) Description() string { d, _ := s["description"].(string); return d }

// Enum is the "enum" list.
func (s toolSchema) Enum() []any { e, _ := s["enum"].([]any); return e }

// Items is the "items" schema of an array.
func (s toolSchema) Items() any { return s["items"] }

// schemaValue is v, a decoded JSON value, with each object in it made a
// toolSchema, once, so that reading one costs a lookup.
func schemaValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(toolSchema, len(x))
		for k, e := range x {
			out[k] = schemaValue(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = schemaValue(e)
		}
	}
	return v
}

// jsonObject is a JSON object a template reads by key (.Properties) and
// prints as JSON.
type jsonObject map[string]any

// String is the object as JSON ({{ .Function.Arguments }}).
func (o jsonObject) String() string { return jsonText(map[string]any(o)) }

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// templateCalls converts an assistant turn's calls, numbering them from
// first.
// Arguments that are not a JSON object (OpenAI's string holding broken
// JSON, say) are an error, as Ollama refuses them: a template reads them
// as an object, and they were rendered as none.
func templateCalls(calls []chat.ToolCall, first int) ([]templateCall, error) {
	var out []templateCall
	for i, c := range calls {
		args := jsonObject{}
		raw := bytes.TrimSpace(c.Function.Arguments)
		var s string
		if json.Unmarshal(raw, &s) == nil { // OpenAI's arguments string
			raw = bytes.TrimSpace([]byte(s))
		}
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil || args == nil {
				return nil, fmt.Errorf("tool_calls[%d] (%s): the arguments are not a JSON object: %.40q", i, c.Function.Name, raw)
			}
		}
		out = append(out, templateCall{ID: c.ID, Function: templateCallFunction{Index: first + i, Name: c.Function.Name, Arguments: args}})
	}
	return out, nil
}

// newTemplateTool reads an OpenAI-style tool definition.
func newTemplateTool(raw json.RawMessage) (templateTool, error) {
	var t struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return templateTool{}, fmt.Errorf("tool definition: %w", err)
	}
	var kept struct {
		Function struct {
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	json.Unmarshal(raw, &kept)
	if t.Type == "" {
		t.Type = "function"
	}
	params, _ := schemaValue(t.Function.Parameters).(toolSchema)
	if t.Function.Parameters == nil {
		params = nil
	}
	fn := toolFunction{Name: t.Function.Name, Description: t.Function.Description, Parameters: params}
	if params != nil {
		fn.params = kept.Function.Parameters
	}
	return templateTool{Type: t.Type, Function: fn}, nil
}

// listSizes are the longest lists of each kind a template may range over.
type listSizes struct {
	messages, tools, toolCalls, other, any int
}

// sizes measures d's lists for costTree.steps.
func (d templateData) sizes() listSizes {
	s := listSizes{messages: len(d.Messages), tools: len(d.Tools)}
	var longest func(v any)
	longest = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			s.other = max(s.other, len(x))
			for _, e := range x {
				longest(e)
			}
		case jsonObject:
			longest(map[string]any(x))
		case toolSchema:
			longest(map[string]any(x))
		case []any:
			s.other = max(s.other, len(x))
			for _, e := range x {
				longest(e)
			}
		case string:
			s.any = max(s.any, len(x)) // len of a string ranges too
		}
	}
	for _, m := range d.Messages {
		s.toolCalls = max(s.toolCalls, len(m.ToolCalls))
		s.any = max(s.any, len(m.Content), len(m.Thinking))
		for _, c := range m.ToolCalls {
			longest(c.Function.Arguments)
		}
	}
	for _, t := range d.Tools {
		longest(t.Function.Parameters)
	}
	s.other = max(s.other, s.toolCalls) // a call's .Function.Index
	s.any = max(s.any, s.messages, s.tools, s.other, len(d.System))
	return s
}

// costTree is the nodes a template executes: base once, each sub-tree
// (a call of a named template, a branch) once, and each loop's body once
// per element of the list it ranges over. Named templates are shared
// between the trees that call them.
type costTree struct {
	base  int
	subs  []*costTree
	loops []costLoop
}

type costLoop struct {
	kind listKind
	body *costTree
}

// listKind is what a range ranges over.
type listKind int

const (
	listMessages listKind = iota
	listTools
	listToolCalls
	listOther // a field of a tool or call: properties, enums, arguments
	listAny   // anything else: any list, or an integer up to a text's length
)

// steps is the nodes t executes over lists of sizes s, saturating past
// maxRenderSteps.
func (t *costTree) steps(s listSizes) int {
	return t.count(s, map[*costTree]int{})
}

func (t *costTree) count(s listSizes, memo map[*costTree]int) int {
	if n, ok := memo[t]; ok {
		return n
	}
	const over = maxRenderSteps + 1
	n := min(t.base, over)
	for _, sub := range t.subs {
		n = min(n+sub.count(s, memo), over)
	}
	for _, l := range t.loops {
		size := [...]int{s.messages, s.tools, s.toolCalls, s.other, s.any}[l.kind]
		body := l.body.count(s, memo)
		if size > 0 && body > over/size {
			n = over
			break
		}
		n = min(n+size*body, over)
	}
	memo[t] = n
	return n
}

// costBuilder builds the cost trees of a parsed template's templates.
type costBuilder struct {
	t      *template.Template
	done   map[string]*costTree // named templates whose cost is known
	active map[string]bool      // named templates being walked (recursion)
}

// named is the cost of the template called name.
func (c *costBuilder) named(name string) (*costTree, error) {
	if c.active[name] {
		return nil, fmt.Errorf("%q calls itself, which is not allowed", name)
	}
	if k, ok := c.done[name]; ok {
		return k, nil
	}
	tt := c.t.Lookup(name)
	k := &costTree{}
	if tt != nil && tt.Tree != nil {
		c.active[name] = true
		var err error
		k, err = c.node(tt.Tree.Root)
		delete(c.active, name)
		if err != nil {
			return nil, err
		}
	}
	c.done[name] = k
	return k, nil
}

// node is the cost of n.
func (c *costBuilder) node(n parse.Node) (*costTree, error) {
	k := &costTree{base: 1}
	var lists []*parse.ListNode
	switch x := n.(type) {
	case *parse.ListNode:
		if x != nil {
			for _, sub := range x.Nodes {
				sk, err := c.node(sub)
				if err != nil {
					return nil, err
				}
				k.subs = append(k.subs, sk)
			}
		}
	case *parse.RangeNode:
		kind, err := rangeKind(x.Pipe)
		if err != nil {
			return nil, err
		}
		body, err := c.node(x.List)
		if err != nil {
			return nil, err
		}
		k.loops = append(k.loops, costLoop{kind: kind, body: body})
		lists = []*parse.ListNode{x.ElseList}
	case *parse.IfNode:
		lists = []*parse.ListNode{x.List, x.ElseList}
	case *parse.WithNode:
		lists = []*parse.ListNode{x.List, x.ElseList}
	case *parse.TemplateNode:
		sk, err := c.named(x.Name)
		if err != nil {
			return nil, err
		}
		k.subs = append(k.subs, sk)
	}
	for _, l := range lists {
		if l == nil {
			continue
		}
		sk, err := c.node(l)
		if err != nil {
			return nil, err
		}
		k.subs = append(k.subs, sk)
	}
	return k, nil
}

// rangeKind is what a range's pipeline ranges over, by the name of the
// field it reads: .Messages, .Tools, .ToolCalls, another field, or, for a
// variable or a function's result, anything.
func rangeKind(p *parse.PipeNode) (listKind, error) {
	if len(p.Cmds) != 1 {
		return listAny, nil
	}
	args := p.Cmds[0].Args
	if id, ok := args[0].(*parse.IdentifierNode); ok && id.Ident == "slice" && len(args) > 1 {
		args = args[1:] // a slice of a list is no longer than the list
	} else if len(args) != 1 {
		return listAny, nil
	}
	var fields []string
	switch a := args[0].(type) {
	case *parse.NumberNode:
		return 0, fmt.Errorf("range over a number is not allowed")
	case *parse.FieldNode:
		fields = a.Ident
	case *parse.VariableNode:
		fields = a.Ident[1:]
	case *parse.ChainNode:
		fields = a.Field
	}
	if len(fields) == 0 {
		return listAny, nil
	}
	switch fields[len(fields)-1] {
	case "Messages":
		return listMessages, nil
	case "Tools":
		return listTools, nil
	case "ToolCalls":
		return listToolCalls, nil
	}
	return listOther, nil
}

// limitedBuilder is a strings.Builder that refuses to grow past max.
type limitedBuilder struct {
	strings.Builder
	max int
}

func (b *limitedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, fmt.Errorf("the rendered prompt exceeds %d bytes", b.max)
	}
	return b.Builder.Write(p)
}

// manifestTemplate sets req's renderer to a created model's TEMPLATE, when
// it has one.
func manifestTemplate(man *ipc.ModelManifest) (*goTemplate, error) {
	if man == nil || man.Template == "" {
		return nil, nil
	}
	t, err := parseGoTemplate(man.Template)
	if err != nil {
		return nil, badParam("model", "its template does not parse: %v", err)
	}
	return t, nil
}
