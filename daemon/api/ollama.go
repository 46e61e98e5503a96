package api

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/engine/toolcall"
	"github.com/ruvllm/ruvllm/ipc"
)

var tokenizerDecode = tokenizer.DecodeOptions{}

// ollamaRequest converts and validates Ollama options, with Ollama's
// defaults.
func ollamaRequest(o *ipc.OllamaOptions) (llm.Request, error) {
	var req llm.Request
	p := sample.Params{Temperature: 0.8, TopK: 40, TopP: 0.9, RepeatPenalty: 1.1, RepeatLastN: 64}
	if o != nil {
		samplingOverrides{temperature: o.Temperature, topP: o.TopP, minP: o.MinP, typicalP: o.TypicalP,
			repeatPenalty: o.RepeatPenalty, topK: o.TopK, repeatLastN: o.RepeatLastN}.apply(&p)
		setSeed(&p, o.Seed)
		p.PresencePenalty, p.FrequencyPenalty = o.PresencePenalty, o.FrequencyPenalty
		if o.NumPredict != nil {
			switch n := *o.NumPredict; {
			case n > 0:
				req.MaxTokens = n
			case n == 0 || n == -1 || n == -2:
				// -1: no limit; -2: until the context is full. Both end
				// when the context is full, as does 0 (the default).
			default:
				return req, badParam("options.num_predict", "must be positive, -1 (no limit) or -2 (fill the context), not %d", n)
			}
		}
		switch {
		case o.Mirostat != nil && *o.Mirostat != 0:
			return req, badParam("options.mirostat", "Mirostat sampling is not supported (use temperature, top_k, top_p, min_p)")
		case o.TFSZ != nil && *o.TFSZ != 1:
			return req, badParam("options.tfs_z", "tail-free sampling is not supported (llama.cpp removed it)")
		case o.PenalizeNewline != nil && *o.PenalizeNewline:
			return req, badParam("options.penalize_newline", "is not supported (Ollama removed it)")
		}
		if o.NumCtx < 0 {
			return req, badParam("options.num_ctx", "must be positive (0: the model's context), not %d", o.NumCtx)
		}
		req.ContextLimit = o.NumCtx
		if err := checkStops(o.Stop, "options.stop"); err != nil {
			return req, err
		}
		if err := checkAdapters(o.Adapters, "options.adapters"); err != nil {
			return req, err
		}
		req.Stop = o.Stop
		if err := speculation(&req, o.Speculation); err != nil {
			return req, err
		}
	}
	if err := checkSampling(p, ollamaNames); err != nil {
		return req, err
	}
	if o != nil {
		penaltiesOffAtZero(&p, o.RepeatLastN)
	}
	req.Sampling = p
	return req, nil
}

// ollamaThink reads Ollama's think: true or false (a thinking model
// reasons, or not, where its template can turn reasoning off); absent, the
// model's default. Levels ("high", "medium", "low") are for models whose
// reasoning has levels, which none here has.
func ollamaThink(think any) (*thinkingSpec, error) {
	ts := &thinkingSpec{param: "think"}
	switch v := think.(type) {
	case nil:
		return ts, nil
	case bool:
		ts.want = &v
		return ts, nil
	case string:
		switch v {
		case "":
			return ts, nil
		case "true", "false":
			ts.want = new(v == "true")
			return ts, nil
		case "high", "medium", "low":
			return nil, badParam("think", "%q: this model's reasoning has no levels (send true or false)", v)
		}
	}
	return nil, badParam("think", "must be true or false")
}

// manifestAdapters are a created model's adapters (none for a plain one).
func manifestAdapters(man *ipc.ModelManifest) []ipc.AdapterRef {
	if man == nil {
		return nil
	}
	return man.Adapters
}

func keepAlive(d *ipc.Duration) *time.Duration {
	if d == nil || !d.Set {
		return nil
	}
	v := d.Duration
	return &v
}

