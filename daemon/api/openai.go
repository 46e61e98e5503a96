package api

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/engine/toolcall"
	"github.com/ruvllm/ruvllm/ipc"
)

var jsonMarshal = json.Marshal

// openAIRequest converts and validates the shared OpenAI sampling fields.
func openAIRequest(f ipc.SamplingFields) (llm.Request, error) {
	var req llm.Request
	if f.N < 0 || f.N > llm.MaxChoices {
		return req, badParam("n", "must be between 1 and %d, not %d", llm.MaxChoices, f.N)
	}
	p := sample.Params{Temperature: 1, TopP: 1, PresencePenalty: f.PresencePenalty, FrequencyPenalty: f.FrequencyPenalty, RepeatPenalty: f.RepeatPenalty}
	samplingOverrides{temperature: f.Temperature, topP: f.TopP, topK: f.TopK, minP: f.MinP}.apply(&p)
	setSeed(&p, f.Seed)
	if err := checkSampling(p, openAINames); err != nil {
		return req, err
	}
	bias, err := logitBias(f.LogitBias)
	if err != nil {
		return req, err
	}
	p.LogitBias = bias
	if err := checkStops(f.Stop, "stop"); err != nil {
		return req, err
	}
	if err := checkAdapters(f.Adapters, "adapters"); err != nil {
		return req, err
	}
	req.Sampling = p
	req.Stop = f.Stop
	// A limit past the context is no error: generation stops when the
	// context is full, with finish_reason "length" (as llama-server and
	// Ollama do). Nothing is sized from it.
	req.MaxTokens = f.MaxTokens
	if f.MaxTokens < 0 {
		return req, badParam("max_tokens", "must not be negative, not %d", f.MaxTokens)
	}
	if f.MaxCompletion < 0 {
		return req, badParam("max_completion_tokens", "must not be negative, not %d", f.MaxCompletion)
	}
	if f.MaxCompletion > 0 {
		req.MaxTokens = f.MaxCompletion
	}
	req.Priority = f.Priority
	req.IgnoreEOS = f.IgnoreEOS
	if err := speculation(&req, f.Speculation); err != nil {
		return req, err
	}
	if p := f.Prediction; p != nil {
		if p.Type != "content" {
			return req, badParam("prediction.type", "must be \"content\", not %q", p.Type)
		}
		req.Prediction = p.Content
	}
	return req, nil
}

// speculation applies a request's speculation field: "off" (or "none")
// opts out, kinds narrow what the model offers, empty changes nothing.
func speculation(req *llm.Request, s string) error {
	if s == "" {
		return nil
	}
	k, err := spec.ParseKinds(s)
	if err != nil {
		return &requestError{status: http.StatusBadRequest, msg: err.Error(), param: "speculation"}
	}
	req.NoSpeculation, req.Speculate = k == 0, k
	return nil
}

// usage is a reply's usage; predicted adds what became of the request's
// predicted output.
func usage(res llm.Result, predicted bool, reasoning int) ipc.Usage {
	u := ipc.Usage{
		PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
		TotalTokens:         res.PromptTokens + res.CompletionTokens,
		PromptTokensDetails: &ipc.PromptTokensDetails{CachedTokens: res.CachedTokens},
		ContextOverflow:     overflowUsage(res),
	}
	if predicted || reasoning > 0 {
		sp := res.Speculation
		u.CompletionTokensDetails = &ipc.CompletionTokensDetails{AcceptedPredictionTokens: sp.PredictionAccepted,
			RejectedPredictionTokens: sp.PredictionDrafted - sp.PredictionAccepted, ReasoningTokens: reasoning}
	}
	return u
}

// reasoningTokens is the tokens the choices reasoned in.
func reasoningTokens(streams []replyStream) int {
	n := 0
	for _, s := range streams {
		n += s.reasoning
	}
	return n
}

// tokenizerModel is a model whose tokenizer can spell a token id (*llm.Model).
type tokenizerModel interface{ Tokenizer() *tokenizer.Tokenizer }

