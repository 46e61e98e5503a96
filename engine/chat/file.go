package chat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/jinja"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// ErrTools means tools or tool messages were given to a built-in
// template, which has no format for them.
var ErrTools = errors.New("the built-in chat templates cannot render tools")

// GGUF metadata keys of chat templates.
const (
	// TemplateKey holds a model's default chat template.
	TemplateKey = "tokenizer.chat_template"
	// ToolUseVariant is the named template (TemplateKey + "." + name) that
	// renders conversations with tools, where a file has one.
	ToolUseVariant = "tool_use"
)

// SpecialTokens are the texts a template writes as bos_token and
// eos_token, and whether the tokenizer adds those tokens itself (then a
// prompt does not repeat them).
type SpecialTokens struct {
	BOS, EOS       string
	AddBOS, AddEOS bool
}

// SpecialTokensOf returns the BOS and EOS texts of a model's tokenizer
// and whether it adds those tokens itself.
func SpecialTokensOf(tok *tokenizer.Tokenizer) SpecialTokens {
	var st SpecialTokens
	if id := tok.BOS(); id >= 0 && int(id) < tok.VocabSize() {
		st.BOS, st.AddBOS = tok.Piece(id), tok.AddBOS()
	}
	if id := tok.EOS(); id >= 0 && int(id) < tok.VocabSize() {
		st.EOS, st.AddEOS = tok.Piece(id), tok.AddEOS()
	}
	return st
}

// SpecialTokensFromGGUF reads the BOS and EOS texts from a file's
// tokenizer metadata without building its tokenizer (which may be of a
// kind this engine cannot run). AddBOS and AddEOS are what the metadata
// says, false when it is silent; use SpecialTokensOf for a prompt that is
// then tokenized.
func SpecialTokensFromGGUF(f *gguf.File) SpecialTokens {
	var st SpecialTokens
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	text := func(key string) string {
		if id, ok := f.Int(key); ok && id >= 0 && id < int64(len(tokens)) {
			return tokens[id]
		}
		return ""
	}
	st.BOS, st.EOS = text("tokenizer.ggml.bos_token_id"), text("tokenizer.ggml.eos_token_id")
	st.AddBOS, _ = f.Bool("tokenizer.ggml.add_bos_token")
	st.AddEOS, _ = f.Bool("tokenizer.ggml.add_eos_token")
	return st
}

// fileTemplate is a model file's own Jinja chat template.
type fileTemplate struct {
	main     *jinja.Template
	variants map[string]*jinja.Template // tokenizer.chat_template.<name>
	names    []string                   // variant names, sorted
	sum      string                     // sha256 of the main source, hex
	size     int
	family   string // the built-in family the source looks like, if any
	tokens   SpecialTokens
	// reasoning is how a thinking model's template marks its reasoning
	// (nil: it does not).
	reasoning *Reasoning
}

// TemplatesFromGGUF returns a file's chat template source
// (tokenizer.chat_template, "" when absent) and its named variants
// (tokenizer.chat_template.<name>).
func TemplatesFromGGUF(f *gguf.File) (string, map[string]string) {
	src, _ := f.String(TemplateKey)
	var variants map[string]string
	for _, kv := range f.KV {
		name, ok := strings.CutPrefix(kv.Key, TemplateKey+".")
		if !ok || name == "" {
			continue
		}
		if v, ok := f.String(kv.Key); ok {
			if variants == nil {
				variants = map[string]string{}
			}
			variants[name] = v
		}
	}
	return src, variants
}

// ForModel returns the chat template of a model: its own Jinja template
// src (with named variants) when it has one, else the built-in family of
// the architecture arch. A source that is a bare built-in name ("chatml")
// selects that built-in, as llama.cpp allows. A template that does not
// parse (for example one using a feature this engine lacks) is an error
// naming the problem, not a silent fallback.
func ForModel(src string, variants map[string]string, arch string, tok SpecialTokens) (Template, error) {
	if strings.TrimSpace(src) == "" {
		return Detect("", arch)
	}
	if t, err := ByName(strings.TrimSpace(src)); err == nil {
		return t, nil
	}
	return FromJinja(src, variants, tok)
}

