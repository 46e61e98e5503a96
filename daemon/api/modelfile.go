package api

import (
	"bufio"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/ruvllm/ruvllm/ipc"
)

// MaxModelfileBytes bounds a Modelfile, and MaxTemplateBytes a prompt
// template's source and each of its renderings.
const (
	MaxModelfileBytes = 256 << 10
	MaxTemplateBytes  = 256 << 10
)

// parseModelfile reads Ollama's Modelfile format into the fields of a
// create request: FROM, ADAPTER, SYSTEM, TEMPLATE, PARAMETER (repeatable;
// stop accumulates), MESSAGE and LICENSE, case-insensitive, with values on
// one line or between triple quotes. An unknown command is an error naming
// its line.
func parseModelfile(text string) (ipc.CreateRequest, []string, error) {
	var req ipc.CreateRequest
	var adapters []string
	if len(text) > MaxModelfileBytes {
		return req, nil, fmt.Errorf("the Modelfile is %d bytes; at most %d are allowed", len(text), MaxModelfileBytes)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), MaxModelfileBytes+1)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	for {
		raw, ok := next()
		if !ok {
			break
		}
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		cmd, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		start := line
		// MESSAGE's value follows its role: MESSAGE user """...""".
		var role string
		if strings.EqualFold(cmd, "MESSAGE") {
			r, content, ok := strings.Cut(rest, " ")
			if !ok {
				return req, nil, fmt.Errorf("line %d: MESSAGE wants a role and a text", start)
			}
			role, rest = r, strings.TrimSpace(content)
		}
		// A value may span lines between triple quotes.
		if strings.HasPrefix(rest, `"""`) {
			body := strings.TrimPrefix(rest, `"""`)
			for !strings.Contains(body, `"""`) {
				more, ok := next()
				if !ok {
					return req, nil, fmt.Errorf("line %d: %s: the \"\"\" is never closed", start, cmd)
				}
				body += "\n" + more
			}
			value, after, _ := strings.Cut(body, `"""`)
			if strings.TrimSpace(after) != "" {
				return req, nil, fmt.Errorf("line %d: text after the closing \"\"\"", line)
			}
			rest = value
		} else if len(rest) >= 2 && rest[0] == '"' && rest[len(rest)-1] == '"' && cmd != "PARAMETER" {
			if v, err := strconv.Unquote(rest); err == nil {
				rest = v
			}
		}
		switch strings.ToUpper(cmd) {
		case "FROM":
			req.From = rest
		case "ADAPTER":
			adapters = append(adapters, rest)
		case "SYSTEM":
			req.System = rest
		case "TEMPLATE":
			req.Template = rest
		case "LICENSE":
			req.License = appendLicense(req.License, rest)
		case "MESSAGE":
			req.Messages = append(req.Messages, ipc.Message{Role: strings.ToLower(role), Content: rest})
		case "PARAMETER":
			key, value, ok := strings.Cut(rest, " ")
			if !ok {
				return req, nil, fmt.Errorf("line %d: PARAMETER wants a name and a value", start)
			}
			if req.Parameters == nil {
				req.Parameters = map[string]any{}
			}
			if err := setParameter(req.Parameters, strings.ToLower(key), strings.TrimSpace(value)); err != nil {
				return req, nil, fmt.Errorf("line %d: %w", start, err)
			}
		default:
			return req, nil, fmt.Errorf("line %d: unknown Modelfile command %q (FROM, ADAPTER, SYSTEM, TEMPLATE, PARAMETER, MESSAGE, LICENSE)", start, cmd)
		}
	}
	if err := sc.Err(); err != nil {
		return req, nil, fmt.Errorf("read Modelfile: %w", err)
	}
	if req.From == "" {
		return req, nil, fmt.Errorf("the Modelfile has no FROM line")
	}
	return req, adapters, nil
}

func appendLicense(l any, s string) any {
	switch v := l.(type) {
	case nil:
		return []string{s}
	case []string:
		return append(v, s)
	}
	return l
}