// tokenLogprob converts a token's log-probabilities. The token's own text
// is its tokenizer piece when the model exposes a tokenizer, else the
// streamed text.
func tokenLogprob(m models.Model, t llm.Token) ipc.TokenLogprob {
	text := t.Text
	if tm, ok := m.(tokenizerModel); ok {
		text = string(tm.Tokenizer().TokenBytes(nil, t.ID))
	}
	tl := ipc.TokenLogprob{Token: text, Logprob: finiteLogprob(t.Logprob), TopLogprobs: []ipc.TopLogprob{}}
	tl.Bytes = []byte(tl.Token)
	for _, c := range t.Top {
		// Under a constraint fewer tokens than asked for may be allowed:
		// the others (-Inf) are no alternatives, and JSON cannot hold them.
		if math.IsInf(float64(c.Logprob), 0) || math.IsNaN(float64(c.Logprob)) {
			continue
		}
		tl.TopLogprobs = append(tl.TopLogprobs, ipc.TopLogprob{Token: c.Text, Logprob: c.Logprob, Bytes: []byte(c.Text)})
	}
	return tl
}

// finiteLogprob is lp, or OpenAI's -9999 for a token of no probability
// (JSON has no -Inf).
func finiteLogprob(lp float32) float32 {
	if math.IsInf(float64(lp), 0) || math.IsNaN(float64(lp)) {
		return -9999
	}
	return lp
}

