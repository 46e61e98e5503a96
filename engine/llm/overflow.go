package llm

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/jinja"
	"github.com/ruvllm/ruvllm/engine/sched"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// Overflow says what Generate does with a request that outgrows its
// context. The zero value fails a prompt that does not fit
// (ErrContextExceeded) and ends a reply that fills the context
// (FinishLength).
type Overflow struct {
	// DropOldest fits a prompt that does not fit: a chat loses its oldest
	// turns after the system messages, re-rendered with the model's
	// template until the rest fits with room for the reply (Ollama's
	// truncation), and any other prompt, or a chat whose newest turn alone
	// is too long, loses tokens after its kept head (BOS, the system part
	// of a chat, or Keep tokens) and keeps its end. System messages are
	// never dropped: a chat whose system part leaves no room fails.
	// Result.DroppedMessages and Result.TruncatedTokens say what was left
	// out.
	DropOldest bool
	// Shift lets a reply go on when it fills the context (llama.cpp's
	// context shift): the first tokens of the context (Keep) stay, the
	// older half of the rest is discarded, and generation continues over
	// what remains. The kept tokens come back from the prefix cache and
	// the rest is computed again at its new positions, so the result is
	// exactly what a prompt of the remaining tokens would give. Without
	// MaxTokens a reply ends after ten contexts' worth of tokens.
	// Result.ContextShifts and Result.ShiftedTokens say what was dropped.
	Shift bool
	// Keep is the number of tokens after BOS that a shift (and the
	// truncation of a prompt without messages) keeps at the start of the
	// context (Ollama's num_keep); 0 keeps the chat's system messages as
	// the template renders them, or BOS alone for other prompts. At most
	// half the context is kept.
	Keep int
}

// OverflowMode names an Overflow as the API's context_overflow field and
// the daemon's --context-overflow flag spell it.
type OverflowMode string

// The overflow modes.
const (
	// OverflowError fails a prompt that does not fit and stops a reply
	// that fills the context with finish reason "length".
	OverflowError OverflowMode = "error"
	// OverflowDropOldest drops a chat's oldest turns (a prompt's oldest
	// tokens) to fit; a reply that fills the context stops ("length").
	OverflowDropOldest OverflowMode = "drop_oldest"
	// OverflowShift fits the prompt as OverflowDropOldest does and shifts
	// the context when the reply fills it.
	OverflowShift OverflowMode = "shift"
)

// OverflowModes lists the modes in the order help texts name them.
var OverflowModes = []OverflowMode{OverflowDropOldest, OverflowShift, OverflowError}

// ParseOverflowMode reads a mode name.
func ParseOverflowMode(s string) (OverflowMode, error) {
	for _, m := range OverflowModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("context overflow mode %q: want drop_oldest, shift or error", s)
}

// Overflow returns the policy the mode names.
func (o OverflowMode) Overflow() Overflow {
	switch o {
	case OverflowDropOldest:
		return Overflow{DropOldest: true}
	case OverflowShift:
		return Overflow{DropOldest: true, Shift: true}
	}
	return Overflow{}
}

// maxOverflowContexts bounds a shifting reply without MaxTokens, in
// contexts' worth of generated tokens (Ollama's bound for num_predict -1).
const maxOverflowContexts = 10

// fitted is a prompt made to fit its context and what was left out.
type fitted struct {
	prompt []int32
	// messages are the chat messages kept (nil when none were dropped).
	messages        []chat.Message
	droppedMessages int
	droppedTokens   int
	// keep returns the head of the prompt that a context shift keeps,
	// found on the first call (most requests never shift).
	keep func() int
}

// replyRoom is the room a prompt cut to fit leaves for the reply: a
// quarter of the context, or maxTokens when that is less.
func replyRoom(ctxLen, maxTokens int) int {
	room := max(ctxLen/4, 1)
	if maxTokens > 0 && maxTokens < room {
		room = maxTokens
	}
	return room
}