// parameterKinds are the parameters a created model may set, with their
// JSON kinds: the options this daemon honours (see ollamaRequest).
var parameterKinds = map[string]string{
	"temperature": "number", "top_k": "int", "top_p": "number", "min_p": "number", "typical_p": "number",
	"repeat_penalty": "number", "repeat_last_n": "int", "presence_penalty": "number", "frequency_penalty": "number",
	"seed": "int", "num_predict": "int", "num_ctx": "int", "stop": "strings",
}

// setParameter parses a Modelfile PARAMETER value into params.
func setParameter(params map[string]any, key, value string) error {
	kind, ok := parameterKinds[key]
	if !ok {
		return fmt.Errorf("parameter %q is not supported (supported: temperature, top_k, top_p, min_p, typical_p, repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, seed, num_predict, num_ctx, stop)", key)
	}
	switch kind {
	case "number":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("parameter %s: %q is not a finite number", key, value)
		}
		params[key] = f
	case "int":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("parameter %s: %q is not an integer", key, value)
		}
		params[key] = n
	case "strings":
		if v, err := strconv.Unquote(value); err == nil {
			value = v
		}
		prev, _ := params[key].([]string)
		params[key] = append(prev, value)
	}
	return nil
}

// checkParameters refuses parameter names this daemon does not honour,
// and values of the wrong kind, naming them.
func checkParameters(params map[string]any) error {
	for k, v := range params {
		kind, ok := parameterKinds[k]
		if !ok {
			return badParam("parameters."+k, "is not supported (supported: temperature, top_k, top_p, min_p, typical_p, repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, seed, num_predict, num_ctx, stop)")
		}
		switch kind {
		case "number", "int":
			switch v.(type) {
			case float64, int64, int:
			default:
				return badParam("parameters."+k, "must be a number")
			}
		case "strings":
			switch x := v.(type) {
			case []string:
			case []any:
				for _, e := range x {
					if _, ok := e.(string); !ok {
						return badParam("parameters."+k, "must be a list of strings")
					}
				}
			case string:
			default:
				return badParam("parameters."+k, "must be a list of strings")
			}
		}
	}
	return nil
}

// maxTemplateSteps bounds the nodes a prompt template executes: in all
// (what runs once) and for each message (the body of its range).
const maxTemplateSteps = 1 << 20