func metrics(out runResult, total time.Duration) ipc.OllamaMetrics {
	t := out.res.Timings
	return ipc.OllamaMetrics{
		TotalDuration: total.Nanoseconds(), LoadDuration: out.load.Nanoseconds(),
		PromptEvalCount: out.res.PromptTokens, PromptEvalDuration: t.PromptEval.Nanoseconds(),
		EvalCount: out.res.CompletionTokens, EvalDuration: t.Eval.Nanoseconds(),
		PromptCachedCount: out.res.CachedTokens, ContextOverflow: overflowUsage(out.res),
		DraftCount: out.res.Speculation.Drafted, DraftAcceptedCount: out.res.Speculation.Accepted,
		DraftVerifyCount: out.res.Speculation.Verifications,
	}
}

// ndjson writes newline-delimited JSON objects, flushing each.
type ndjson struct {
	w       http.ResponseWriter
	started bool
}

func (n *ndjson) send(v any) error {
	if !n.started {
		n.started = true
		n.w.Header().Set("Content-Type", "application/x-ndjson")
		n.w.WriteHeader(http.StatusOK)
	}
	if err := json.NewEncoder(n.w).Encode(v); err != nil {
		return err
	}
	n.w.(http.Flusher).Flush()
	return nil
}

// ollamaModel does what /api/chat and /api/generate check first: the
// model is named and resolves (through its manifest's chain), its
// manifest's parameters fill the request's options. It returns the model
// and the options to use.
func (a *API) ollamaModel(model string, opts *ipc.OllamaOptions) (resolvedModel, *ipc.OllamaOptions, error) {
	if model == "" {
		return resolvedModel{}, nil, badParam("model", "is required")
	}
	rm, err := a.resolveModel(model)
	if err != nil {
		return resolvedModel{}, nil, err
	}
	if opts, err = withManifestOptions(rm.man, opts); err != nil {
		return resolvedModel{}, nil, err
	}
	return rm, opts, nil
}

