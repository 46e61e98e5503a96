package llm

import (
	"context"
	"slices"
	"sync"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/sched"
)

// followUpProbes stand for the user's next message when finding where the
// next turn's prompt stops being predictable: the tokens two different
// next messages share are the history's.
var followUpProbes = [2]string{"Thanks.", "OK, and what else?"}

// FollowUpTokens returns the prompt tokens that the next turn of a chat
// will start with once reply has answered req: req's messages and then
// reply as the assistant's message (a thinking model's reasoning apart from
// its content, as the APIs return them), rendered (with req's tools and
// template variables) and tokenized exactly as the next request's prompt
// will be, up to the last token that does not depend on what the user
// says next. It returns nil for requests without messages and models
// without a usable chat template.
//
// The history is found as the common prefix of two renderings with
// different next messages, not by rendering the conversation as it ends
// now: many templates render the last assistant turn differently from an
// earlier one (Qwen3 keeps its <think> block only there, Phi-3 closes a
// conversation with <|endoftext|>), so the history as the next request
// renders it is not a prefix of the current rendering.
func (m *Model) FollowUpTokens(req Request, reply string) []int32 {
	if req.Messages == nil {
		return nil
	}
	answer := chat.Message{Role: "assistant", Content: reply}
	if r := m.info.Reasoning; r != nil {
		// A thinking model's reply comes back as the API gave it: the
		// content, its reasoning apart.
		answer.ReasoningContent, answer.Content = r.Split(reply, r.StartsOpen(req.TemplateVars))
	}
	msgs := append(slices.Clip(req.Messages), answer)
	var toks [2][]int32
	for i, probe := range followUpProbes {
		text, err := m.chatPrompt(context.Background(), req, append(slices.Clip(msgs), chat.Message{Role: "user", Content: probe}))
		if err != nil {
			return nil
		}
		toks[i] = m.encodeChat(text)
	}
	a, b := toks[0], toks[1]
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
// never what it answers. It runs as background work (sched.Job.Background:
// once no request has run for a moment, in short passes) and ClearCache
// cancels it. It does nothing without the prefix cache, for requests with
// adapters, whose weights may be unloaded once the request is done, and
// when the cache already holds the history.
func (m *Model) WarmFollowUp(ctx context.Context, req Request, reply string) (int, error) {
	ctx, stop := m.warming.join(ctx)
	defer stop()
	return m.warmFollowUp(ctx, req, reply)
}

// MaxWarmBacklog is how many chats' next turns may wait to be warmed in
// the background at once, per model. Warming runs only while no request
// does, so under steady load every reply added one waiting goroutine that
// held its conversation (the whole history, and the request's messages)
// until the daemon was next idle: a shared daemon kept busy for days grew
// without bound. Past the cap the oldest waiting warming is dropped: the
// newest conversations are the ones whose next turn comes soonest, and
// warming only ever makes a turn start sooner.
const MaxWarmBacklog = 16

// startWarmFollowUp runs WarmFollowUp in the background; it joins the
// warming group before returning, so a ClearCache after the reply was
// delivered cancels it, and so does the start of MaxWarmBacklog newer
// ones.
func (m *Model) startWarmFollowUp(req Request, reply string) {
	ctx, stop := m.warming.join(context.Background())
	ctx, cancel := context.WithCancel(ctx)
	untrack := m.warming.track(cancel, MaxWarmBacklog)
	go func() {
		defer stop()
		defer untrack()
		defer cancel()
		n, err := m.warmFollowUp(ctx, req, reply)
		if err != nil {
			m.log.Debug("follow-up warming", "err", err)
			return
		}
		m.log.Debug("follow-up warmed", "tokens", n)
	}()
}

// A chat under adapters (a learned adapter's: every chat of a user who gave
// feedback) is warmed under them, in their namespace: it was skipped, so
// no such user's next turn was ever warmed.
func (m *Model) warmFollowUp(ctx context.Context, req Request, reply string) (int, error) {
	if m.cache == nil {
		return 0, nil
	}
	namespace, err := m.adapterNamespace(req.Adapters)
	if err != nil {
		return 0, err
	}
	tokens := m.FollowUpTokens(req, reply)
	// Only whole blocks are cached: the tail is the next turn's to compute.
	tokens = tokens[:len(tokens)/blockSize*blockSize]
	if len(tokens) == 0 || m.cache.Cached(namespace, tokens) == len(tokens) {
		return len(tokens), nil
	}
	job := &sched.Job{
		Prompt:     tokens,
		Namespace:  namespace,
		Adapters:   req.Adapters,
		Priority:   req.Priority - 1,
		Background: true,
		// Only the keys and values are wanted: stop at the first logits.
		Next: func([]float32) (int32, bool) { return 0, true },
	}
	if err := m.sched.Run(ctx, job); err != nil {
		return 0, err
	}
	m.warmed.Add(uint64(len(tokens) - job.CachedTokens))
	return len(tokens), nil
}

// WaitWarming waits until the follow-up warming in flight has ended.
func (m *Model) WaitWarming() { m.warming.wg.Wait() }

// WarmedTokens is the number of tokens follow-up warming has computed.
func (m *Model) WarmedTokens() uint64 { return m.warmed.Load() }

// warmGroup cancels the follow-up warming in flight when the cache is
// cleared: a cleared cache must stay empty, not fill up again with work
// that was queued before (nor keep the blocks that work holds).
type warmGroup struct {
	mu  sync.Mutex
	cur *warmEpoch     // the work joined since the last cancelAll
	wg  sync.WaitGroup // all work that joined and has not stopped
	// backlog is the background warming in flight (startWarmFollowUp),
	// oldest first, bounded by track.
	backlog []*backlogEntry
}

// backlogEntry is one background warming: cancel ends it, done is closed
// once it has stopped.
type backlogEntry struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// track adds a background warming ended by cancel to the backlog and,
// past max entries, cancels the oldest. The returned function, called when
// the warming stops, takes it out.
func (g *warmGroup) track(cancel context.CancelFunc, max int) (untrack func()) {
	e := &backlogEntry{cancel: cancel, done: make(chan struct{})}
	g.mu.Lock()
	g.backlog = append(g.backlog, e)
	var evicted []*backlogEntry
	if over := len(g.backlog) - max; over > 0 {
		evicted = append(evicted, g.backlog[:over]...)
		g.backlog = append(g.backlog[:0:0], g.backlog[over:]...)
	}
	g.mu.Unlock()
	for _, old := range evicted {
		old.cancel()
	}
	return func() {
		g.mu.Lock()
		if i := slices.Index(g.backlog, e); i >= 0 {
			g.backlog = slices.Delete(g.backlog, i, i+1)
		}
		g.mu.Unlock()
		close(e.done)
	}
}

// warmEpoch is the work that joined between two cancelAll calls.
type warmEpoch struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// join returns a context that ends with ctx or at the next cancelAll, and
// the function to call when the work is done.
func (g *warmGroup) join(ctx context.Context) (context.Context, context.CancelFunc) {
	g.mu.Lock()
	if g.cur == nil {
		e := &warmEpoch{}
		e.ctx, e.cancel = context.WithCancel(context.Background())
		g.cur = e
	}
	e := g.cur
	e.wg.Add(1)
	g.wg.Add(1)
	g.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.ctx, cancel)
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			stop()
			cancel()
			e.wg.Done()
			g.wg.Done()
		})
	}
}

// cancelAll ends the work that joined so far and waits until it stopped.
func (g *warmGroup) cancelAll() {
	g.mu.Lock()
	e := g.cur
	g.cur = nil
	g.mu.Unlock()
	if e != nil {
		e.cancel()
		e.wg.Wait()
	}
}