// parsePromptTemplate parses an Ollama prompt template (Go text/template
// over .System, .Prompt, .Response, .Messages), refusing what could run
// unbounded. The output bound does not stop a template that loops while
// writing nothing, and execution cannot be cancelled, so the work is
// bounded before it runs: no range over a number, no range inside a
// range, no template that calls itself, and at most maxTemplateSteps nodes
// once and per message, counting {{template}} calls at their callee's cost.
// (Four nested ranges over 200 messages rendered for 30 s and went on
// after the client had gone; templates calling the next one twice, 40
// deep, would run 2^40 nodes.)
func parsePromptTemplate(src string) (*template.Template, error) {
	if len(src) > MaxTemplateBytes {
		return nil, fmt.Errorf("the template is %d bytes; at most %d are allowed", len(src), MaxTemplateBytes)
	}
	t, err := template.New("prompt").Option("missingkey=zero").Parse(src)
	if err != nil {
		return nil, err
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		c := templateCost{t: t, done: map[string]stepCost{}, active: map[string]bool{}}
		if _, err := c.named(tt.Name(), false); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// stepCost is the nodes a template executes: once, and per message.
type stepCost struct{ once, perMessage int }

func (a stepCost) add(b stepCost) stepCost {
	return stepCost{min(a.once+b.once, maxTemplateSteps+1), min(a.perMessage+b.perMessage, maxTemplateSteps+1)}
}

// templateCost bounds the work of a parsed template's templates.
type templateCost struct {
	t      *template.Template
	done   map[string]stepCost // named templates whose cost is known
	active map[string]bool     // named templates being walked (recursion)
}

// named is the cost of the template called name.
func (c *templateCost) named(name string, inRange bool) (stepCost, error) {
	if c.active[name] {
		return stepCost{}, fmt.Errorf("template %q calls itself, which is not allowed", name)
	}
	if k, ok := c.done[name]; ok {
		if inRange && k.perMessage > 0 {
			return k, fmt.Errorf("a range inside a range is not allowed (through template %q)", name)
		}
		return k, nil
	}
	tt := c.t.Lookup(name)
	if tt == nil || tt.Tree == nil {
		return stepCost{}, nil // executing it fails, at once
	}
	c.active[name] = true
	k, err := c.node(tt.Tree.Root, inRange)
	delete(c.active, name)
	if err != nil {
		return k, err
	}
	c.done[name] = k
	return k, nil
}

// node is the cost of n, inside a range's body when inRange.
func (c *templateCost) node(n parse.Node, inRange bool) (stepCost, error) {
	k := stepCost{once: 1}
	var lists []*parse.ListNode
	switch x := n.(type) {
	case *parse.ListNode:
		if x != nil {
			for _, sub := range x.Nodes {
				sk, err := c.node(sub, inRange)
				if err != nil {
					return k, err
				}
				k = k.add(sk)
			}
		}
	case *parse.RangeNode:
		for _, cmd := range x.Pipe.Cmds {
			for _, arg := range cmd.Args {
				if _, isNum := arg.(*parse.NumberNode); isNum {
					return k, fmt.Errorf("range over a number is not allowed")
				}
			}
		}
		if inRange {
			return k, fmt.Errorf("a range inside a range is not allowed")
		}
		body, err := c.node(x.List, true)
		if err != nil {
			return k, err
		}
		k.perMessage = body.once
		lists = []*parse.ListNode{x.ElseList}
	case *parse.IfNode:
		lists = []*parse.ListNode{x.List, x.ElseList}
	case *parse.WithNode:
		lists = []*parse.ListNode{x.List, x.ElseList}
	case *parse.TemplateNode:
		sk, err := c.named(x.Name, inRange)
		if err != nil {
			return k, err
		}
		k = k.add(sk)
	}
	for _, l := range lists {
		if l == nil {
			continue
		}
		sk, err := c.node(l, inRange)
		if err != nil {
			return k, err
		}
		k = k.add(sk)
	}
	if k.once > maxTemplateSteps || k.perMessage > maxTemplateSteps {
		return k, fmt.Errorf("the template runs more than %d steps", maxTemplateSteps)
	}
	return k, nil
}

// templateMessage is one message as an Ollama template sees it.
type templateMessage struct {
	Role, Content string
}

// renderPromptTemplate renders t for a system prompt and chat messages:
// .Messages holds every turn, .System the system prompt, .Prompt the last
// user message and .Response "" (the model writes it).
func renderPromptTemplate(t *template.Template, system string, msgs []templateMessage) (renderedPrompt, error) {
	text, err := executePromptTemplate(t, system, msgs)
	if err != nil {
		return renderedPrompt{}, err
	}
	return renderedPrompt{Text: text, Client: clientSpans(t, text, system, msgs)}, nil
}

// renderedPrompt is a prompt a Go template rendered, with the byte ranges
// of it that are the client's text (llm.Request.ClientSpans).
type renderedPrompt struct {
	Text   string
	Client [][2]int
}

// executePromptTemplate runs t over the system prompt and messages.
func executePromptTemplate(t *template.Template, system string, msgs []templateMessage) (string, error) {
	data := struct {
		System, Prompt, Response string
		Messages                 []templateMessage
	}{System: system, Messages: msgs}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			data.Prompt = msgs[i].Content
			break
		}
	}
	var out limitedBuilder
	out.max = MaxTemplateBytes
	if err := t.Execute(&out, data); err != nil {
		return "", err
	}
	return out.String(), nil
}

