package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrUnknownTemplate means no built-in template matches a name, a Jinja
	// source or an architecture.
	ErrUnknownTemplate = errors.New("unknown chat template")
	// ErrNoMessages means Render was given an empty conversation.
	ErrNoMessages = errors.New("no messages")
	// ErrInvalidRole means a message has a role other than system, user or
	// assistant.
	ErrInvalidRole = errors.New("invalid role")
	// ErrRoleOrder means the roles are in an order the template cannot
	// express: a system message after the first, or (for templates that need
	// it) user and assistant turns that do not alternate starting with user.
	ErrRoleOrder = errors.New("invalid role order")
)

// Role names accepted in Message.Role.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Template is a model's chat format: the model file's own Jinja template
// (see FromJinja and ForModel) or one of the built-in families. The zero
// value is not usable; get one from ForModel, FromJinja, Detect or ByName.
type Template struct {
	// Name is the template's short name: a built-in's name as accepted by
	// ByName, or "gguf" for a model file's own template.
	Name string

	render    func(b *strings.Builder, system string, hasSystem bool, turns []Message, gen bool)
	stops     []string
	alternate bool          // user/assistant must alternate, starting with user
	file      *fileTemplate // the model file's Jinja template; nil for a built-in
}

// templates is the registration table of built-in formats, in the order
// Names lists them. Each renderer reproduces the Jinja template it is named
// after (see testdata/*.jinja) minus the leading BOS token.
var templates = []Template{
	{Name: "chatml", render: renderChatML, stops: []string{"<|im_end|>", "<|im_start|>"}},
	{Name: "llama2", render: renderLlama2, stops: []string{"[INST]"}, alternate: true},
	{Name: "llama2-sys-bos", render: renderLlama2SysBOS, stops: []string{"[INST]"}, alternate: true},
	{Name: "llama3", render: renderLlama3, stops: []string{"<|eot_id|>", "<|start_header_id|>"}},
	{Name: "mistral-v1", render: renderMistral(" [INST] ", " [/INST]", " ", false), stops: []string{"[INST]"}, alternate: true},
	{Name: "mistral-v3", render: renderMistral("[INST] ", "[/INST]", " ", true), stops: []string{"[INST]"}, alternate: true},
	{Name: "mistral-v3-tekken", render: renderMistral("[INST]", "[/INST]", "", false), stops: []string{"[INST]"}, alternate: true},
	{Name: "phi3", render: renderPhi3, stops: []string{"<|end|>", "<|user|>"}},
	{Name: "gemma", render: renderGemma, stops: []string{"<end_of_turn>", "<start_of_turn>"}, alternate: true},
}

// Names lists the built-in template names.
func Names() []string {
	out := make([]string, len(templates))
	for i, t := range templates {
		out[i] = t.Name
	}
	return out
}

// ByName returns the built-in template called name (see Names).
func ByName(name string) (Template, error) {
	for _, t := range templates {
		if t.Name == name {
			return t, nil
		}
	}
	return Template{}, fmt.Errorf("chat template %q: %w", name, ErrUnknownTemplate)
}

// Detect picks the template for a model from the Jinja source in its
// tokenizer.chat_template metadata, recognising the distinctive markers of
// common templates the way llama.cpp's llm_chat_detect_template does (the
// source may also be a bare template name). When the source is empty or
// unrecognised it falls back on the GGUF architecture name (general.
// architecture). It fails with ErrUnknownTemplate only when neither fits.
func Detect(jinja string, arch string) (Template, error) {
	if name := detectName(jinja); name != "" {
		return ByName(name)
	}
	if name := archTemplate(arch); name != "" {
		return ByName(name)
	}
	return Template{}, fmt.Errorf("detect chat template (architecture %q, %d-byte source): %w",
		arch, len(jinja), ErrUnknownTemplate)
}