// fitPrompt tokenizes req's prompt and, as req.Overflow allows, fits it to
// ctxLen. A prompt fits when it leaves room for one generated token, or
// for MaxTokens (up to a quarter of the context) when the request sets it;
// one that does not is cut to leave replyRoom for the reply.
func (m *Model) fitPrompt(ctx context.Context, req Request, ctxLen int) (fitted, error) {
	prompt, err := m.PromptTokens(req)
	// A chat of so many turns that its rendering exceeds the template's
	// limits (a million short messages in a 32 MiB body) holds far more
	// than a context: it does not fit, and drop_oldest renders only the
	// turns it keeps. It failed with "template limit exceeded", naming
	// nothing, whatever the overflow mode.
	tooLong := err != nil && errors.Is(err, jinja.ErrLimit) && len(req.Messages) > 0 && req.Tokens == nil && req.Context == nil
	renderErr := err
	switch {
	case tooLong && !req.Overflow.DropOldest:
		return fitted{}, tooLongErr(req, renderErr)
	case err != nil && !tooLong:
		return fitted{}, err
	}
	f, orig := fitted{prompt: prompt}, len(prompt)
	lazyKeep := func(msgs []chat.Message, prompt []int32) func() int {
		n := -1
		return func() int {
			if n < 0 {
				n = m.keepHead(ctx, req, msgs, prompt)
			}
			return n
		}
	}
	msgs := req.Messages
	if req.Context != nil { // a token prompt: no turns to drop or keep
		msgs = nil
	}
	f.keep = lazyKeep(msgs, prompt)
	o := req.Overflow
	need := 1
	if o.DropOldest && req.MaxTokens > 0 {
		need = min(req.MaxTokens, max(ctxLen/4, 1))
	}
	if !tooLong && len(prompt)+need <= ctxLen {
		return f, nil
	}
	if !o.DropOldest || ctxLen < 2 {
		return f, fmt.Errorf("%w: %d tokens, context is %d", ErrContextExceeded, len(prompt), ctxLen)
	}
	budget := ctxLen - replyRoom(ctxLen, req.MaxTokens)
	if msgs != nil {
		if msgs, prompt, err = m.dropOldest(ctx, req, prompt, budget); err != nil {
			return f, err
		}
		if f.droppedMessages = len(req.Messages) - len(msgs); f.droppedMessages > 0 {
			f.messages = msgs
		}
		if tooLong && f.droppedMessages == 0 { // no turn to drop (system messages only)
			return f, tooLongErr(req, renderErr)
		}
	}
	f.keep = lazyKeep(msgs, prompt)
	if len(prompt) > budget {
		keep := f.keep()
		if keep >= budget {
			return f, fmt.Errorf("%w: the head of the prompt that must be kept (system messages, or num_keep) is %d tokens, the context %d with %d left for the reply",
				ErrContextExceeded, keep, ctxLen, ctxLen-budget)
		}
		prompt = append(append(make([]int32, 0, budget), prompt[:keep]...), prompt[len(prompt)-(budget-keep):]...)
	}
	f.prompt = prompt
	f.droppedTokens = orig - len(prompt)
	if tooLong {
		// The whole chat was never tokenized: count what is known, at
		// least a token for each message left out.
		f.droppedTokens = f.droppedMessages
	}
	return f, nil
}

// tooLongErr is the error of a chat whose rendering exceeds the chat
// template's limits (renderErr) and that fitting cannot shorten.
func tooLongErr(req Request, renderErr error) error {
	return fmt.Errorf("%w: the %d messages are more than the chat template can render within its limits (%w)", ErrContextExceeded, len(req.Messages), renderErr)
}

// isSystem reports whether a message is a system prompt, which fitting
// never drops.
func isSystem(role string) bool { return role == "system" || role == "developer" }

// encodeChat tokenizes a chat rendered by chatPrompt as PromptTokens
// does: the template's control tokens parsed, the messages' text plain.
func (m *Model) encodeChat(text string) []int32 {
	out := m.tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true, Unescape: true})
	if m.tok.StartsWithBOS(out) && m.tok.StartsWithBOS(out[1:]) {
		out = out[1:] // a request's own template wrote the BOS the tokenizer adds
	}
	return out
}

// dropOldest drops req's oldest chat turns, never a system message nor the
// newest turn, until the rendered rest is at most budget tokens. The kept
// turns start at a user message, as templates that check the order of
// roles require (a tool result never loses its call). When even the newest
// turn does not fit, it returns the conversation from the newest user
// message on, over budget.
func (m *Model) dropOldest(ctx context.Context, req Request, prompt []int32, budget int) ([]chat.Message, []int32, error) {
	msgs := req.Messages
	var cuts []int // where the kept turns may start
	first := true
	for i, msg := range msgs {
		if isSystem(msg.Role) {
			continue
		}
		if !first && msg.Role == "user" {
			cuts = append(cuts, i)
		}
		first = false
	}
	if len(cuts) == 0 {
		return msgs, prompt, nil
	}
	type render struct {
		msgs   []chat.Message
		tokens []int32
		// tooLong: the kept turns exceed the template's limits (too
		// many to render), so they do not fit either.
		tooLong bool
	}
	renders := make(map[int]render)
	var rerr error
	at := func(k int) render {
		if r, ok := renders[k]; ok {
			return r
		}
		var kept []chat.Message
		for i, msg := range msgs {
			if i >= cuts[k] || isSystem(msg.Role) {
				kept = append(kept, msg)
			}
		}
		text, err := m.chatPrompt(ctx, req, kept)
		if errors.Is(err, jinja.ErrLimit) && k < len(cuts)-1 {
			r := render{msgs: kept, tooLong: true}
			renders[k] = r
			return r
		}
		if err != nil && rerr == nil {
			rerr = fmt.Errorf("render the chat without its oldest turns: %w", err)
		}
		r := render{msgs: kept, tokens: m.encodeChat(text)}
		renders[k] = r
		return r
	}
	// Fewer turns render to fewer tokens: the first cut that fits is found
	// by bisection, a few renderings however long the chat.
	k := sort.Search(len(cuts), func(k int) bool {
		if rerr != nil {
			return true
		}
		r := at(k)
		return !r.tooLong && len(r.tokens) <= budget
	})
	if rerr != nil {
		return nil, nil, rerr
	}
	r := at(min(k, len(cuts)-1))
	if rerr != nil {
		return nil, nil, rerr
	}
	return r.msgs, r.tokens, nil
}

