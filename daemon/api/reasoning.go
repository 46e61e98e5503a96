package api

import (
	"maps"
	"strings"

	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/llm"
)

// Thinking models (Qwen3, QwQ, DeepSeek-R1 and the like) start a reply
// with their reasoning between <think> and </think>. Every chat API can
// turn it on or off where the model's template allows (Ollama's think,
// llama-server's chat_template_kwargs, Anthropic's thinking), and gets it
// apart from the reply: OpenAI's message.reasoning_content (as llama-server
// and vLLM return it), Ollama's message.thinking, Anthropic's thinking
// blocks. A constraint (a JSON Schema, a grammar, a required tool call)
// holds the reply after the reasoning, which stays free.

// thinkingSpec is what a request asks of a thinking model, before the
// model is known.
type thinkingSpec struct {
	// want is the client's choice: nil leaves the model's default.
	want *bool
	// param names the field want came from, for errors.
	param string
	// raw leaves the reasoning in the content (llama-server's
	// reasoning_format "none").
	raw bool
	// vars are the request's own template variables
	// (chat_template_kwargs).
	vars map[string]any
}

// thinkingState is what a request's thinking became once the model is
// known.
type thinkingState struct {
	r *chat.Reasoning
	// startsOpen: the prompt leaves the reasoning block open, so the
	// reply starts inside it.
	startsOpen bool
	// raw: the reasoning stays in the content (a constraint still holds
	// only the reply after it).
	raw bool
}

// applyThinking checks ts against the model and sets the request's
// template variables; it returns how the reply starts and splits, or nil
// for a model that does not think (or a prompt its template did not
// write).
func applyThinking(m models.Model, req *llm.Request, ts *thinkingSpec) (*thinkingState, error) {
	var r *chat.Reasoning
	if m != nil {
		r = m.Info().Reasoning
	}
	if ts == nil {
		ts = &thinkingSpec{}
	}
	if len(ts.vars) > 0 {
		req.TemplateVars = maps.Clone(ts.vars)
	}
	if ts.want != nil && *ts.want && r == nil {
		return nil, badParam(ts.param, "this model does not think")
	}
	if r == nil || req.Templated || req.Messages == nil {
		// Not a thinking model, or a prompt its template did not write
		// (a raw prompt, a created model's own template).
		return nil, nil
	}
	if ts.want != nil && r.Toggle != "" {
		if req.TemplateVars == nil {
			req.TemplateVars = map[string]any{}
		}
		req.TemplateVars[r.Toggle] = *ts.want
	}
	return &thinkingState{r: r, startsOpen: r.StartsOpen(req.TemplateVars), raw: ts.raw}, nil
}

// thinks reports whether the reply may start with reasoning.
func (st *thinkingState) thinks() bool { return st != nil }

// wrap makes a constraint's part hold the reply after the reasoning: free
// text up to the closing tag, then the part. Where the prompt does not
// open the block, the reply may also skip the reasoning.
func (st *thinkingState) wrap(p grammar.Part) grammar.Part {
	if st == nil {
		return p
	}
	think := grammar.Seq(grammar.Without(st.r.Close), grammar.Special(st.r.Close), grammar.Regex(`[ \t\r\n]*`), p)
	if st.startsOpen {
		return think
	}
	return grammar.Choice(grammar.Seq(grammar.Special(st.r.Open), think), p)
}

// splitter returns a fresh splitter for one choice's text (nil when the
// reply is all content).
func (st *thinkingState) splitter() *reasoningSplit {
	if st == nil || st.raw {
		return nil
	}
	s := &reasoningSplit{open: st.r.Open, close: st.r.Close}
	if st.startsOpen {
		s.state, s.leading = inReasoning, true
	}
	return s
}

// splitReasoning divides a whole reply into its reasoning and content.
func (st *thinkingState) splitReasoning(text string) (reasoning, content string) {
	s := st.splitter()
	if s == nil {
		return "", text
	}
	r, c := s.Push(text)
	r2, c2 := s.Close()
	return r + r2, c + c2
}

// The states of a reasoningSplit.
const (
	beforeReasoning = iota // nothing yet: the reply may open the block
	inReasoning
	afterReasoning // the block closed: whitespace before the content is dropped
	inContent
)

// reasoningSplit separates a reply's reasoning from its content as the
// text streams in. Text that may be the start of a tag (or whitespace at
// the reasoning's edges) is held back until the next text decides it;
// the whitespace around the reasoning and between it and the content is
// dropped, as llama-server does.
type reasoningSplit struct {
	open, close string
	state       int
	pending     string
	// leading: no reasoning text has been given out yet (whitespace is
	// dropped).
	leading bool
}

// Push takes the next piece of the reply and returns the reasoning and
// the content it completes.
func (s *reasoningSplit) Push(text string) (reasoning, content string) {
	s.pending += text
	var rb, cb strings.Builder
	for {
		switch s.state {
		case beforeReasoning:
			p := strings.TrimLeft(s.pending, " \t\r\n")
			switch {
			case strings.HasPrefix(p, s.open):
				s.pending, s.state, s.leading = p[len(s.open):], inReasoning, true
				continue
			case p == "" || strings.HasPrefix(s.open, p):
				return rb.String(), cb.String() // not decided yet
			}
			s.state = inContent
			continue
		case inReasoning:
			if s.leading {
				// A model whose prompt opened the block may open it again.
				s.pending = strings.TrimLeft(s.pending, " \t\r\n")
				if strings.HasPrefix(s.pending, s.open) {
					s.pending = s.pending[len(s.open):]
					continue
				}
				if s.pending == "" || strings.HasPrefix(s.open, s.pending) {
					return rb.String(), cb.String()
				}
			}
			if i := strings.Index(s.pending, s.close); i >= 0 {
				rb.WriteString(strings.TrimRight(s.pending[:i], " \t\r\n"))
				s.pending, s.state = s.pending[i+len(s.close):], afterReasoning
				continue
			}
			keep := heldBack(s.pending, s.close)
			rb.WriteString(s.pending[:len(s.pending)-keep])
			if keep < len(s.pending) {
				s.leading = false
			}
			s.pending = s.pending[len(s.pending)-keep:]
			return rb.String(), cb.String()
		case afterReasoning:
			s.pending = strings.TrimLeft(s.pending, " \t\r\n")
			if s.pending == "" {
				return rb.String(), cb.String()
			}
			s.state = inContent
			continue
		default:
			cb.WriteString(s.pending)
			s.pending = ""
			return rb.String(), cb.String()
		}
	}
}

// Close returns what is held back at the end of the reply: reasoning the
// model never closed stays reasoning.
func (s *reasoningSplit) Close() (reasoning, content string) {
	rest := s.pending
	s.pending = ""
	switch s.state {
	case inReasoning:
		return strings.TrimRight(rest, " \t\r\n"), ""
	case afterReasoning:
		return "", ""
	}
	return "", rest
}

// heldBack is how many bytes at the end of text must wait for what
// follows: trailing whitespace, and a tail that may begin tag (which,
// when it comes whole, ends the reasoning there).
func heldBack(text, tag string) int {
	keep := 0
	for n := min(len(tag)-1, len(text)); n > 0; n-- {
		if strings.HasPrefix(tag, text[len(text)-n:]) {
			keep = n
			break
		}
	}
	rest := text[:len(text)-keep]
	return keep + len(rest) - len(strings.TrimRight(rest, " \t\r\n"))
}