func (a *API) ollamaChat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var body ipc.OllamaChatRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	rm, opts, err := a.ollamaModel(body.Model, body.Options)
	if err != nil {
		ollamaError(w, err)
		return
	}
	thinking, err := ollamaThink(body.Think)
	if err != nil {
		ollamaError(w, err)
		return
	}
	body.Options = opts
	req, err := ollamaRequest(body.Options)
	if err != nil {
		ollamaError(w, err)
		return
	}
	if req.Overflow, err = a.ollamaOverflow(body.OllamaOverflow, body.Options); err != nil {
		ollamaError(w, err)
		return
	}
	if err := ollamaLogprobs(&req, body.OllamaLogprobFields); err != nil {
		ollamaError(w, err)
		return
	}
	if len(body.Messages) == 0 { // Ollama: an empty chat only loads the model
		a.preload(w, r, rm, body.Model, body.KeepAlive, func(name string) any {
			return ipc.OllamaChatResponse{Model: name, CreatedAt: nowISO(), Message: ipc.Message{Role: "assistant"}, Done: true, DoneReason: "load"}
		})
		return
	}
	if req.Messages, err = chatMessages(body.Messages, "messages"); err != nil {
		ollamaError(w, err)
		return
	}
	msgs := withManifestMessages(rm.man, body.Messages)
	if req.Messages, err = chatMessages(msgs, "messages"); err != nil {
		ollamaError(w, err)
		return
	}
	req.ContinueLast = true // as Ollama: a last assistant message is continued
	if err := setManifestTemplate(rm.man, &req); err != nil {
		ollamaError(w, err)
		return
	}
	constraint, err := ollamaFormat(body.Format)
	if err != nil {
		ollamaError(w, err)
		return
	}
	var tools *toolSpec
	if len(body.Tools) > 0 {
		tools = &toolSpec{raw: body.Tools, choice: toolcall.Choice{Mode: toolcall.Auto}, parallel: true, param: "tools"}
	}
	stream := body.Stream == nil || *body.Stream
	var name string
	nd := &ndjson{w: w}
	var text []byte
	oc := &outputControls{constraint: constraint, tools: tools, thinking: thinking}
	var rs replyStream
	lps := &logprobCollector{on: req.Logprobs}
	id := newID("req-")
	w.Header().Set(RequestIDHeader, id)
	out, err := a.run(r.Context(), r, runSpec{endpoint: "api.chat", conversation: true, model: rm.base, alias: rm.alias(body.Model), keepAlive: keepAlive(body.KeepAlive), req: req,
		adapters: mergeAdapters(manifestAdapters(rm.man), ollamaAdapters(body.Options)), id: id, hdr: w.Header(),
		prepare: func(m models.Model, req *llm.Request) error { lps.model = m; return oc.prepare(m, req) },
		onStart: func(n string) { name, rs = n, oc.newStream() },
		onToken: func(t llm.Token) error {
			text = append(text, t.Text...)
			lps.add(t)
			if !stream {
				return nil
			}
			reasoning, piece := rs.push(t.Text)
			if piece == "" && reasoning == "" {
				return nil
			}
			return nd.send(ipc.OllamaChatResponse{Model: name, CreatedAt: nowISO(),
				Message: ipc.Message{Role: "assistant", Content: piece, Thinking: reasoning}, Logprobs: lps.take()})
		}})
	if err != nil {
		if !nd.started {
			ollamaError(w, err)
		} else if tellClient(r, err) {
			nd.send(map[string]string{"error": err.Error()})
		}
		return
	}
	thought, content := oc.think.splitReasoning(string(text))
	content, calls, err := oc.split(content, "call_", out.res)
	if err != nil {
		if !nd.started {
			ollamaError(w, err)
		} else {
			nd.send(map[string]string{"error": err.Error()})
		}
		return
	}
	final := ipc.OllamaChatResponse{Model: name, CreatedAt: nowISO(), Message: ipc.Message{Role: "assistant", Content: content, Thinking: thought},
		Done: true, DoneReason: finishReason(out.res.FinishReason), OllamaMetrics: metrics(out, time.Since(start)), RequestID: id,
		Logprobs: lps.take()}
	if len(calls) > 0 {
		final.Message.ToolCalls = ollamaToolCalls(calls)
	}
	if stream {
		if reasoning, rest := rs.close(); rest != "" || reasoning != "" {
			nd.send(ipc.OllamaChatResponse{Model: name, CreatedAt: nowISO(), Message: ipc.Message{Role: "assistant", Content: rest, Thinking: reasoning}})
		}
		if len(calls) > 0 { // as Ollama streams them: a message of calls before the end
			nd.send(ipc.OllamaChatResponse{Model: name, CreatedAt: nowISO(), Message: ipc.Message{Role: "assistant", ToolCalls: final.Message.ToolCalls}})
		}
		final.Message.Content, final.Message.Thinking, final.Message.ToolCalls = "", "", nil
		nd.send(final)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, final)
}

