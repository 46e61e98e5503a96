package llm

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/sched"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// followUpProbe stands for the user's next message when finding where the
// next turn's prompt stops being predictable.
const followUpProbe = "Thanks."

// FollowUpTokens returns the prompt tokens that the next turn of a chat
// will start with once reply has answered req: req's messages and then
// reply as the assistant's message, rendered and tokenized exactly as the
// next request's prompt will be, up to the last token that does not depend
// on what the user says next. It returns nil for requests without
// messages, models without a chat template, and templates that do not
// render a conversation append-only.
func (m *Model) FollowUpTokens(req Request, reply string) []int32 {
	if req.Messages == nil || !m.hasTmpl {
		return nil
	}
	msgs := append(slices.Clip(req.Messages), chat.Message{Role: "assistant", Content: reply})
	done, err := m.tmpl.Render(msgs, false)
	if err != nil {
		return nil
	}
	next, err := m.tmpl.Render(append(slices.Clip(msgs), chat.Message{Role: "user", Content: followUpProbe}), true)
	if err != nil || !strings.HasPrefix(next, done) {
		return nil
	}
	opts := tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}
	a, b := m.tok.Encode(done, opts), m.tok.Encode(next, opts)
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n == 0 || n >= m.opts.ContextLength {
		return nil
	}
	return a[:n]
}

// WarmFollowUp computes the keys and values of FollowUpTokens(req, reply)
// into the prefix cache, so that the next turn of the conversation finds
// its whole history there, the previous reply included, and computes only
// the new message. It returns the number of those tokens the cache now
// holds.
//
// Without it the next turn recomputes the reply: the cache matches token
// ids, and the ids a model generated are often not the ones its tokenizer
// gives for the same text (a small model spells words in pieces; a
// template renders the reply as ' ' + content, or merges the reply's
// first newline with the text before it). The computed tokens are the
// next prompt's own, so this changes only how fast the next turn starts,
// never what it answers. It runs as background work, in steps that no
// request has tokens for, so it never slows a request down; ClearCache
// cancels it. It does nothing without the prefix cache, and for requests
// with adapters, whose weights may be unloaded once the request is done.
func (m *Model) WarmFollowUp(ctx context.Context, req Request, reply string) (int, error) {
	if m.cache == nil || len(req.Adapters) > 0 {
		return 0, nil
	}
	tokens := m.FollowUpTokens(req, reply)
	if len(tokens) < 2 {
		return 0, nil
	}
	ctx, stop := m.warming.join(ctx)
	defer stop()
	job := &sched.Job{
		Prompt:     tokens,
		Namespace:  m.namespace,
		Priority:   req.Priority - 1,
		Background: true,
		// Only the keys and values are wanted: stop at the first logits.
		Next: func([]float32) (int32, bool) { return 0, true },
	}
	if err := m.sched.Run(ctx, job); err != nil {
		return 0, err
	}
	return len(tokens) / blockSize * blockSize, nil
}

// warmGroup cancels the follow-up warming in flight when the cache is
// cleared: a cleared cache must stay empty, not fill up again with work
// that was queued before.
type warmGroup struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

// join returns a context that ends with ctx or at the next cancelAll.
func (g *warmGroup) join(ctx context.Context) (context.Context, context.CancelFunc) {
	g.mu.Lock()
	if g.ctx == nil {
		g.ctx, g.cancel = context.WithCancel(context.Background())
	}
	group := g.ctx
	g.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(group, cancel)
	return ctx, func() { stop(); cancel() }
}

// cancelAll ends the work that joined so far.
func (g *warmGroup) cancelAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil {
		g.cancel()
		g.ctx, g.cancel = nil, nil
	}
}