// FromJinja compiles a model's own chat template and its named variants.
func FromJinja(src string, variants map[string]string, tok SpecialTokens) (Template, error) {
	main, err := jinja.Parse(src, nil)
	if err != nil {
		return Template{}, fmt.Errorf("chat template from the file: %w", err)
	}
	sum := sha256.Sum256([]byte(src))
	f := &fileTemplate{main: main, sum: hex.EncodeToString(sum[:]), size: len(src), family: detectName(src), tokens: tok}
	for name, vsrc := range variants {
		vt, err := jinja.Parse(vsrc, nil)
		if err != nil {
			return Template{}, fmt.Errorf("chat template %q from the file: %w", name, err)
		}
		if f.variants == nil {
			f.variants = map[string]*jinja.Template{}
		}
		f.variants[name] = vt
		f.names = append(f.names, name)
	}
	slices.Sort(f.names)
	t := Template{Name: "gguf", file: f}
	if f.family != "" {
		b, _ := ByName(f.family)
		t.stops = b.stops
	}
	f.reasoning = detectReasoning(t, src)
	return t, nil
}

// FromFile reports whether t is a model file's own template (false for a
// built-in family).
func (t Template) FromFile() bool { return t.file != nil }

// SHA256 is the hex SHA-256 of a file template's main source ("" for a
// built-in), which identifies it across files.
func (t Template) SHA256() string {
	if t.file == nil {
		return ""
	}
	return t.file.sum
}

// Variants lists a file template's named variants (such as "tool_use").
func (t Template) Variants() []string {
	if t.file == nil {
		return nil
	}
	return slices.Clone(t.file.names)
}

// Describe is one line saying which template t is, for `ruvllm inspect`.
func (t Template) Describe() string {
	if t.file == nil {
		return "built-in " + t.Name + " (the file has no chat template of its own)"
	}
	d := fmt.Sprintf("from the file: tokenizer.chat_template, %d bytes, sha256 %s", t.file.size, t.file.sum[:16])
	if len(t.file.names) > 0 {
		d += ", variants: " + strings.Join(t.file.names, ", ")
	}
	if t.file.family != "" {
		d += " (" + t.file.family + " format)"
	}
	return d
}

// Apply renders conv exactly as the template writes it, BOS text
// included: what Hugging Face's apply_chat_template returns and what
// `ruvllm template render` and POST /v1/chat/template show. With tools, a
// file's tool_use variant is used where it has one.
func (t Template) Apply(ctx context.Context, conv Conversation) (string, error) {
	if t.file == nil {
		if len(conv.Tools) > 0 {
			return "", fmt.Errorf("render %s: %w", t.Name, ErrTools)
		}
		for i, m := range conv.Messages {
			if len(m.ToolCalls) > 0 {
				return "", fmt.Errorf("render %s: message %d has tool calls: %w", t.Name, i, ErrTools)
			}
		}
		return t.Render(conv.Messages, conv.AddGenerationPrompt)
	}
	if len(conv.Messages) == 0 {
		return "", fmt.Errorf("render chat template: %w", ErrNoMessages)
	}
	vars, err := templateVars(conv, t.file.tokens)
	if err != nil {
		return "", err
	}
	tmpl, which := t.file.main, "chat template"
	if v, ok := t.file.variants[ToolUseVariant]; ok && len(conv.Tools) > 0 {
		tmpl, which = v, "chat template "+ToolUseVariant
	}
	var out string
	if conv.Now.IsZero() {
		out, err = tmpl.Render(ctx, vars)
	} else {
		out, err = tmpl.RenderAt(ctx, vars, conv.Now)
	}
	if err != nil {
		return "", fmt.Errorf("render %s: %w", which, err)
	}
	return out, nil
}