func (a *API) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var body ipc.OllamaGenerateRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	rm, opts, err := a.ollamaModel(body.Model, body.Options)
	if err != nil {
		ollamaError(w, err)
		return
	}
	thinking, err := ollamaThink(body.Think)
	if err != nil {
		ollamaError(w, err)
		return
	}
	body.Options = opts
	if len(body.Images) > 0 {
		ollamaError(w, badParam("images", "this model takes no images"))
		return
	}
	req, err := ollamaRequest(body.Options)
	if err != nil {
		ollamaError(w, err)
		return
	}
	if req.Overflow, err = a.ollamaOverflow(body.OllamaOverflow, body.Options); err != nil {
		ollamaError(w, err)
		return
	}
	if err := ollamaLogprobs(&req, body.OllamaLogprobFields); err != nil {
		ollamaError(w, err)
		return
	}
	if body.Prompt == "" && body.System == "" && body.Suffix == "" { // Ollama: load (or unload with keep_alive 0)
		a.preload(w, r, rm, body.Model, body.KeepAlive, func(name string) any {
			return ipc.OllamaGenerateResponse{Model: name, CreatedAt: nowISO(), Done: true, DoneReason: "load"}
		})
		return
	}
	if body.Raw && (body.System != "" || body.Template != "") {
		// As Ollama: a raw prompt is sent as it is, so a system prompt or
		// template the request gives would be dropped without a word.
		field := "system"
		if body.Template != "" {
			field = "template"
		}
		ollamaError(w, badParam(field, "cannot be given with raw: a raw prompt is sent as it is, with no template"))
		return
	}
	if rm.man != nil && body.System == "" {
		body.System = rm.man.System
	}
	if body.Template == "" && rm.man != nil {
		body.Template = rm.man.Template
	}
	switch {
	case body.Suffix != "":
		// Fill in the middle: the prompt is the text before the insertion
		// point, written by a TEMPLATE's .Suffix branch where it has one
		// (as Ollama renders it), else with the model's FIM tokens.
		req.Prompt, req.Suffix = body.Prompt, body.Suffix
		if body.Template != "" {
			t, err := parseGoTemplate(body.Template)
			if err != nil {
				ollamaError(w, badParam("template", "%v", err))
				return
			}
			text, ok, err := t.fillInTheMiddle(body.Prompt, body.Suffix)
			if err != nil {
				ollamaError(w, badParam("template", "%v", err))
				return
			}
			if ok {
				req.Prompt, req.Suffix, req.Raw = text, "", true
			}
		}
	case body.Raw:
		req.Prompt, req.Raw = body.Prompt, true
	default:
		// Like Ollama, a generate prompt is wrapped in the model's chat
		// template (or the request's, or the created model's TEMPLATE) as
		// one user turn, with the system prompt if given.
		if body.Template != "" {
			t, err := parseGoTemplate(body.Template)
			if err != nil {
				ollamaError(w, badParam("template", "%v", err))
				return
			}
			req.Template = t
		}
		if body.System != "" {
			req.Messages = append(req.Messages, chat.Message{Role: "system", Content: body.System})
		}
		req.Messages = append(req.Messages, chat.Message{Role: "user", Content: body.Prompt})
	}
	stream := body.Stream == nil || *body.Stream
	var name string
	nd := &ndjson{w: w}
	var text []byte
	var exchange []int // the context the final object returns
	lps := &logprobCollector{on: req.Logprobs}
	id := newID("req-")
	w.Header().Set(RequestIDHeader, id)
	constraint, err := ollamaFormat(body.Format)
	if err != nil {
		ollamaError(w, err)
		return
	}
	usesChatTemplate := !body.Raw && body.Suffix == "" && body.Template == ""
	var rs replyStream
	oc := &outputControls{constraint: constraint, thinking: thinking}
	spec := runSpec{endpoint: "api.generate", model: rm.base, alias: rm.alias(body.Model), keepAlive: keepAlive(body.KeepAlive), req: req,
		adapters: mergeAdapters(manifestAdapters(rm.man), ollamaAdapters(body.Options)), id: id, hdr: w.Header(),
		retryNoTemplate: usesChatTemplate,
		prepare: func(m models.Model, req *llm.Request) error {
			ctxTokens, err := contextTokens(body.Context, m.Info().VocabSize)
			if err != nil {
				return err
			}
			req.Context, lps.model = ctxTokens, m
			return oc.prepare(m, req)
		},
		onStart: func(n string) { name, rs = n, oc.newStream() },
		done: func(m models.Model, res llm.Result) {
			if !body.Raw {
				exchange = exchangeContext(m, res.Prompt, string(text))
			}
		},
		onToken: func(t llm.Token) error {
			text = append(text, t.Text...)
			lps.add(t)
			if !stream || t.Text == "" {
				return nil
			}
			reasoning, piece := rs.push(t.Text)
			if reasoning == "" && piece == "" {
				return nil
			}
			return nd.send(ipc.OllamaGenerateResponse{Model: name, CreatedAt: nowISO(), Response: piece, Thinking: reasoning, Logprobs: lps.take()})
		}}
	out, err := a.run(r.Context(), r, spec)
	if err != nil && isNoTemplate(err) && usesChatTemplate {
		// A model without a chat template completes the raw prompt.
		spec.req.Messages, spec.req.Prompt, spec.retryNoTemplate = nil, body.Prompt, false
		out, err = a.run(r.Context(), r, spec)
	}
	if err != nil {
		if !nd.started {
			ollamaError(w, err)
		} else if tellClient(r, err) {
			nd.send(map[string]string{"error": err.Error()})
		}
		return
	}
	thought, response := oc.think.splitReasoning(string(text))
	final := ipc.OllamaGenerateResponse{Model: name, CreatedAt: nowISO(), Response: response, Thinking: thought, Done: true,
		DoneReason: finishReason(out.res.FinishReason), OllamaMetrics: metrics(out, time.Since(start)), RequestID: id}
	final.Context, final.Logprobs = exchange, lps.take()
	if stream {
		if reasoning, rest := rs.close(); reasoning != "" || rest != "" {
			nd.send(ipc.OllamaGenerateResponse{Model: name, CreatedAt: nowISO(), Response: rest, Thinking: reasoning})
		}
		final.Response, final.Thinking = "", ""
		nd.send(final)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, final)
}