// clientSpans finds where text holds the client's texts (the system
// prompt and the messages' content), so that the model reads the control
// tokens they spell ("<|im_end|>") as plain text, not as turns of their
// own. t is rendered again with a placeholder for each non-empty text:
// where putting the texts back into that rendering gives text exactly, the
// template wrote them as they are, and their places are known; where it
// does not (a template that changes or tests them), nil.
func clientSpans(t *template.Template, text, system string, msgs []templateMessage) [][2]int {
	const mark = "\ue000ruvllm-client-"
	placeholder := func(i int) string { return mark + strconv.Itoa(i) + "\ue000" }
	texts := []string{system}
	marked := make([]templateMessage, len(msgs))
	for i, m := range msgs {
		texts = append(texts, m.Content)
		marked[i] = m
		if m.Content != "" {
			marked[i].Content = placeholder(i + 1)
		}
	}
	sys := ""
	if system != "" {
		sys = placeholder(0)
	}
	if strings.Contains(text, mark) {
		return nil // the client wrote the mark itself
	}
	skeleton, err := executePromptTemplate(t, sys, marked)
	if err != nil {
		return nil
	}
	var b strings.Builder
	var spans [][2]int
	for {
		i := strings.Index(skeleton, mark)
		if i < 0 {
			b.WriteString(skeleton)
			break
		}
		b.WriteString(skeleton[:i])
		rest := skeleton[i+len(mark):]
		end := strings.Index(rest, "\ue000")
		n, err := strconv.Atoi(rest[:max(end, 0)])
		if end < 0 || err != nil || n < 0 || n >= len(texts) {
			return nil
		}
		start := b.Len()
		b.WriteString(texts[n])
		spans = append(spans, [2]int{start, b.Len()})
		skeleton = rest[end+len("\ue000"):]
	}
	if b.String() != text {
		return nil
	}
	return spans
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

// formatModelfile writes a manifest back as a Modelfile (/api/show).
func formatModelfile(m *ipc.ModelManifest, base string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Modelfile generated by ruvllm\nFROM %s\n", base)
	if m == nil {
		return b.String()
	}
	for _, a := range m.Adapters {
		fmt.Fprintf(&b, "ADAPTER %s\n", a.Name)
	}
	if m.Template != "" {
		fmt.Fprintf(&b, "TEMPLATE %s\n", modelfileText(m.Template))
	}
	if m.System != "" {
		fmt.Fprintf(&b, "SYSTEM %s\n", modelfileText(m.System))
	}
	b.WriteString(formatParameters(m.Parameters))
	for _, msg := range m.Messages {
		fmt.Fprintf(&b, "MESSAGE %s %s\n", msg.Role, modelfileValue(msg.Content))
	}
	for _, l := range m.License {
		fmt.Fprintf(&b, "LICENSE %s\n", modelfileText(l))
	}
	return b.String()
}

// modelfileValue quotes a value that spans lines (or has edge spaces) in
// triple quotes, as Ollama writes it, so the Modelfile reads back: a bare
// multi-line value's later lines would be read as commands. A value triple
// quotes cannot hold is written as modelfileText writes it.
func modelfileValue(s string) string {
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	if strings.Contains(s, "\n") || strings.TrimSpace(s) != s {
		return `"""` + s + `"""`
	}
	return s
}

// modelfileText writes a SYSTEM, TEMPLATE or LICENSE text in triple
// quotes, or, when they cannot hold it, as one double-quoted line with Go
// escapes, which parseModelfile unquotes: triple quotes end at the first
// """ in the text, and a text that ends with a quote closes them early
// (both read back as "text after the closing """", and the model could not
// be created again from its own Modelfile).
func modelfileText(s string) string {
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	return `"""` + s + `"""`
}

// needsQuote reports whether s must be written double-quoted with escapes
// to read back as itself: empty (a bare empty value is no value), holding
// """, or starting or ending with a quote (which merges with the quotes
// around it, or is taken for them).
func needsQuote(s string) bool {
	return s == "" || strings.Contains(s, `"""`) || strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`)
}

// formatParameters writes parameters as PARAMETER lines, sorted by name.
func formatParameters(params map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch v := params[k].(type) {
		case []string:
			for _, s := range v {
				fmt.Fprintf(&b, "PARAMETER %s %q\n", k, s)
			}
		case []any:
			for _, s := range v {
				fmt.Fprintf(&b, "PARAMETER %s %q\n", k, fmt.Sprint(s))
			}
		case float64:
			// Not %v: it writes 1e+06 for a million, which an integer
			// parameter (seed, num_ctx, ...) does not read back.
			fmt.Fprintf(&b, "PARAMETER %s %s\n", k, strconv.FormatFloat(v, 'f', -1, 64))
		default:
			fmt.Fprintf(&b, "PARAMETER %s %v\n", k, v)
		}
	}
	return b.String()
}