// detectName maps a Jinja source to a template name, or "" if unrecognised.
func detectName(src string) string {
	src = strings.TrimSpace(src)
	if src == "" {
		return ""
	}
	if _, err := ByName(src); err == nil {
		return src
	}
	has := func(s string) bool { return strings.Contains(src, s) }
	switch {
	case has("<|im_start|>"):
		if has("<|im_sep|>") || has("<end_of_utterance>") {
			return "" // phi4 and SmolVLM reuse the marker with another layout
		}
		return "chatml"
	case strings.HasPrefix(src, "mistral") || has("[INST]"):
		switch {
		case has("[SYSTEM_PROMPT]"):
			return "" // mistral v7: not built in
		case has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]"):
			switch {
			case has(" [INST]"):
				return "mistral-v1"
			case has(`"[INST]"`):
				return "mistral-v3-tekken"
			}
			return "mistral-v3"
		case has("bos_token + '[INST]") && !has("content.strip()") && !has("content | trim") && !has("content|trim"):
			// System block written on its own, BOS + [INST] before every user turn.
			return "llama2-sys-bos"
		case has("<<SYS>>"):
			return "llama2"
		}
		// [INST] without system support (Mistral 7B v0.1/v0.2 style).
		return "mistral-v1"
	case has("<|assistant|>") && has("<|end|>"):
		return "phi3"
	case has("<start_of_turn>"):
		return "gemma"
	case has("<|start_header_id|>") && has("<|end_header_id|>"):
		return "llama3"
	}
	return ""
}

// archTemplate is the fallback template for a GGUF architecture whose
// metadata carries no recognisable template.
func archTemplate(arch string) string {
	switch strings.ToLower(arch) {
	case "llama":
		return "llama2"
	case "qwen", "qwen2", "qwen2moe", "qwen3", "qwen3moe":
		return "chatml"
	case "phi3":
		return "phi3"
	case "gemma", "gemma2", "gemma3":
		return "gemma"
	}
	return ""
}

// StopStrings returns text that ends a reply in this format besides the
// model's end-of-generation tokens: the markers that open or close a turn,
// which a model may write as text when it runs on past its turn.
func (t Template) StopStrings() []string {
	return append([]string(nil), t.stops...)
}

// Render returns the prompt text for msgs in t's format, ending with the
// assistant's generation prompt when addGenerationPrompt is set (for the
// built-in [INST] formats the prompt ends with [/INST] either way). For a
// file template it is Prompt without tools.
//
// The text never starts with the BOS token when the tokenizer adds it. Where a
// format puts BOS or EOS between turns (llama2's "</s><s>[INST]") they appear
// as special-token text, to be tokenized with special tokens parsed.
//
// For the built-in formats an optional system message must come first;
// roles must be system, user or assistant; formats built on [INST] and
// gemma need user and assistant turns to alternate, starting with user.
// Violations return ErrNoMessages, ErrInvalidRole or ErrRoleOrder. A file
// template decides for itself what it accepts (raise_exception).
func (t Template) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	if t.file != nil {
		return t.Prompt(context.Background(), Conversation{Messages: msgs, AddGenerationPrompt: addGenerationPrompt})
	}
	if t.render == nil {
		return "", fmt.Errorf("render: %w", ErrUnknownTemplate)
	}
	if len(msgs) == 0 {
		return "", fmt.Errorf("render %s: %w", t.Name, ErrNoMessages)
	}
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem:
			if i != 0 {
				return "", fmt.Errorf("render %s: message %d: system message must come first: %w", t.Name, i, ErrRoleOrder)
			}
		case RoleUser, RoleAssistant:
		default:
			return "", fmt.Errorf("render %s: message %d: role %q: %w", t.Name, i, m.Role, ErrInvalidRole)
		}
	}
	var system string
	hasSystem := msgs[0].Role == RoleSystem
	turns := msgs
	if hasSystem {
		system, turns = msgs[0].Content, msgs[1:]
	}
	if t.alternate {
		if len(turns) == 0 {
			return "", fmt.Errorf("render %s: a system message alone: %s needs a user message: %w", t.Name, t.Name, ErrRoleOrder)
		}
		for i, m := range turns {
			want := RoleUser
			if i%2 == 1 {
				want = RoleAssistant
			}
			if m.Role != want {
				return "", fmt.Errorf("render %s: message %d is %s, want %s: %s needs user/assistant turns to alternate starting with user: %w",
					t.Name, i+len(msgs)-len(turns), m.Role, want, t.Name, ErrRoleOrder)
			}
		}
	}
	var b strings.Builder
	t.render(&b, system, hasSystem, turns, addGenerationPrompt)
	return b.String(), nil
}