// ollamaLogprobs applies logprobs and top_logprobs to a request.
func ollamaLogprobs(req *llm.Request, f ipc.OllamaLogprobFields) error {
	if f.TopLogprobs < 0 || f.TopLogprobs > 20 {
		return badParam("top_logprobs", "must be between 0 and 20, not %d", f.TopLogprobs)
	}
	req.Logprobs, req.TopLogprobs = f.Logprobs || f.TopLogprobs > 0, f.TopLogprobs
	return nil
}

// logprobCollector gathers generated tokens' log-probabilities for Ollama's
// objects: each streamed object takes those of the tokens since the last.
type logprobCollector struct {
	on      bool
	model   models.Model
	pending []ipc.OllamaLogprob
}

// add records a generated token's log-probabilities.
func (c *logprobCollector) add(t llm.Token) {
	if !c.on || t.ID < 0 {
		return
	}
	tl := tokenLogprob(c.model, t)
	lp := ipc.OllamaLogprob{OllamaTokenLogprob: ipc.OllamaTokenLogprob{Token: tl.Token, Logprob: float64(tl.Logprob), Bytes: byteInts(tl.Bytes)}}
	for _, c := range tl.TopLogprobs {
		lp.TopLogprobs = append(lp.TopLogprobs, ipc.OllamaTokenLogprob{Token: c.Token, Logprob: float64(c.Logprob), Bytes: byteInts(c.Bytes)})
	}
	c.pending = append(c.pending, lp)
}

// take returns the log-probabilities recorded since the last take.
func (c *logprobCollector) take() []ipc.OllamaLogprob {
	out := c.pending
	c.pending = nil
	return out
}