// keepHead is the head of prompt that truncation and context shifts keep:
// BOS, then Overflow.Keep tokens or, for a chat, its leading system
// messages as rendered (the tokens the prompt shares with a rendering of
// those messages alone).
func (m *Model) keepHead(ctx context.Context, req Request, msgs []chat.Message, prompt []int32) int {
	bos := 0
	if m.tok.StartsWithBOS(prompt) {
		bos = 1
	}
	if req.Overflow.Keep > 0 {
		return min(bos+req.Overflow.Keep, len(prompt))
	}
	var sys []chat.Message
	for _, msg := range msgs {
		if !isSystem(msg.Role) {
			break
		}
		sys = append(sys, msg)
	}
	if len(sys) == 0 {
		return bos
	}
	return max(bos, m.systemTokens(ctx, req, sys, prompt))
}

// systemTokens is the number of tokens of prompt that render the system
// messages sys: the common prefix of the prompt and sys rendered alone,
// or, for a template that refuses a conversation without a user message,
// the common prefix of the prompt and two renderings with different user
// messages (which takes the user turn's opening too).
func (m *Model) systemTokens(ctx context.Context, req Request, sys []chat.Message, prompt []int32) int {
	t, err := m.renderer(req)
	if err != nil {
		return 0
	}
	if text, err := t.Prompt(ctx, chat.Conversation{Messages: m.escapeMessages(sys), Tools: m.escapeTools(req.Tools), Vars: req.TemplateVars}); err == nil {
		return commonPrefix(prompt, m.encodeChat(text))
	}
	n := len(prompt)
	for _, probe := range followUpProbes {
		text, err := m.chatPrompt(ctx, req, append(append([]chat.Message(nil), sys...), chat.Message{Role: "user", Content: probe}))
		if err != nil {
			return 0
		}
		n = min(n, commonPrefix(prompt, m.encodeChat(text)))
	}
	return n
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// shifter carries a generation across context shifts (Overflow.Shift).
// Its fields are written by the scheduler's goroutine while a job runs and
// read by runJob between runs.
type shifter struct {
	ctxLen    int
	keepHead  func() int
	keep      int  // tokens at the start of the context never discarded (-1: not known yet)
	maxTokens int  // the request's MaxTokens (0: none)
	pending   bool // the context is full: shift, then go on
	shifts    int
	discarded int // tokens discarded so far, all after keep
}

// newShifter returns the shift state of a request, nil when it does not
// shift. keepHead gives the head to keep, at the first shift; at most
// three quarters of the context are kept, so that every shift frees at
// least an eighth of it.
func newShifter(o Overflow, keepHead func() int, ctxLen, maxTokens int) *shifter {
	if !o.Shift || ctxLen < 8 {
		return nil
	}
	return &shifter{ctxLen: ctxLen, keepHead: keepHead, keep: -1, maxTokens: maxTokens}
}

// inContext is the number of tokens of history the context holds.
func (s *shifter) inContext(history []int32) int {
	if s == nil {
		return len(history)
	}
	return len(history) - s.discarded
}

// full is called when the context is full after generated tokens; it
// reports whether generation goes on after a shift (the job then ends and
// runJob resubmits it).
func (s *shifter) full(generated int) bool {
	if s == nil || (s.maxTokens == 0 && generated >= maxOverflowContexts*s.ctxLen) {
		return false
	}
	s.pending = true
	return true
}

// shift discards the older half of the context after keep and returns
// what remains of history: the tokens to compute as the next prompt.
func (s *shifter) shift(history []int32) []int32 {
	if s.keep < 0 {
		s.keep = min(s.keepHead(), s.ctxLen-s.ctxLen/4)
	}
	n := len(history) - s.discarded - s.keep
	s.discarded += n / 2
	s.shifts++
	s.pending = false
	return append(append(make([]int32, 0, s.ctxLen), history[:s.keep]...), history[s.keep+s.discarded:]...)
}

// runJob runs job through the scheduler and, each time its context filled
// and s asked for a shift, again with the shifted context as its prompt:
// the kept head comes from the prefix cache (the finished run inserted its
// blocks), the rest is computed at its new positions, and the job's Next
// goes on sampling from there. history returns the tokens so far; it is
// read only between runs. job.CachedTokens is left as the first run set
// it: the request's own prompt's.
func (m *Model) runJob(ctx context.Context, job *sched.Job, s *shifter, history func() []int32) error {
	err := m.sched.Run(ctx, job)
	if s == nil {
		return err
	}
	cached := job.CachedTokens
	for err == nil && s.pending {
		job.Prompt = s.shift(history())
		m.log.Debug("context shifted", "kept", s.keep, "discarded", s.discarded, "shifts", s.shifts, "prompt", len(job.Prompt))
		err = m.sched.Run(ctx, job)
	}
	job.CachedTokens = cached
	return err
}