func (a *API) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var body ipc.ChatCompletionRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	rm, err := a.resolveModel(body.Model)
	if err != nil {
		openAIError(w, err)
		return
	}
	if err := a.loraAsAdapters(&body.SamplingFields); err != nil {
		openAIError(w, err)
		return
	}
	withManifestSampling(rm.man, &body.SamplingFields)
	alias := rm.alias(body.Model)
	body.Model = rm.base
	req, err := openAIRequest(body.SamplingFields)
	if err != nil {
		openAIError(w, err)
		return
	}
	if req.Overflow, err = a.overflowPolicy(body.ContextOverflow, "context_overflow", llm.OverflowDropOldest); err != nil {
		openAIError(w, err)
		return
	}
	if len(body.Messages) == 0 {
		openAIError(w, badParam("messages", "must not be empty"))
		return
	}
	if _, err = chatMessages(body.Messages, "messages"); err != nil {
		openAIError(w, err)
		return
	}
	msgs := withManifestMessages(rm.man, body.Messages)
	if req.Messages, err = chatMessages(msgs, "messages"); err != nil {
		openAIError(w, err)
		return
	}
	if err := setManifestTemplate(rm.man, &req); err != nil {
		openAIError(w, err)
		return
	}
	req.Logprobs = body.Logprobs
	if body.TopLogprobs < 0 || body.TopLogprobs > MaxTopLogprobs {
		openAIError(w, badParam("top_logprobs", "must be between 0 and %d, not %d", MaxTopLogprobs, body.TopLogprobs))
		return
	}
	if body.Logprobs {
		req.TopLogprobs = body.TopLogprobs
	}
	constraint, tools, err := chatOutputControls(body)
	if err != nil {
		openAIError(w, err)
		return
	}
	thinking, err := openAIThinking(body)
	if err != nil {
		openAIError(w, err)
		return
	}
	id, created := newID("chatcmpl-"), time.Now().Unix()
	w.Header().Set(RequestIDHeader, id)
	n := max(body.N, 1)
	var (
		model   models.Model
		name    string
		texts   = make([][]byte, n)
		lps     = make([][]ipc.TokenLogprob, n)
		sse     = &sseWriter{w: w, fl: w.(http.Flusher)}
		oc      = &outputControls{constraint: constraint, tools: tools, thinking: thinking}
		streams = make([]replyStream, n)
	)
	chunk := func(i int, d ipc.Delta, lp *ipc.Logprobs, finish *string) ipc.ChatCompletionChunk {
		return ipc.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: name,
			Choices: []ipc.ChunkChoice{{Index: i, Delta: d, Logprobs: lp, FinishReason: finish}}}
	}
	onTok := func(i int, t llm.Token) error {
		var lp *ipc.TokenLogprob
		if req.Logprobs && t.ID >= 0 && model != nil {
			l := tokenLogprob(model, t)
			lp = &l
		}
		texts[i] = append(texts[i], t.Text...)
		reasoning, text := streams[i].token(t)
		if !body.Stream {
			if lp != nil {
				lps[i] = append(lps[i], *lp)
			}
			return nil
		}
		if text == "" && reasoning == "" && lp == nil {
			return nil
		}
		var l *ipc.Logprobs
		if lp != nil {
			l = &ipc.Logprobs{Content: []ipc.TokenLogprob{*lp}}
		}
		return sse.send(chunk(i, ipc.Delta{Content: text, ReasoningContent: reasoning}, l, nil))
	}
	spec := runSpec{endpoint: "chat.completions", conversation: true, model: body.Model, alias: alias, req: req, adapters: body.Adapters, id: id, n: n, hdr: w.Header(),
		prepare: func(m models.Model, req *llm.Request) error {
			model = m // before onStart, which gets the name the response shows
			return oc.prepare(m, req)
		},
		onStart: func(nm string) {
			name = nm
			for i := range streams {
				streams[i] = oc.newStream()
			}
			if body.Stream {
				for i := range n {
					sse.send(chunk(i, ipc.Delta{Role: "assistant"}, nil, nil))
				}
			}
		},
		onToken:       func(t llm.Token) error { return onTok(0, t) },
		onChoiceToken: onTok,
	}
	out, err := a.run(r.Context(), r, spec)
	if err != nil {
		if !sse.started {
			openAIError(w, err)
		} else if tellClient(r, err) {
			sse.fail(err)
		}
		return
	}
	// Each choice's text splits into reasoning, content and tool calls.
	contents, reasonings := make([]string, n), make([]string, n)
	calls := make([][]toolcall.Call, n)
	resultOf := func(i int) llm.Result {
		if n > 1 {
			return out.choices[i]
		}
		return out.res
	}
	reasonOf := func(i int) llm.FinishReason { return resultOf(i).FinishReason }
	for i := range n {
		var content string
		reasonings[i], content = oc.think.splitReasoning(string(texts[i]))
		if contents[i], calls[i], err = oc.split(content, "call_", resultOf(i)); err != nil {
			if !sse.started {
				openAIError(w, err)
			} else {
				sse.fail(err)
			}
			return
		}
	}
	finishOf := func(i int) string {
		if len(calls[i]) > 0 && reasonOf(i) != llm.FinishLength {
			return "tool_calls"
		}
		return finishReason(reasonOf(i))
	}
	if !body.Stream {
		resp := ipc.ChatCompletionResponse{ID: id, Object: "chat.completion", Created: created, Model: out.name, Usage: usage(out.res, req.Prediction != "", reasoningTokens(streams))}
		for i := range n {
			c := ipc.ChatChoice{Index: i, Message: ipc.Message{Role: "assistant", Content: contents[i], ReasoningContent: reasonings[i],
				ToolCalls: openAIToolCalls(calls[i])}, FinishReason: finishOf(i)}
			if len(calls[i]) == 0 {
				c.Message.ToolCalls = nil
			}
			if req.Logprobs {
				c.Logprobs = &ipc.Logprobs{Content: lps[i]}
				if c.Logprobs.Content == nil {
					c.Logprobs.Content = []ipc.TokenLogprob{}
				}
			}
			resp.Choices = append(resp.Choices, c)
		}
		daemon.WriteJSON(w, http.StatusOK, resp)
		return
	}
	for i := range n {
		if reasoning, rest := streams[i].close(); reasoning != "" || rest != "" {
			sse.send(chunk(i, ipc.Delta{Content: rest, ReasoningContent: reasoning}, nil, nil))
		}
		// Calls stream as OpenAI streams them: a delta naming each call,
		// then its arguments' text.
		for j, c := range calls[i] {
			sse.send(chunk(i, ipc.Delta{ToolCalls: []ipc.ToolCallDelta{{Index: j, ID: c.ID, Type: "function",
				Function: ipc.ToolFunctionDelta{Name: c.Name}}}}, nil, nil))
			sse.send(chunk(i, ipc.Delta{ToolCalls: []ipc.ToolCallDelta{{Index: j,
				Function: ipc.ToolFunctionDelta{Arguments: string(c.Arguments)}}}}, nil, nil))
		}
		sse.send(chunk(i, ipc.Delta{}, nil, strPtr(finishOf(i))))
	}
	if body.StreamOptions != nil && body.StreamOptions.IncludeUsage {
		u := usage(out.res, req.Prediction != "", reasoningTokens(streams))
		sse.send(ipc.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: name, Choices: []ipc.ChunkChoice{}, Usage: &u})
	}
	sse.done()
}

