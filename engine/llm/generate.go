package llm

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/sched"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

// runner adapts the model to the scheduler: one locked forward pass per
// step, logits copied out for the rows that need them.
type runner struct{ m *Model }

func (r runner) Vocab() int          { return r.m.net.Config().Vocab }
func (r runner) KV() compute.KVStore { return r.m.kv }

func (r runner) Step(batch *model.Batch, rows []int32, out [][]float32) (err error) {
	m := r.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	defer m.noteFault(&err)
	defer mapfault.Catch(&err, mapfault.Arm())
	if m.followsOutputs {
		batch.Outputs = rows
	}
	hidden := m.net.Forward(batch, m.kv)
	batch.Outputs = nil
	return m.copyLogits(m.net, hidden, rows, out)
}

// TreeSpans reports whether the backend verifies branching drafts
// (compute.TreeAttender).
func (r runner) TreeSpans() bool {
	t, ok := r.m.backend.(compute.TreeAttender)
	return ok && t.TreeSpans()
}

// copyLogits projects rows of net's hidden states to logits and copies
// them into out; m.mu must be held.
func (m *Model) copyLogits(net model.Model, hidden compute.Tensor, rows []int32, out [][]float32) error {
	if len(rows) == 0 { // only prefill chunks this step: nobody needs logits yet
		return nil
	}
	logits := net.Logits(hidden, rows)
	vocab := len(m.logits)
	if len(rows) == 1 && len(out[0]) == vocab { // decode: straight to the sampler's row
		m.backend.Download(logits, out[0])
		m.maskTextless(out[:1])
		return nil
	}
	if cap(m.stepLogits) < len(rows)*vocab {
		m.stepLogits = make([]float32, len(rows)*vocab)
	}
	all := m.stepLogits[:len(rows)*vocab]
	m.backend.Download(logits, all)
	for i := range rows {
		copy(out[i], all[i*vocab:(i+1)*vocab])
	}
	m.maskTextless(out[:len(rows)])
	return nil
}

// maskTextless makes the ids the tokenizer has no token for (an output
// matrix with more rows than the vocabulary: llama.cpp refuses such a
// file) impossible to sample: drawn, they were replies of empty text.
func (m *Model) maskTextless(out [][]float32) {
	n := m.tok.VocabSize()
	for _, row := range out {
		if n < len(row) {
			for v := n; v < len(row); v++ {
				row[v] = float32(math.Inf(-1))
			}
		}
	}
}

// tokenQueue carries tokens from the scheduler goroutine to the caller
// without ever blocking the scheduler.
type tokenQueue struct {
	mu     sync.Mutex
	items  []Token
	signal chan struct{}
}

func newTokenQueue() *tokenQueue { return &tokenQueue{signal: make(chan struct{}, 1)} }