func byteInts(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// maxContextTokens bounds an Ollama context before the model is known; the
// model's own context length bounds it further.
const maxContextTokens = 1 << 20

// contextTokens checks an Ollama request's context against the model's
// vocabulary.
func contextTokens(ctx []int, vocab int) ([]int32, error) {
	if len(ctx) == 0 {
		return nil, nil
	}
	if len(ctx) > maxContextTokens {
		return nil, badParam("context", "has %d tokens, more than %d", len(ctx), maxContextTokens)
	}
	out := make([]int32, len(ctx))
	for i, id := range ctx {
		if id < 0 || (vocab > 0 && id >= vocab) || id > math.MaxInt32 {
			return nil, badParam("context", "token %d is %d, not in this model's vocabulary [0,%d)", i, id, vocab)
		}
		out[i] = int32(id)
	}
	return out, nil
}

// exchangeContext is the context an Ollama generate response returns: the
// prompt's tokens and the reply's text tokenized after them, as Ollama
// does (nil for a model without a tokenizer).
func exchangeContext(m models.Model, prompt []int32, reply string) []int {
	tm, ok := m.(tokenizerModel)
	if !ok || len(prompt) == 0 {
		return nil
	}
	out := make([]int, 0, len(prompt)+len(reply)/2)
	for _, id := range prompt {
		out = append(out, int(id))
	}
	for _, id := range tm.Tokenizer().Encode(reply, tokenizer.EncodeOptions{}) {
		out = append(out, int(id))
	}
	return out
}

func isNoTemplate(err error) bool { return errors.Is(err, llm.ErrNoTemplate) }

// preload loads a model (or unloads it when keep_alive is 0) without
// generating, as Ollama does for empty requests; resp makes the answer,
// named as generation names it (a created model by its own name, which
// the answer gave as its base's).
func (a *API) preload(w http.ResponseWriter, r *http.Request, rm resolvedModel, requested string, ka *ipc.Duration, resp func(string) any) {
	h, err := a.models.AcquireAs(r.Context(), rm.base, psName(rm.alias(requested)), keepAlive(ka))
	if err != nil {
		ollamaError(w, err)
		return
	}
	name := rm.shown(requested, h.Name)
	h.Release()
	out := resp(name)
	if ka != nil && ka.Set && ka.Duration == 0 {
		switch v := out.(type) {
		case ipc.OllamaChatResponse:
			v.DoneReason = "unload"
			out = v
		case ipc.OllamaGenerateResponse:
			v.DoneReason = "unload"
			out = v
		}
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

// configModel is a model that reports its architecture shape (*llm.Model).
type configModel interface{ Config() model.Config }

func (a *API) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	daemon.WriteJSON(w, http.StatusOK, map[string]string{"version": a.version})
}

func (a *API) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var body ipc.OllamaEmbedRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	if len(body.Input) == 0 || (len(body.Input) == 1 && body.Input[0] == "") {
		// As Ollama: no input loads the model (keep_alive 0 unloads it),
		// how apps warm an embedding model, and embeds nothing.
		rm, err := a.resolveModel(body.Model)
		if err != nil {
			ollamaError(w, err)
			return
		}
		a.preload(w, r, rm, body.Model, body.KeepAlive, func(name string) any {
			return ipc.OllamaEmbedResponse{Model: name, Embeddings: [][]float32{}}
		})
		return
	}
	if err := checkEmbeddingInputs(body.Input, "input"); err != nil {
		ollamaError(w, err)
		return
	}
	if body.Dimensions != nil && *body.Dimensions < 1 {
		ollamaError(w, badParam("dimensions", "must be at least 1, not %d", *body.Dimensions))
		return
	}
	rm, err := a.resolveModel(body.Model)
	if err != nil {
		ollamaError(w, err)
		return
	}
	h, err := a.models.AcquireAs(r.Context(), rm.base, psName(rm.alias(body.Model)), keepAlive(body.KeepAlive))
	if err != nil {
		ollamaError(w, err)
		return
	}
	defer h.Release()
	if body.Dimensions != nil && *body.Dimensions > h.Model.Info().EmbeddingSize {
		ollamaError(w, badParam("dimensions", "%d is more than the model's %d", *body.Dimensions, h.Model.Info().EmbeddingSize))
		return
	}
	vecs, n, err := a.embed(r, h, "api.embed", body.Input, llm.EmbedOptions{Truncate: body.Truncate == nil || *body.Truncate})
	if err != nil {
		ollamaError(w, err)
		return
	}
	if body.Dimensions != nil {
		for i, v := range vecs {
			vecs[i] = truncateNormalized(v, *body.Dimensions)
		}
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.OllamaEmbedResponse{Model: rm.shown(body.Model, h.Name), Embeddings: vecs, PromptEvalCount: n,
		TotalDuration: max(time.Since(start).Nanoseconds(), 1), LoadDuration: h.LoadTime.Nanoseconds()})
}

// ollamaAdapters returns the adapters named in options.adapters.
func ollamaAdapters(o *ipc.OllamaOptions) []ipc.AdapterRef {
	if o == nil {
		return nil
	}
	return o.Adapters
}