// openAIThinking reads what a chat request asks of a thinking model:
// chat_template_kwargs (enable_thinking and the like reach the template),
// llama-server's reasoning_format, and reasoning_effort "none" (thinking
// off); other efforts cannot be honoured (a model's reasoning has no
// length to set).
func openAIThinking(body ipc.ChatCompletionRequest) (*thinkingSpec, error) {
	for k := range body.ChatTemplateKwargs {
		if slices.Contains(chat.ReservedVars(), k) {
			return nil, badParam("chat_template_kwargs."+k, "is set by the request itself")
		}
	}
	ts := &thinkingSpec{vars: body.ChatTemplateKwargs}
	switch body.ReasoningFormat {
	case "", "auto", "deepseek":
	case "none":
		ts.raw = true
	default:
		return nil, badParam("reasoning_format", "must be \"auto\", \"deepseek\" or \"none\", not %q", body.ReasoningFormat)
	}
	switch body.ReasoningEffort {
	case "":
	case "none":
		ts.want, ts.param = new(false), "reasoning_effort"
	default:
		return nil, badParam("reasoning_effort", "only \"none\" (no reasoning) can be honoured: a thinking model reasons as long as it needs; turn it on or off with chat_template_kwargs.enable_thinking")
	}
	return ts, nil
}

// chatOutputControls reads a chat request's constraint and tools, refusing
// combinations and unsupported fields by name.
func chatOutputControls(body ipc.ChatCompletionRequest) (*constraintSpec, *toolSpec, error) {
	present := func(raw json.RawMessage) bool {
		s := strings.TrimSpace(string(raw))
		return s != "" && s != "null"
	}
	switch {
	case present(body.Functions), present(body.FunctionCall):
		return nil, nil, badParam("functions", "the deprecated functions/function_call are not supported: send tools and tool_choice")
	case present(body.Audio) || slices.ContainsFunc(body.Modalities, func(m string) bool { return m != "text" }):
		return nil, nil, badParam("modalities", "this model writes text only")
	case present(body.WebSearch):
		return nil, nil, badParam("web_search_options", "web search is not supported")
	}
	c, err := completionConstraint(body.ResponseFormat, body.Grammar, body.Regex)
	if err != nil {
		return nil, nil, err
	}
	choice, err := openAIToolChoice(body.ToolChoice)
	if err != nil {
		return nil, nil, err
	}
	if len(body.Tools) == 0 {
		if choice.Mode == toolcall.Required {
			return nil, nil, badParam("tool_choice", "asks for a tool call, but no tools are given")
		}
		return c, nil, nil
	}
	ts := &toolSpec{raw: body.Tools, choice: choice, parallel: body.ParallelToolCalls == nil || *body.ParallelToolCalls, param: "tools"}
	return c, ts, nil
}