// renderChatML: <|im_start|>role\ncontent<|im_end|>\n per message.
func renderChatML(b *strings.Builder, system string, hasSystem bool, turns []Message, gen bool) {
	if hasSystem {
		b.WriteString("<|im_start|>system\n" + system + "<|im_end|>\n")
	}
	for _, m := range turns {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	if gen {
		b.WriteString("<|im_start|>assistant\n")
	}
}

// renderLlama2 follows Meta's Llama-2-chat template: the system block is
// folded into the first user turn, contents are stripped, every user turn
// after the first starts with BOS.
func renderLlama2(b *strings.Builder, system string, hasSystem bool, turns []Message, _ bool) {
	for i, m := range turns {
		content := m.Content
		if i == 0 && hasSystem {
			content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content
		}
		content = pyStrip(content)
		if m.Role == RoleUser {
			if i > 0 {
				b.WriteString("<s>")
			}
			b.WriteString("[INST] " + content + " [/INST]")
		} else {
			b.WriteString(" " + content + " </s>")
		}
	}
}

// renderLlama2SysBOS follows the llama2-style variant (used by the ruvllm
// test model) that writes the system block on its own and BOS + [INST]
// before every user turn, without stripping.
func renderLlama2SysBOS(b *strings.Builder, system string, hasSystem bool, turns []Message, _ bool) {
	if hasSystem {
		b.WriteString("<<SYS>>\n" + system + "\n<</SYS>>\n\n")
	}
	for _, m := range turns {
		if m.Role == RoleUser {
			if b.Len() > 0 { // a leading BOS is the tokenizer's job
				b.WriteString("<s>")
			}
			b.WriteString("[INST] " + m.Content + " [/INST]")
		} else {
			b.WriteString(" " + m.Content + " </s>")
		}
	}
}

// renderLlama3 follows Meta-Llama-3-Instruct: header, blank line, trimmed
// content, <|eot_id|>.
func renderLlama3(b *strings.Builder, system string, hasSystem bool, turns []Message, gen bool) {
	if hasSystem {
		b.WriteString("<|start_header_id|>system<|end_header_id|>\n\n" + pyStrip(system) + "<|eot_id|>")
	}
	for _, m := range turns {
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + pyStrip(m.Content) + "<|eot_id|>")
	}
	if gen {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
}

// renderMistral returns a renderer for Mistral's official instruct formats.
// v1 puts the system prompt in the first user turn; v3 and v3-tekken in the
// last one (sysLast). Mistral's Jinja for v3 attaches it only when that user
// turn is the last message; here it goes to the last user turn always, so a
// conversation ending with an assistant reply keeps its system prompt.
func renderMistral(open, close, asstSep string, trimAsst bool) func(*strings.Builder, string, bool, []Message, bool) {
	sysLast := open != " [INST] "
	return func(b *strings.Builder, system string, hasSystem bool, turns []Message, _ bool) {
		sysAt := -1
		if hasSystem {
			for i, m := range turns {
				if m.Role == RoleUser {
					sysAt = i
					if !sysLast {
						break
					}
				}
			}
		}
		for i, m := range turns {
			if m.Role == RoleUser {
				content := m.Content
				if i == sysAt {
					content = system + "\n\n" + content
				}
				b.WriteString(open + content + close)
				continue
			}
			content := m.Content
			if trimAsst {
				content = pyStrip(content)
			}
			b.WriteString(asstSep + content + "</s>")
		}
	}
}

// renderPhi3 follows Phi-3's template: <|role|>\ncontent<|end|>\n, and EOS
// text at the end when no generation prompt is asked for.
func renderPhi3(b *strings.Builder, system string, hasSystem bool, turns []Message, gen bool) {
	if hasSystem {
		b.WriteString("<|system|>\n" + system + "<|end|>\n")
	}
	for _, m := range turns {
		b.WriteString("<|" + m.Role + "|>\n" + m.Content + "<|end|>\n")
	}
	if gen {
		b.WriteString("<|assistant|>\n")
	} else {
		b.WriteString("<|endoftext|>")
	}
}

// renderGemma follows Gemma's template: no system role, so the system text
// and a blank line open the first user turn; the assistant is "model";
// contents are trimmed.
func renderGemma(b *strings.Builder, system string, hasSystem bool, turns []Message, gen bool) {
	for i, m := range turns {
		role := m.Role
		if role == RoleAssistant {
			role = "model"
		}
		b.WriteString("<start_of_turn>" + role + "\n")
		if i == 0 && hasSystem {
			b.WriteString(system + "\n\n")
		}
		b.WriteString(pyStrip(m.Content) + "<end_of_turn>\n")
	}
	if gen {
		b.WriteString("<start_of_turn>model\n")
	}
}

// pyStrip is Python's str.strip(), which both content.strip() and Jinja's
// trim filter use: Unicode whitespace plus the ASCII separators U+001C to
// U+001F that Python also counts as whitespace.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
	})
}