func (q *tokenQueue) push(t Token) {
	q.mu.Lock()
	q.items = append(q.items, t)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// drain appends the queued tokens to buf[:0] and returns it; passing the
// previous result back in makes both slices' storage reused, so streaming
// settles into no allocation per token.
func (q *tokenQueue) drain(buf []Token) []Token {
	q.mu.Lock()
	defer q.mu.Unlock()
	buf = append(buf[:0], q.items...)
	clear(q.items)
	q.items = q.items[:0]
	return buf
}

// Generate runs one request, calling onToken for every generated token in
// order. It stops at an end-of-generation token, a stop string, MaxTokens,
// the context limit, when ctx is cancelled, or when onToken returns an
// error (which Generate then returns). Requests run concurrently through
// the model's scheduler, batched into shared forward passes, and reuse
// prompt prefixes computed by earlier requests.
func (m *Model) Generate(ctx context.Context, req Request, onToken func(Token) error) (Result, error) {
	start := time.Now()
	var res Result
	ctxLen := m.opts.ContextLength
	if req.ContextLimit > 0 && req.ContextLimit < ctxLen {
		ctxLen = req.ContextLimit
	}
	fit, err := m.fitPrompt(ctx, req, ctxLen)
	if err != nil {
		return res, err
	}
	prompt := fit.prompt
	if len(prompt) == 0 {
		// A client's error (a template that renders nothing), not the
		// server's.
		return res, fmt.Errorf("the prompt has no tokens, nothing to condition on (does the template render nothing?): %w", ErrEmptyInput)
	}
	if fit.droppedTokens > 0 {
		res.TruncatedTokens, res.DroppedMessages = fit.droppedTokens, fit.droppedMessages
		if fit.messages != nil {
			req.Messages = fit.messages // the turns the reply follows, for WarmFollowUp
		}
		m.log.Info("prompt cut to fit the context", "dropped_messages", fit.droppedMessages, "dropped_tokens", fit.droppedTokens,
			"kept_tokens", len(prompt), "context", ctxLen)
	}
	shift := newShifter(req.Overflow, fit.keep, ctxLen, req.MaxTokens)
	namespace, err := m.adapterNamespace(req.Adapters)
	if err != nil {
		return res, err
	}
	res.Prompt, res.PromptTokens = prompt, len(prompt)
	// The client's stop strings hold throughout; the template's (a model
	// running on into the next turn) only over free text: a grammar
	// decides where constrained text ends, and "[INST]" inside a JSON
	// string must not cut the object short. A lazy grammar's text is free
	// until its trigger.
	var turnStops []string
	if req.Messages != nil && req.Template == nil {
		turnStops = m.tmpl.StopStrings()
	}

	var gs *constrained
	if req.Grammar != nil {
		v, err := m.GrammarVocab()
		if err != nil {
			return res, err
		}
		if req.Grammar.Vocab() != v {
			return res, ErrGrammarVocab
		}
		gs = newConstrained(req.Grammar, req.GrammarTriggers, req.GrammarGate)
		if gs.m.Triggered() {
			turnStops = nil
		}
	}
	var (
		sampler      = sample.New(req.Sampling)
		matcher      = sample.NewStopMatcher(append(slices.Clip(req.Stop), turnStops...))
		dec          = tokenizer.NewStreamDecoder(m.tok)
		history      = append(make([]int32, 0, historyCap(len(prompt), req.MaxTokens, ctxLen)), prompt...)
		raw          []float32
		wantLogprobs = req.Logprobs || req.TopLogprobs > 0
		queue        = newTokenQueue()
		firstAt      time.Time
		finish       = FinishLength
		stopSeq      string
		generated    int
		forcedN      int
		grammarErr   error
		nonFinite    bool // no token could be drawn because the logits are NaN
	)
	if gs != nil {
		dec = tokenizer.NewRawStreamDecoder(m.tok)
	}
	dec.Show(m.reasoningTags...)
	if wantLogprobs {
		raw = make([]float32, len(m.logits))
	}
	jobCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// flush emits what the decoder and the stop matcher hold back.
	flush := func() {
		text, _ := matcher.Push(dec.Flush())
		if text += matcher.Flush(); text != "" {
			queue.push(Token{ID: -1, Text: text})
		}
	}
	// sampleOne draws the next token (-1: none can be drawn).
	sampleOne := func(logits []float32) Token {
		if wantLogprobs {
			copy(raw, logits)
		}
		var id int32
		if gs != nil {
			if wantLogprobs {
				sample.MaskLogits(raw, gs.mask)
			}
			id = sampler.SampleMasked(logits, history, gs.mask)
		} else {
			id = sampler.Sample(logits, history)
		}
		// No token left: every one banned (a bias, a grammar), or logits
		// the model computed as NaN, which is its fault, not the request's.
		if id < 0 && slices.ContainsFunc(logits, func(l float32) bool { return l != l }) {
			nonFinite = true
		}
		tok := Token{ID: id}
		if id >= 0 && wantLogprobs {
			tok.Logprob, tok.Top = m.logprobs(raw, id, req.TopLogprobs)
		}
		return tok
	}
	// emit delivers a generated token and reports whether generation ends
	// with it.
	emit := func(tok Token) bool {
		id := tok.ID
		if id < 0 { // every token banned: nothing can follow
			finish = FinishStop
			flush()
			return true
		}
		if generated == 0 {
			firstAt = time.Now()
		}
		generated++
		history = append(history, id)
		if !req.IgnoreEOS && m.tok.IsEOG(id) {
			finish = FinishStop
			flush()
			return true
		}
		text, stopped := matcher.Push(dec.Add(id))
		tok.Text = text
		queue.push(tok)
		if stopped {
			finish = FinishStop
			if slices.Contains(req.Stop, matcher.Matched()) {
				stopSeq = matcher.Matched()
			}
			return true
		}
		if req.MaxTokens > 0 && generated >= req.MaxTokens {
			flush()
			return true
		}
		if shift.inContext(history) >= ctxLen {
			if !shift.full(generated) { // else runJob shifts and goes on
				flush()
			}
			return true
		}
		return false
	}
	// accept advances the grammar past id and prepares the next mask; it
	// reports whether generation ends (the text is complete).
	accept := func(id int32) bool {
		if err := gs.m.Accept(id); err != nil {
			grammarErr = fmt.Errorf("grammar refused sampled token %d: %w", id, err)
			return true
		}
		if turnStops != nil && gs.m.Triggered() { // constrained from here on
			matcher.SetStops(req.Stop)
			turnStops = nil
		}
		if gs.m.Done() {
			finish = FinishStop
			flush()
			return true
		}
		gs.m.FillMask(gs.mask)
		return false
	}
	job := &sched.Job{
		Prompt:      prompt,
		Namespace:   namespace,
		Priority:    req.Priority,
		Tenant:      req.Tenant,
		Adapters:    req.Adapters,
		OnPrefilled: req.onPrefilled,
		Speculate:   m.requestKinds(req),
	}
	if req.Prediction != "" && job.Speculate&spec.KindLookup != 0 {
		job.Prediction = m.tok.Encode(cutUTF8(req.Prediction, maxPredictionBytes), tokenizer.EncodeOptions{})
	}
	budget := newReasoningBudget(req, m.tok)
	if gs == nil && budget == nil {
		job.Next = func(logits []float32) (int32, bool) {
			tok := sampleOne(logits)
			return tok.ID, emit(tok)
		}
	} else {
		// spent follows the reply's reasoning through token id, sampled or
		// forced (a grammar that writes the opening tag itself must not
		// hide it from the budget), and once the budget is spent closes
		// the block: the tags follow without sampling, computed in the
		// next pass with the token. It reports whether generation ends.
		spent := func(tokens []int32, id int32) ([]int32, bool) {
			if budget == nil || !budget.add(m.tok, id) {
				return tokens, false
			}
			budget.ended()
			for _, id := range budget.closing {
				sampler.Skip()
				forcedN++
				if emit(Token{ID: id}) {
					return tokens, true
				}
				tokens = append(tokens, id)
				if gs != nil && accept(id) {
					return tokens, true
				}
			}
			return tokens, false
		}
		job.NextN = func(logits []float32, tokens []int32) ([]int32, bool) {
			tok := sampleOne(logits)
			if emit(tok) {
				return tokens, true
			}
			tokens = append(tokens, tok.ID)
			if gs != nil && accept(tok.ID) {
				return tokens, true
			}
			var stop bool
			if tokens, stop = spent(tokens, tok.ID); stop {
				return tokens, true
			}
			if gs == nil {
				return tokens, false
			}
			// Tokens the grammar forces follow without sampling: the next
			// forward pass computes them with the sampled one. Sampling
			// one allowed token always gives it, so this changes nothing
			// but the passes, except where logits must be reported.
			for !wantLogprobs {
				id, ok := gs.forced()
				if !ok || m.tok.IsEOG(id) || !canForce(req.Sampling, id) {
					break
				}
				sampler.Skip()
				forcedN++
				if emit(Token{ID: id}) {
					return tokens, true
				}
				tokens = append(tokens, id)
				if accept(id) {
					return tokens, true
				}
				if tokens, stop = spent(tokens, id); stop {
					return tokens, true
				}
			}
			return tokens, false
		}
	}
	if req.PromptOnly { // stop at the first logits: only the keys and values are wanted
		job.Next, job.NextN = func([]float32) (int32, bool) { return 0, true }, nil
	}
	submitted := time.Now()
	done := make(chan error, 1)
	go func() { done <- m.runJob(jobCtx, job, shift, func() []int32 { return history }) }()

	var (
		cbErr   error
		batched []Token
		reply   strings.Builder // what the client got, for WarmFollowUp
	)
	deliver := func() {
		batched = queue.drain(batched)
		for _, t := range batched {
			if cbErr != nil {
				return
			}
			if req.WarmFollowUp {
				reply.WriteString(t.Text)
			}
			if cbErr = onToken(t); cbErr != nil {
				cancel() // the scheduler frees the sequence before its next step
			}
		}
	}
	var runErr error
wait:
	for {
		select {
		case <-queue.signal:
			deliver()
		case runErr = <-done:
			deliver()
			break wait
		}
	}
	// Counters written by Next are safe to read: Run returned.
	res.CachedTokens = job.CachedTokens
	if shift != nil {
		res.ContextShifts, res.ShiftedTokens = shift.shifts, shift.discarded
	}
	res.CompletionTokens = generated
	res.ForcedTokens = forcedN
	res.FinishReason = finish
	res.StopSequence = stopSeq
	res.Speculation = SpecResult{Drafted: job.Spec.Drafted, Accepted: job.Spec.Accepted, Verifications: job.Spec.Verifications,
		PredictionDrafted: job.Spec.PredictionDrafted, PredictionAccepted: job.Spec.PredictionAccepted}
	if !firstAt.IsZero() || !job.Prefilled.IsZero() {
		res.Timings.Prepare = submitted.Sub(start)
	}
	if !job.Prefilled.IsZero() {
		res.Timings.PromptEval = job.Prefilled.Sub(start) // when nothing was generated (PromptOnly)
		res.Timings.Queue = job.Admitted.Sub(submitted)
		res.Timings.Prefill = job.Prefilled.Sub(job.Admitted)
		res.Timings.PrefillSteps = job.PrefillSteps
	}
	if !firstAt.IsZero() {
		res.Timings.TTFT = firstAt.Sub(start)
		res.Timings.PromptEval = res.Timings.TTFT
		res.Timings.Eval = time.Since(firstAt)
		if !job.Prefilled.IsZero() {
			res.Timings.Sample = firstAt.Sub(job.Prefilled)
		}
	}
	res.Timings.Total = time.Since(start)
	if cbErr != nil {
		return res, cbErr
	}
	if runErr != nil {
		return res, runErr
	}
	if grammarErr != nil {
		return res, grammarErr
	}
	if nonFinite {
		return res, ErrNonFinite
	}
	if req.WarmFollowUp {
		m.startWarmFollowUp(req, reply.String())
	}
	return res, nil
}

// maxPredictionBytes bounds the predicted output tokenized for lookup:
// prompt lookup searches the last 8192 positions, which this much text
// fills several times over.
const maxPredictionBytes = 128 << 10

// cutUTF8 is s cut to at most n bytes, at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// requestKinds is the speculation a request may use: the model's kinds,
// narrowed by the request's own, none when it opts out.
func (m *Model) requestKinds(req Request) spec.Kinds {
	if req.NoSpeculation {
		return 0
	}
	k := m.Speculation()
	if req.Speculate != 0 {
		k &= req.Speculate
	}
	return k
}

// historyCap is the capacity a generation's token history needs: the
// prompt and what may follow it, never more than the context holds
// (MaxTokens comes from a client and may be any number).
func historyCap(prompt, maxTokens, ctxLen int) int {
	room := ctxLen - prompt
	if maxTokens > 0 && maxTokens < room {
		room = maxTokens
	}
	return prompt + max(room, 0) + 1
}

// logprobs returns token id's log-probability under logits and the n most
// likely tokens with their text.
func (m *Model) logprobs(logits []float32, id int32, n int) (float32, []TokenLogprob) {
	lp, cands := sample.Logprobs(logits, id, n)
	var top []TokenLogprob
	for _, c := range cands {
		top = append(top, TokenLogprob{ID: c.ID, Text: string(m.tok.TokenBytes(nil, c.ID)), Logprob: c.Logprob})
	}
	return lp, top
}