// completionConstraint reads an OpenAI body's response_format and
// ruvllm's own grammar or regex, of which at most one may be given.
func completionConstraint(responseFormat json.RawMessage, gbnf, regex string) (*constraintSpec, error) {
	c, err := openAIResponseFormat(responseFormat)
	if err != nil {
		return nil, err
	}
	native, err := nativeConstraint(gbnf, regex)
	if err != nil {
		return nil, err
	}
	if native != nil {
		if c != nil {
			return nil, badParam(native.param, "cannot be combined with response_format")
		}
		c = native
	}
	return c, nil
}

func (a *API) completions(w http.ResponseWriter, r *http.Request) {
	var body ipc.CompletionRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	rm, err := a.resolveModel(body.Model)
	if err != nil {
		openAIError(w, err)
		return
	}
	if err := a.loraAsAdapters(&body.SamplingFields); err != nil {
		openAIError(w, err)
		return
	}
	withManifestSampling(rm.man, &body.SamplingFields)
	req, err := openAIRequest(body.SamplingFields)
	if err != nil {
		openAIError(w, err)
		return
	}
	if req.Overflow, err = a.overflowPolicy(body.ContextOverflow, "context_overflow", llm.OverflowError); err != nil {
		openAIError(w, err)
		return
	}
	req.Prompt, req.Tokens = body.Prompt.Text, body.Prompt.Tokens
	if req.Prompt == "" && len(req.Tokens) == 0 {
		openAIError(w, badParam("prompt", "must not be empty"))
		return
	}
	if body.Logprobs < 0 || body.Logprobs > 5 {
		openAIError(w, badParam("logprobs", "must be between 0 and 5, not %d", body.Logprobs))
		return
	}
	if body.BestOf != nil && *body.BestOf != 1 {
		openAIError(w, badParam("best_of", "must be 1: best_of > 1 is not supported"))
		return
	}
	if body.Suffix != "" {
		if req.Tokens != nil {
			openAIError(w, badParam("suffix", "needs the prompt as text, not token ids"))
			return
		}
		if body.Echo {
			openAIError(w, badParam("echo", "cannot be combined with suffix"))
			return
		}
		req.Suffix = body.Suffix
	}
	if body.Logprobs > 0 {
		req.Logprobs, req.TopLogprobs = true, body.Logprobs
	}
	// max_tokens 0, given, generates nothing: with echo the prompt alone,
	// scored with logprobs (how OpenAI's and vLLM's clients score a text),
	// not a generation until the context is full.
	if body.MaxTokensSent() && body.MaxTokens == 0 {
		req.PromptOnly = true
	}
	constraint, err := completionConstraint(body.ResponseFormat, body.Grammar, body.Regex)
	if err != nil {
		openAIError(w, err)
		return
	}
	n := max(body.N, 1)
	if n > 1 && body.Echo {
		openAIError(w, badParam("echo", "cannot be combined with n > 1"))
		return
	}
	id, created := newID("cmpl-"), time.Now().Unix()
	w.Header().Set(RequestIDHeader, id)
	var (
		name     string
		model    models.Model
		prefix   string                  // the echoed prompt
		promptLP *ipc.CompletionLogprobs // its tokens' logprobs
		startErr error
		texts    = make([][]byte, n)
		lps      = make([]*ipc.CompletionLogprobs, n)
		offsets  = make([]charCount, n) // characters of each choice's tokens so far
		sse      = &sseWriter{w: w, fl: w.(http.Flusher)}
	)
	resp := func(i int, text string, lp *ipc.CompletionLogprobs, finish *string) ipc.CompletionResponse {
		return ipc.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: name,
			Choices: []ipc.CompletionChoice{{Index: i, Text: text, Logprobs: lp, FinishReason: finish}}}
	}
	onStart := func(nm string) {
		name = nm // model is set by prepare, which runs first
		if !body.Echo {
			return
		}
		prefix, promptLP, startErr = a.echoPrompt(r.Context(), model, req, body.Logprobs)
		offsets[0].add(prefix)
		if startErr == nil && body.Stream {
			sse.send(resp(0, prefix, promptLP, nil))
		}
	}
	onTok := func(i int, t llm.Token) error {
		if startErr != nil {
			return startErr
		}
		var lp *ipc.CompletionLogprobs
		if req.Logprobs && t.ID >= 0 && model != nil {
			lp = &ipc.CompletionLogprobs{}
			if !body.Stream {
				if lps[i] == nil {
					lps[i] = &ipc.CompletionLogprobs{}
				}
				lp = lps[i]
			}
			// A token's offset is where its text starts: after the
			// tokens before it, not after the text streamed so far (the
			// decoder holds text back, so a token's own Text may be
			// empty and a later one carry several tokens' text).
			tl := tokenLogprob(model, t)
			lp.Add(tl, offsets[i].next(tl.Token))
			offsets[i].add(tl.Token)
		}
		if !body.Stream {
			texts[i] = append(texts[i], t.Text...)
			return nil
		}
		if t.Text == "" && lp == nil {
			return nil
		}
		return sse.send(resp(i, t.Text, lp, nil))
	}
	out, err := a.run(r.Context(), r, runSpec{endpoint: "completions", model: rm.base, alias: rm.alias(body.Model), req: req, adapters: body.Adapters, id: id, n: n, hdr: w.Header(),
		prepare: func(m models.Model, req *llm.Request) error {
			model = m
			return applyConstraint(m, req, constraint, nil)
		},
		onStart: onStart, onToken: func(t llm.Token) error { return onTok(0, t) }, onChoiceToken: onTok})
	if err == nil {
		err = startErr
	}
	if err != nil {
		if !sse.started {
			openAIError(w, err)
		} else if tellClient(r, err) {
			sse.fail(err)
		}
		return
	}
	finishOf := func(i int) *string {
		if n > 1 {
			return strPtr(finishReason(out.choices[i].FinishReason))
		}
		return strPtr(finishReason(out.res.FinishReason))
	}
	u := usage(out.res, req.Prediction != "", 0)
	if !body.Stream {
		all := ipc.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: name, Usage: &u}
		for i := range n {
			lp := lps[i]
			text := string(texts[i])
			if i == 0 && body.Echo {
				text = prefix + text
				if promptLP != nil {
					if lp != nil {
						promptLP.Tokens = append(promptLP.Tokens, lp.Tokens...)
						promptLP.TokenLogprobs = append(promptLP.TokenLogprobs, lp.TokenLogprobs...)
						promptLP.TopLogprobs = append(promptLP.TopLogprobs, lp.TopLogprobs...)
						promptLP.TextOffset = append(promptLP.TextOffset, lp.TextOffset...)
					}
					lp = promptLP
				}
			}
			all.Choices = append(all.Choices, ipc.CompletionChoice{Index: i, Text: text, Logprobs: lp, FinishReason: finishOf(i)})
		}
		daemon.WriteJSON(w, http.StatusOK, all)
		return
	}
	for i := range n {
		sse.send(resp(i, "", nil, finishOf(i)))
	}
	if body.StreamOptions != nil && body.StreamOptions.IncludeUsage {
		sse.send(ipc.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: name, Choices: []ipc.CompletionChoice{}, Usage: &u})
	}
	sse.done()
}

