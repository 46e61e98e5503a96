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
	// budget, when positive, bounds the reasoning's tokens (Anthropic's
	// budget_tokens): llm.Request.ReasoningBudget.
	budget int
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
	// off: the request turned thinking off and the template took it, so
	// a constrained reply may not open a reasoning block of its own.
	off bool
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
	if gt, ok := req.Template.(*goTemplate); ok {
		return gt.applyThinking(ts)
	}
	if len(ts.vars) > 0 {
		req.TemplateVars = maps.Clone(ts.vars)
	}
	if ts.want != nil && *ts.want && r == nil {
		return nil, badParam(ts.param, "asks for thinking, but this model does not think")
	}
	if r == nil || req.Messages == nil {
		// Not a thinking model, or a prompt its template did not write
		// (a raw prompt).
		return nil, nil
	}
	if ts.want != nil && r.Toggle != "" {
		if req.TemplateVars == nil {
			req.TemplateVars = map[string]any{}
		}
		req.TemplateVars[r.Toggle] = *ts.want
	}
	off := ts.want != nil && !*ts.want && r.Toggle != ""
	return &thinkingState{r: r, startsOpen: r.StartsOpen(req.TemplateVars), raw: ts.raw, off: off}, nil
}

// continuePrefill fixes where a reply that continues the conversation's
// last assistant message starts (llm.Request.Continued: the engine's own
// rule): inside the reasoning block only when that text leaves one open, whatever the generation prompt, which a continued
// message does not get, would have done. Without it a prefill that closed
// the block ("...</think>Answer:") had its continuation returned as
// reasoning on a model whose generation prompt opens the block, and one
// that opened it ("<think>...") had its reasoning returned as the reply.
func (st *thinkingState) continuePrefill(req *llm.Request) {
	if st == nil {
		return
	}
	if text, ok := req.Continued(); ok {
		st.startsOpen = strings.LastIndex(text, st.r.Open) > strings.LastIndex(text, st.r.Close)
	}
}

// limit sets the request's reasoning budget, once where the reply starts
// is known (after continuePrefill).
func (st *thinkingState) limit(req *llm.Request, ts *thinkingSpec) {
	if st == nil || ts == nil || ts.budget <= 0 {
		return
	}
	req.Reasoning = &grammar.Gate{Open: st.r.Open, Close: st.r.Close, StartsOpen: st.startsOpen}
	req.ReasoningBudget = ts.budget
}

// thinks reports whether the reply may start with reasoning.
func (st *thinkingState) thinks() bool { return st != nil }

// wrap makes a constraint's part hold the reply after the reasoning: free
// text up to the closing tag, then the part. Where the prompt does not
// open the block, the reply may also skip the reasoning.
func (st *thinkingState) wrap(p grammar.Part) grammar.Part {
	if st == nil || st.off && !st.startsOpen {
		return p // no reasoning, or turned off: the reply is the part
	}
	think := grammar.Seq(grammar.Without(st.r.Close), grammar.Special(st.r.Close), grammar.Regex(`[ \t\r\n]*`), p)
	if st.startsOpen {
		return think
	}
	return grammar.Choice(grammar.Seq(grammar.Special(st.r.Open), think), p)
}

// splitter returns a fresh splitter for one choice's text (nil when the
// reply is all content).
func (st *thinkingState) splitter() *chat.Splitter {
	if st == nil || st.raw {
		return nil
	}
	return st.r.NewSplitter(st.startsOpen)
}

// splitReasoning divides a whole reply into its reasoning and content.
func (st *thinkingState) splitReasoning(text string) (reasoning, content string) {
	if st == nil || st.raw {
		return "", text
	}
	return st.r.Split(text, st.startsOpen)
}