// Prompt renders conv as the text to tokenize: Apply's text without a
// leading BOS (or trailing EOS) that the tokenizer adds itself, so the
// model never reads it twice.
func (t Template) Prompt(ctx context.Context, conv Conversation) (string, error) {
	out, err := t.Apply(ctx, conv)
	if err != nil || t.file == nil {
		return out, err
	}
	tok := t.file.tokens
	if tok.AddBOS && tok.BOS != "" {
		out = strings.TrimPrefix(out, tok.BOS)
	}
	if tok.AddEOS && tok.EOS != "" {
		out = strings.TrimSuffix(out, tok.EOS)
	}
	return out, nil
}

// reservedVars are the variables a template's caller sets itself.
var reservedVars = []string{"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"}

// ReservedVars are the template variables Conversation.Vars cannot set
// (the conversation sets them).
func ReservedVars() []string { return slices.Clone(reservedVars) }

// templateVars builds the variables Hugging Face's apply_chat_template
// passes: messages, tools (only when given), add_generation_prompt,
// bos_token, eos_token, plus conv.Vars.
func templateVars(conv Conversation, tok SpecialTokens) (map[string]any, error) {
	vars := map[string]any{
		"add_generation_prompt": conv.AddGenerationPrompt,
		"bos_token":             tok.BOS,
		"eos_token":             tok.EOS,
	}
	for k, v := range conv.Vars {
		if slices.Contains(reservedVars, k) {
			return nil, fmt.Errorf("template variable %q is set by the conversation itself", k)
		}
		vars[k] = v
	}
	msgs := &jinja.List{Items: make([]any, len(conv.Messages))}
	for i, m := range conv.Messages {
		d, err := messageValue(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		msgs.Items[i] = d
	}
	vars["messages"] = msgs
	if conv.Tools != nil {
		tools := &jinja.List{Items: make([]any, len(conv.Tools))}
		for i, raw := range conv.Tools {
			v, err := jinja.ParseJSON(raw)
			if err != nil {
				return nil, fmt.Errorf("tool %d: %w", i, err)
			}
			if _, ok := v.(*jinja.Dict); !ok {
				return nil, fmt.Errorf("tool %d: not a JSON object", i)
			}
			tools.Items[i] = v
		}
		vars["tools"] = tools
	}
	return vars, nil
}

// messageValue is a message as templates read it: role and content, and
// tool_calls, tool_call_id, name and reasoning_content where set.
func messageValue(m Message) (*jinja.Dict, error) {
	d := jinja.NewDict()
	d.Set("role", m.Role)
	d.Set("content", m.Content)
	if m.ReasoningContent != "" {
		d.Set("reasoning_content", m.ReasoningContent)
	}
	if len(m.ToolCalls) > 0 {
		calls := &jinja.List{Items: make([]any, len(m.ToolCalls))}
		for i, c := range m.ToolCalls {
			if c.Function.Name == "" {
				return nil, fmt.Errorf("tool call %d has no function name", i)
			}
			cd := jinja.NewDict()
			if c.ID != "" {
				cd.Set("id", c.ID)
			}
			typ := c.Type
			if typ == "" {
				typ = "function"
			}
			cd.Set("type", typ)
			fn := jinja.NewDict()
			fn.Set("name", c.Function.Name)
			args, err := argumentsValue(c.Function.Arguments)
			if err != nil {
				return nil, fmt.Errorf("tool call %d (%s): arguments: %w", i, c.Function.Name, err)
			}
			fn.Set("arguments", args)
			cd.Set("function", fn)
			calls.Items[i] = cd
		}
		d.Set("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		d.Set("tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		d.Set("name", m.Name)
	}
	return d, nil
}

// argumentsValue turns a call's arguments into the object templates
// expect: an object as it is, a string holding an object's JSON (OpenAI)
// as that object, other strings as strings, nothing as {}.
func argumentsValue(raw json.RawMessage) (any, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return jinja.NewDict(), nil
	}
	v, err := jinja.ParseJSON(raw)
	if err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok {
		if obj, err := jinja.ParseJSON([]byte(s)); err == nil {
			if _, isDict := obj.(*jinja.Dict); isDict {
				return obj, nil
			}
		}
	}
	return v, nil
}