// scorer is a model that scores prompt tokens (*llm.Model).
type scorer interface {
	ScoreTokens(ctx context.Context, tokens []int32, top int) ([]llm.Token, error)
	PromptTokens(req llm.Request) ([]int32, error)
}

// echoPrompt is what an echoing completion puts before the reply: the
// prompt's text and, when top > 0, its tokens with their log-probabilities
// (the first has none).
func (a *API) echoPrompt(ctx context.Context, m models.Model, req llm.Request, top int) (string, *ipc.CompletionLogprobs, error) {
	sc, ok := m.(scorer)
	tm, ok2 := m.(tokenizerModel)
	if !ok || !ok2 {
		if req.Tokens != nil {
			return "", nil, badParam("echo", "this model cannot echo token-id prompts")
		}
		return req.Prompt, nil, nil
	}
	tokens, err := sc.PromptTokens(req)
	if err != nil {
		return "", nil, err
	}
	tok := tm.Tokenizer()
	// The echoed text is the prompt as the client sent it (for token ids,
	// their text); BOS, which the model adds, is not part of it.
	shown := tokens
	if tok.StartsWithBOS(shown) && req.Tokens == nil {
		shown = shown[1:]
	}
	text := req.Prompt
	if req.Tokens != nil {
		text = tok.Decode(shown, tokenizerDecode)
	}
	if top <= 0 {
		return text, nil, nil
	}
	scored, err := sc.ScoreTokens(ctx, tokens, top)
	if err != nil {
		return "", nil, err
	}
	lp := &ipc.CompletionLogprobs{}
	skip := len(tokens) - len(shown) // the BOS, scored but not shown
	var off charCount
	for i, id := range shown {
		// Each token's text as it stands in the prompt: its bytes, less
		// the space a SentencePiece vocabulary put before the first.
		piece := string(tok.TokenBytes(nil, id))
		if i == 0 && !strings.HasPrefix(text, " ") {
			piece = strings.TrimPrefix(piece, " ")
		}
		if i+skip == 0 {
			lp.AddUnscored(piece, off.next(piece))
		} else {
			tl := tokenLogprob(m, scored[i+skip-1])
			tl.Token, tl.Bytes = piece, []byte(piece)
			lp.Add(tl, off.next(piece))
		}
		off.add(piece)
	}
	return text, lp, nil
}

// getModel answers GET /v1/models/{id}.
func (a *API) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if man, ok := a.fineTunedManifest(canonicalName(id)); ok {
		daemon.WriteJSON(w, http.StatusOK, ipc.ModelCard{ID: man.Name, Object: "model", Created: man.Created.Unix(), OwnedBy: "user"})
		return
	}
	if man, ok := a.manifest(id); ok {
		// A created model (/api/create), while its base is there.
		if rm, err := a.resolveModel(id); err == nil {
			if _, err := a.models.Resolve(rm.base); err == nil {
				daemon.WriteJSON(w, http.StatusOK, ipc.ModelCard{ID: id, Object: "model", Created: man.Created.Unix(), OwnedBy: "ruvllm"})
				return
			}
		}
	}
	list, err := a.models.List()
	if err != nil {
		openAIError(w, err)
		return
	}
	path, err := a.models.Resolve(id)
	if err != nil {
		openAIError(w, err)
		return
	}
	for _, m := range list {
		if m.Path == path {
			daemon.WriteJSON(w, http.StatusOK, ipc.ModelCard{ID: m.Name, Object: "model", Created: m.Modified.Unix(), OwnedBy: "ruvllm"})
			return
		}
	}
	openAIError(w, fmt.Errorf("%w: %q (see GET /v1/models)", models.ErrNotFound, id))
}

func (a *API) listModels(w http.ResponseWriter, r *http.Request) {
	list, err := a.models.List()
	if err != nil {
		openAIError(w, err)
		return
	}
	out := ipc.ModelList{Object: "list", Data: []ipc.ModelCard{}}
	for _, m := range list {
		if a.isBlob(m.Path) {
			continue // the loaded weights of a model created from files
		}
		out.Data = append(out.Data, ipc.ModelCard{ID: m.Name, Object: "model", Created: m.Modified.Unix(), OwnedBy: "ruvllm"})
	}
	// Fine-tuning jobs' adapters are models too, as OpenAI lists them.
	if pool := a.adapterPool(); pool != nil {
		for _, info := range pool.List() {
			if man, ok := a.fineTunedManifest(info.Name); ok {
				out.Data = append(out.Data, ipc.ModelCard{ID: man.Name, Object: "model", Created: man.Created.Unix(), OwnedBy: "user"})
			}
		}
	}
	// Created models, named as /api/tags names them, while their base is
	// there.
	for _, man := range a.manifests() {
		rm, err := a.resolveModel(man.Name)
		if err != nil {
			continue
		}
		if _, err := a.models.Resolve(rm.base); err != nil {
			continue
		}
		id := man.Name
		if !strings.Contains(id, ":") {
			id += ":latest"
		}
		out.Data = append(out.Data, ipc.ModelCard{ID: id, Object: "model", Created: man.Created.Unix(), OwnedBy: "ruvllm"})
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

func (a *API) embeddings(w http.ResponseWriter, r *http.Request) {
	var body ipc.EmbeddingRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	if err := checkEmbeddingInputs(body.Input, "input"); err != nil {
		openAIError(w, err)
		return
	}
	if err := checkEncodingFormat(body.EncodingFormat); err != nil {
		openAIError(w, err)
		return
	}
	if body.Dimensions != nil && *body.Dimensions < 1 {
		openAIError(w, badParam("dimensions", "must be at least 1, not %d", *body.Dimensions))
		return
	}
	rm, err := a.resolveModel(body.Model) // a created model embeds with its base
	if err != nil {
		openAIError(w, err)
		return
	}
	h, err := a.models.AcquireAs(r.Context(), rm.base, psName(rm.alias(body.Model)), nil)
	if err != nil {
		openAIError(w, err)
		return
	}
	defer h.Release()
	if body.Dimensions != nil && *body.Dimensions > h.Model.Info().EmbeddingSize {
		openAIError(w, badParam("dimensions", "%d is more than the model's %d", *body.Dimensions, h.Model.Info().EmbeddingSize))
		return
	}
	vecs, n, err := a.embed(r, h, "embeddings", body.Input, llm.EmbedOptions{})
	if err != nil {
		openAIError(w, err)
		return
	}
	out := ipc.EmbeddingResponse{Object: "list", Model: rm.shown(body.Model, h.Name), Usage: ipc.Usage{PromptTokens: n, TotalTokens: n}}
	for i, v := range vecs {
		if body.Dimensions != nil {
			v = truncateNormalized(v, *body.Dimensions)
		}
		e := ipc.Embedding{Object: "embedding", Index: i, Embedding: v}
		if body.EncodingFormat == "base64" {
			e.Embedding = base64Floats(v)
		}
		out.Data = append(out.Data, e)
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

// truncateNormalized keeps the first n values of v and scales them back
// to unit length (what OpenAI's dimensions does).
func truncateNormalized(v []float32, n int) []float32 {
	v = v[:n]
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	inv := 1 / math.Sqrt(sum)
	out := make([]float32, n)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// base64Floats encodes v as OpenAI's base64 embeddings: little-endian
// float32 values.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// charCount counts the characters (code points) of a text that comes in
// tokens' bytes, for text_offset: a character whose bytes are split
// across tokens counts once, so the tokens after it are not placed one
// character further for each of its pieces.
type charCount struct {
	n       int
	pending []byte // the first bytes of a character split across tokens
}

// next is where a token whose bytes are piece starts, in characters: at
// the character its first bytes complete, if they continue one.
func (c *charCount) next(piece string) int {
	if len(c.pending) > 0 && (piece == "" || utf8.RuneStart(piece[0])) {
		// What was pending is no character's start after all: its bytes
		// are invalid, each a character (U+FFFD) of the text.
		c.n += len(c.pending)
		c.pending = c.pending[:0]
	}
	return c.n
}

// add counts piece's bytes.
func (c *charCount) add(piece string) {
	c.next(piece)
	c.pending = append(c.pending, piece...)
	for len(c.pending) > 0 && utf8.FullRune(c.pending) {
		_, size := utf8.DecodeRune(c.pending)
		c.pending = c.pending[size:]
		c.n++
	}
}
