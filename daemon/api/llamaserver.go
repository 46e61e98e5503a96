package api

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/ipc"
)

// This file serves llama.cpp's own server API (llama-server): /completion
// (and /completions), /infill, /tokenize, /detokenize, /apply-template,
// /embedding, /lora-adapters, /props and /health (/v1/health is the
// daemon's own), and OpenAI's chat completions and model list without
// their /v1 prefix, with llama-server's field names, defaults and
// response shapes, so its clients (llama.vim, llama.vscode, SillyTavern,
// scripts written for llama-server) run unchanged against the shared
// daemon. A request may name a model ("model"); without one the daemon's
// default answers, as llama-server's one model does.

// registerLlamaServer adds the llama-server routes.
func (a *API) registerLlamaServer(srv *daemon.Server) {
	srv.Handle("POST /completion", http.HandlerFunc(a.llamaCompletion))
	srv.Handle("POST /completions", http.HandlerFunc(a.llamaCompletion))
	srv.Handle("POST /infill", http.HandlerFunc(a.llamaInfill))
	srv.Handle("POST /tokenize", http.HandlerFunc(a.llamaTokenize))
	srv.Handle("POST /detokenize", http.HandlerFunc(a.llamaDetokenize))
	srv.Handle("POST /apply-template", http.HandlerFunc(a.chatTemplate))
	srv.Handle("GET /props", http.HandlerFunc(a.llamaProps))
	srv.Handle("GET /health", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		daemon.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	srv.Handle("POST /embedding", http.HandlerFunc(a.llamaEmbedding))
	srv.Handle("POST /embeddings", http.HandlerFunc(a.llamaEmbedding))
	srv.Handle("GET /lora-adapters", http.HandlerFunc(a.llamaGetLora))
	srv.Handle("POST /lora-adapters", http.HandlerFunc(a.llamaPostLora))
	// llama-server also serves OpenAI's routes without the /v1 prefix.
	srv.Handle("POST /chat/completions", http.HandlerFunc(a.chatCompletions))
	srv.Handle("GET /models", http.HandlerFunc(a.listModels))
	// The root answers as Ollama's does: the ollama CLI's heartbeat
	// (HEAD /, before list, run, ps, show, ...) and apps that check that
	// a server is up GET it, and take any error status for none.
	srv.Handle("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Ollama is running")
	}))
	// Any other route (llama-server's /slots, a method a route does not
	// take) is a 404 in llama-server's (OpenAI's) error shape, not Go's
	// plain text.
	srv.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		openAIError(w, &requestError{status: http.StatusNotFound, msg: fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path)})
	}))
}

// llamaDefaults are llama-server's sampling defaults for /completion.
var llamaDefaults = sample.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64}

// llamaSamplers are the sampler names llama-server's "samplers" takes (and
// their other spellings), by what each one switches on.
var llamaSamplers = map[string]string{
	"top_k": "top_k", "top-k": "top_k", "k": "top_k",
	"top_p": "top_p", "top-p": "top_p", "nucleus": "top_p", "p": "top_p",
	"min_p": "min_p", "min-p": "min_p", "m": "min_p",
	"typ_p": "typ_p", "typical_p": "typ_p", "typical": "typ_p", "y": "typ_p",
	"temperature": "temperature", "temp": "temperature", "t": "temperature",
	"penalties": "penalties", "e": "penalties",
	// On only with their own parameters, which are refused when set.
	"dry": "", "d": "", "xtc": "", "x": "", "infill": "", "i": "", "top_n_sigma": "", "s": "",
}

// llamaBias is one logit_bias entry before the model is known: a token id
// or a text whose tokens all get the bias.
type llamaBias struct {
	id     int64
	text   string
	isText bool
	bias   float32
}

// llamaPlan is a /completion request checked and converted, before the
// model is known.
type llamaPlan struct {
	req      llm.Request
	bias     []llamaBias
	nPredict int // as the client sent it (-1: no bound)
	samplers []string
}

// llamaRequest checks and converts a /completion body's generation fields.
func llamaRequest(b *ipc.LlamaCompletionRequest) (*llamaPlan, error) {
	plan := &llamaPlan{nPredict: -1}
	p := llamaDefaults
	samplingOverrides{temperature: b.Temperature, topP: b.TopP, minP: b.MinP, typicalP: b.TypicalP,
		repeatPenalty: b.RepeatPenalty, topK: b.TopK, repeatLastN: b.RepeatLastN}.apply(&p)
	p.PresencePenalty, p.FrequencyPenalty = b.PresencePenalty, b.FrequencyPenalty
	if p.Temperature < 0 { // llama-server: a negative temperature samples greedily
		p.Temperature = 0
	}
	if p.TopK < 0 { // llama-server: top_k <= 0 is off
		p.TopK = 0
	}
	setSeed(&p, b.Seed)
	switch {
	case b.DynatempRange != 0:
		return nil, badParam("dynatemp_range", "dynamic temperature is not supported (leave it 0)")
	case b.DryMultiplier != 0:
		return nil, badParam("dry_multiplier", "DRY sampling is not supported (leave it 0; repeat_penalty, presence_penalty and frequency_penalty are)")
	case b.XTCProbability != 0:
		return nil, badParam("xtc_probability", "XTC sampling is not supported (leave it 0)")
	case b.TopNSigma > 0:
		return nil, badParam("top_n_sigma", "top-n-sigma sampling is not supported (leave it -1 or 0)")
	case b.Mirostat != 0:
		return nil, badParam("mirostat", "Mirostat sampling is not supported (use temperature, top_k, top_p, min_p)")
	case b.NCmpl > 1:
		return nil, badParam("n_cmpl", "more than one completion a request is not supported here (/v1/completions takes n)")
	case b.PostSamplingProbs:
		return nil, badParam("post_sampling_probs", "is not supported: n_probs reports the model's probabilities before sampling")
	case b.NProbs < 0 || b.NProbs > 20:
		return nil, badParam("n_probs", "must be between 0 and 20, not %d", b.NProbs)
	case b.NIndent < 0:
		return nil, badParam("n_indent", "must not be negative, not %d", b.NIndent)
	case b.TMaxPredictMS < 0 || b.TMaxPredictMS > maxTimeLimitMS:
		return nil, badParam("t_max_predict_ms", "must be between 0 and %d (a day), not %d", maxTimeLimitMS, b.TMaxPredictMS)
	}
	if err := checkLlamaLora(b.Lora, b.Adapters); err != nil {
		return nil, err
	}
	if b.Samplers != nil {
		on := map[string]bool{}
		for i, name := range b.Samplers {
			kind, ok := llamaSamplers[strings.ToLower(name)]
			if !ok {
				return nil, badParam(fmt.Sprintf("samplers[%d]", i), "%q is not a sampler (top_k, top_p, min_p, typ_p, temperature, penalties)", name)
			}
			on[kind] = true
		}
		if !on["top_k"] {
			p.TopK = 0
		}
		if !on["top_p"] {
			p.TopP = 1
		}
		if !on["min_p"] {
			p.MinP = 0
		}
		if !on["typ_p"] {
			p.TypicalP = 1
		}
		if !on["penalties"] {
			p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty = 1, 0, 0
		}
		if !on["temperature"] && p.Temperature > 0 { // the distribution as the model gives it
			p.Temperature = 1
		}
		plan.samplers = b.Samplers
	}
	if err := checkSampling(p, llamaNames); err != nil {
		return nil, err
	}
	penaltiesOffAtZero(&p, b.RepeatLastN)
	bias, err := llamaLogitBias(b.LogitBias)
	if err != nil {
		return nil, err
	}
	plan.bias = bias
	if err := checkStops(b.Stop, "stop"); err != nil {
		return nil, err
	}
	if err := checkAdapters(b.Adapters, "adapters"); err != nil {
		return nil, err
	}
	req := &plan.req
	req.Sampling, req.Stop, req.IgnoreEOS = p, b.Stop, b.IgnoreEOS
	n := b.NPredict
	if n == nil {
		n = b.MaxTokens
	}
	if n != nil {
		switch {
		case *n > 0:
			req.MaxTokens = *n
		case *n == 0:
			req.PromptOnly = true
		case *n < -2:
			return nil, badParam("n_predict", "must be -1 (no limit), -2 (until the context is full: the same here), 0 (evaluate the prompt only) or positive, not %d", *n)
		}
		plan.nPredict = *n
	}
	if b.NProbs > 0 {
		req.Logprobs, req.TopLogprobs = true, b.NProbs
	}
	return plan, nil
}

// maxTimeLimitMS bounds t_max_predict_ms, which becomes a Duration.
const maxTimeLimitMS = 24 * 60 * 60 * 1000

// llamaNames are how llama-server names the sampling fields (any
// temperature is allowed, as there).
var llamaNames = samplingNames{maxTemperature: math.MaxFloat32}

// llamaLogitBias reads llama-server's logit_bias: [[id or text, bias or
// false], ...] or {"id or text": bias}; false bans the token.
func llamaLogitBias(raw json.RawMessage) ([]llamaBias, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	entry := func(key json.RawMessage, val json.RawMessage, at string) (llamaBias, error) {
		var e llamaBias
		var text string
		if err := json.Unmarshal(key, &e.id); err != nil {
			if err := json.Unmarshal(key, &text); err != nil {
				return e, badParam(at, "must start with a token id or a text, not %s", key)
			}
			e.text, e.isText = text, true
		}
		var ban bool
		if err := json.Unmarshal(val, &ban); err == nil {
			if ban {
				return e, badParam(at, "takes a bias or false (never produce the token), not true")
			}
			e.bias = float32(math.Inf(-1))
			return e, nil
		}
		var f float64
		if err := json.Unmarshal(val, &f); err != nil || math.Abs(f) > MaxBias {
			return e, badParam(at, "takes a bias between -%d and %d or false, not %s", MaxBias, MaxBias, val)
		}
		e.bias = float32(f)
		return e, nil
	}
	var out []llamaBias
	if s[0] == '{' {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, badParam("logit_bias", "must be an array of [token, bias] pairs or an object")
		}
		if len(m) > MaxLogitBias {
			return nil, badParam("logit_bias", "may hold at most %d entries, not %d", MaxLogitBias, len(m))
		}
		for k, v := range m {
			key, _ := json.Marshal(k)
			if _, err := strconv.ParseInt(k, 10, 64); err == nil {
				key = []byte(k)
			}
			e, err := entry(key, v, fmt.Sprintf("logit_bias[%q]", k))
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	var pairs []json.RawMessage
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, badParam("logit_bias", "must be an array of [token, bias] pairs or an object")
	}
	if len(pairs) > MaxLogitBias {
		return nil, badParam("logit_bias", "may hold at most %d entries, not %d", MaxLogitBias, len(pairs))
	}
	for i, raw := range pairs {
		at := fmt.Sprintf("logit_bias[%d]", i)
		var pair []json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return nil, badParam(at, "must be a [token, bias] pair, not %s", raw)
		}
		e, err := entry(pair[0], pair[1], at)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// llamaConstraint reads grammar and json_schema.
func llamaConstraint(b *ipc.LlamaCompletionRequest) (*constraintSpec, error) {
	schema := strings.TrimSpace(string(b.JSONSchema))
	if schema == "null" {
		schema = ""
	}
	rf, err := openAIResponseFormat(b.ResponseFormat)
	if err != nil {
		return nil, err
	}
	switch {
	case rf != nil && (schema != "" || b.Grammar != ""):
		return nil, badParam("response_format", "cannot be combined with json_schema or grammar")
	case rf != nil:
		return rf, nil
	case schema != "" && b.Grammar != "":
		return nil, badParam("json_schema", "cannot be combined with grammar")
	case schema != "":
		if schema[0] != '{' {
			return nil, badParam("json_schema", "must be a JSON Schema object")
		}
		return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindJSONSchema, Source: schema}, param: "json_schema"}, nil
	}
	return nativeConstraint(b.Grammar, "")
}

// llamaTokenizer is the tokenizer of a model that has one, or a 400.
func llamaTokenizer(m models.Model) (*tokenizer.Tokenizer, error) {
	tm, ok := m.(tokenizerModel)
	if !ok {
		return nil, &requestError{status: http.StatusBadRequest, msg: "this model has no tokenizer"}
	}
	return tm.Tokenizer(), nil
}

// llamaPromptTokens tokenizes a llama-server prompt as llama-server does:
// text with special tokens parsed, BOS first when the model adds it and
// the prompt starts with text; token ids as they are.
func llamaPromptTokens(tok *tokenizer.Tokenizer, parts []ipc.LlamaPromptPart, vocab int, param string, addSpecial, parseSpecial bool) ([]int32, error) {
	var out []int32
	for i, part := range parts {
		if part.IsToken {
			if part.Token < 0 || part.Token >= int64(vocab) {
				return nil, badParam(fmt.Sprintf("%s[%d]", param, i), "token %d is not in this model's vocabulary [0,%d)", part.Token, vocab)
			}
			out = append(out, int32(part.Token))
			continue
		}
		out = append(out, tok.Encode(part.Text, tokenizer.EncodeOptions{AddSpecial: addSpecial && i == 0, ParseSpecial: parseSpecial})...)
	}
	return out, nil
}

// applyLlamaBias resolves logit_bias once the tokenizer is known.
func applyLlamaBias(tok *tokenizer.Tokenizer, req *llm.Request, bias []llamaBias) error {
	if len(bias) == 0 {
		return nil
	}
	out := map[int32]float32{}
	for _, e := range bias {
		if !e.isText {
			if e.id < 0 || e.id > math.MaxInt32 {
				return badParam("logit_bias", "names token id %d, outside the model's vocabulary", e.id)
			}
			out[int32(e.id)] = e.bias
			continue
		}
		for _, id := range tok.Encode(e.text, tokenizer.EncodeOptions{}) {
			out[id] = e.bias
		}
	}
	if len(out) > MaxLogitBias {
		return badParam("logit_bias", "names %d tokens, more than %d", len(out), MaxLogitBias)
	}
	req.Sampling.LogitBias = out
	return nil
}

// lineLimits applies n_indent and t_max_predict_ms to the text as it is
// generated, as llama-server does: once the reply has a new line, a line
// that starts (its first character that is not a space or tab) less
// indented than n_indent ends it there, and a new line after
// t_max_predict_ms of generation ends it after that line.
type lineLimits struct {
	indent  int
	maxTime time.Duration
	first   time.Time
	newLine bool   // the reply has a new line
	line    []byte // the current line's leading blanks, held back
	inLine  bool   // past the current line's blanks
}

// push takes a token's text and returns what to deliver and whether the
// reply ends.
func (l *lineLimits) push(text string) (string, bool) {
	if l.first.IsZero() {
		l.first = time.Now()
	}
	out := text
	if l.indent > 0 {
		var short bool
		if out, short = l.indented(text); short {
			return out, true
		}
	}
	return out, strings.Contains(text, "\n") && l.maxTime > 0 && time.Since(l.first) > l.maxTime
}

// indented passes text through n_indent: it holds back a new line's
// leading blanks until the line's first character shows its indentation,
// and reports a line indented less than n_indent (the text up to that
// character delivered, llama-server keeping the blanks).
func (l *lineLimits) indented(text string) (string, bool) {
	var out strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			out.Write(l.line)
			l.line = l.line[:0]
			out.WriteByte(c)
			l.newLine, l.inLine = true, false
		case !l.newLine || l.inLine:
			out.WriteByte(c)
		case c == ' ' || c == '\t':
			l.line = append(l.line, c)
		default: // the line's first character
			short := len(l.line) < l.indent
			out.Write(l.line)
			l.line = l.line[:0]
			if short {
				return out.String(), true
			}
			out.WriteByte(c)
			l.inLine = true
		}
	}
	return out.String(), false
}

// flush returns the blanks still held back.
func (l *lineLimits) flush() string {
	s := string(l.line)
	l.line = l.line[:0]
	return s
}

// llamaTokenProb converts a token's log-probabilities.
func llamaTokenProb(tok *tokenizer.Tokenizer, t llm.Token) ipc.LlamaTokenProb {
	piece := func(id int32) (string, []int) {
		b := tok.TokenPiece(nil, id)
		return string(b), byteInts(b)
	}
	p := ipc.LlamaTokenProb{ID: t.ID, Logprob: finiteLogprob(t.Logprob), TopLogprobs: []ipc.LlamaTokenProb{}}
	p.Token, p.Bytes = piece(t.ID)
	for _, c := range t.Top {
		tp := ipc.LlamaTokenProb{ID: c.ID, Logprob: finiteLogprob(c.Logprob)}
		tp.Token, tp.Bytes = piece(c.ID)
		p.TopLogprobs = append(p.TopLogprobs, tp)
	}
	return p
}

// llamaCall is one /completion or /infill request in flight.
type llamaCall struct {
	body     *ipc.LlamaCompletionRequest
	plan     *llamaPlan
	endpoint string
	// alias is the created model the client named (its base runs, with
	// its adapters), for the replies.
	alias string
	// constraint is the request's grammar or JSON Schema.
	constraint *constraintSpec
	// tokens builds prompt i once the model is known.
	tokens func(m models.Model, tok *tokenizer.Tokenizer, i int) ([]int32, error)
	// record, when set, is the prompt text the request's record keeps
	// (infill: the text before the insertion point, as /v1/completions
	// with a suffix keeps it); else the prompt's tokens as text.
	record string
}

// maxLlamaPrompts bounds the prompts of one /completion request.
const maxLlamaPrompts = 16

func (a *API) llamaCompletion(w http.ResponseWriter, r *http.Request) {
	var body ipc.LlamaCompletionRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	switch n := len(body.Prompt.Prompts); {
	case !body.Prompt.Set:
		openAIError(w, badParam("prompt", "is required"))
		return
	case n > maxLlamaPrompts:
		openAIError(w, badParam("prompt", "holds %d prompts; at most %d are allowed in one request", n, maxLlamaPrompts))
		return
	}
	a.llamaServe(w, r, &llamaCall{body: &body, endpoint: "completion",
		tokens: func(m models.Model, tok *tokenizer.Tokenizer, i int) ([]int32, error) {
			param := "prompt"
			if len(body.Prompt.Prompts) > 1 {
				param = fmt.Sprintf("prompt[%d]", i)
			}
			ids, err := llamaPromptTokens(tok, body.Prompt.Prompts[i], m.Info().VocabSize, param, true, true)
			if err == nil && len(ids) == 0 {
				err = badParam(param, "must not be empty")
			}
			return ids, err
		}})
}

// llamaServe runs a /completion or /infill request, one generation a
// prompt (several run at once, batched by the scheduler), and writes the
// answer in llama-server's shape: an object, or an array of them for
// several prompts; streamed, every prompt's events as they come, each
// with its index.
func (a *API) llamaServe(w http.ResponseWriter, r *http.Request, c *llamaCall) {
	// A created model runs its base with its adapters, and its parameters
	// fill what the request leaves unset, as on the OpenAI and Ollama
	// endpoints. Its system prompt, messages and template do not apply to
	// a raw prompt.
	rm, err := a.resolveModel(c.body.Model)
	if err != nil {
		openAIError(w, err)
		return
	}
	if err := withManifestLlama(rm.man, c.body); err != nil {
		openAIError(w, err)
		return
	}
	if c.plan, err = llamaRequest(c.body); err != nil {
		openAIError(w, err)
		return
	}
	if c.constraint, err = llamaConstraint(c.body); err != nil {
		openAIError(w, err)
		return
	}
	if len(c.body.Lora) > 0 {
		if c.body.Adapters, err = a.llamaLoraRefs(c.body.Lora); err != nil {
			openAIError(w, err)
			return
		}
	}
	if rm.man != nil {
		c.alias, c.body.Model = c.body.Model, rm.base
		c.body.Adapters = mergeAdapters(rm.man.Adapters, c.body.Adapters)
	}
	n := max(len(c.body.Prompt.Prompts), 1)
	var (
		mu     sync.Mutex
		sse    = &sseWriter{w: w, fl: w.(http.Flusher)}
		finals = make([]*ipc.LlamaCompletionResponse, n)
		errs   = make([]error, n)
		wg     sync.WaitGroup
	)
	send := func(v any) error {
		mu.Lock()
		defer mu.Unlock()
		return sse.send(v)
	}
	id := newID("cmpl-")
	header := w.Header()
	header.Set(RequestIDHeader, id)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rid, hdr := id, header
			if n > 1 { // each prompt is its own record; the header is the first's
				rid, hdr = fmt.Sprintf("%s-%d", id, i), nil
			}
			finals[i], errs[i] = a.llamaRun(r, c, i, rid, hdr, send)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !sse.started {
			openAIError(w, err)
		} else if tellClient(r, err) {
			_, eb := openAIErrorBody(err)
			send(eb)
		}
		return
	}
	out := make([]any, n)
	for i, f := range finals {
		out[i] = any(f)
		if len(c.body.ResponseFields) > 0 {
			out[i] = llamaResponseFields(f, c.body.ResponseFields)
		}
	}
	switch {
	case c.body.Stream:
		for _, v := range out {
			send(v)
		}
	case n == 1:
		daemon.WriteJSON(w, http.StatusOK, out[0])
	default:
		daemon.WriteJSON(w, http.StatusOK, out)
	}
}

// llamaRun generates for prompt i, streaming its events through send, and
// returns its final object.
func (a *API) llamaRun(r *http.Request, c *llamaCall, index int, id string, hdr http.Header, send func(any) error) (*ipc.LlamaCompletionResponse, error) {
	body, plan := c.body, c.plan
	var (
		name      string
		tok       *tokenizer.Tokenizer
		nCtx      int
		evaluated int
		content   strings.Builder
		generated []int32
		probs     []ipc.LlamaTokenProb
		hitLimit  bool
		limits    = &lineLimits{indent: body.NIndent, maxTime: time.Duration(body.TMaxPredictMS) * time.Millisecond}
	)
	deliver := func(text string, t llm.Token) error {
		content.WriteString(text)
		if !body.Stream || (text == "" && t.ID < 0) {
			return nil
		}
		ev := ipc.LlamaCompletionResponse{Index: index, Content: text, Tokens: []int32{}, TokensPredicted: len(generated), TokensEvaluated: evaluated}
		if t.ID >= 0 {
			ev.Tokens = []int32{t.ID}
			if plan.req.Logprobs {
				ev.Probabilities = []ipc.LlamaTokenProb{llamaTokenProb(tok, t)}
			}
		}
		return send(ev)
	}
	spec := runSpec{endpoint: c.endpoint, model: body.Model, alias: c.alias, req: plan.req, adapters: body.Adapters, id: id, hdr: hdr,
		prepare: func(m models.Model, req *llm.Request) error {
			var err error
			if tok, err = llamaTokenizer(m); err != nil {
				return err
			}
			if req.Tokens, err = c.tokens(m, tok, index); err != nil {
				return err
			}
			// The prompt's text, for the request's record (feedback learns
			// from it, tokenizing it as a plain prompt): without BOS and
			// special tokens' text, as a client wrote it.
			if req.Prompt = c.record; req.Prompt == "" {
				text := req.Tokens
				if tok.StartsWithBOS(text) {
					text = text[1:]
				}
				req.Prompt = tok.Decode(text, tokenizer.DecodeOptions{})
			}
			evaluated, nCtx = len(req.Tokens), m.Info().ContextLength
			if err := applyLlamaBias(tok, req, plan.bias); err != nil {
				return err
			}
			if err := checkLogitBias(req.Sampling.LogitBias, m.Info().VocabSize); err != nil {
				return err
			}
			return applyConstraint(m, req, c.constraint, nil)
		},
		onStart: func(n string) { name = n },
		onToken: func(t llm.Token) error {
			if t.ID >= 0 {
				generated = append(generated, t.ID)
				if plan.req.Logprobs && !body.Stream {
					probs = append(probs, llamaTokenProb(tok, t))
				}
			}
			text, end := limits.push(t.Text)
			if err := deliver(text, t); err != nil {
				return err
			}
			if end {
				hitLimit = true
				return errStopReply
			}
			return nil
		}}
	out, err := a.run(r.Context(), r, spec)
	if err != nil {
		return nil, err
	}
	if !hitLimit {
		if rest := limits.flush(); rest != "" {
			deliver(rest, llm.Token{ID: -1})
		}
	}
	res := out.res
	stopType := "limit"
	switch {
	case hitLimit:
	case res.FinishReason == llm.FinishStop && res.StopSequence != "":
		stopType = "word"
	case res.FinishReason == llm.FinishStop:
		stopType = "eos"
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	processed := res.PromptTokens - res.CachedTokens
	tm := &ipc.LlamaTimings{CacheN: res.CachedTokens, PromptN: processed, PromptMS: ms(res.Timings.PromptEval),
		PredictedN: res.CompletionTokens, PredictedMS: ms(res.Timings.Eval),
		DraftN: res.Speculation.Drafted, DraftNAccepted: res.Speculation.Accepted}
	if processed > 0 && tm.PromptMS > 0 {
		tm.PromptPerTokenMS, tm.PromptPerSecond = tm.PromptMS/float64(processed), 1000*float64(processed)/tm.PromptMS
	}
	if res.CompletionTokens > 0 && tm.PredictedMS > 0 {
		tm.PredictedPerTokenMS, tm.PredictedPerSecond = tm.PredictedMS/float64(res.CompletionTokens), 1000*float64(res.CompletionTokens)/tm.PredictedMS
	}
	settings := llamaSettings(plan, body, nCtx, name)
	text := content.String()
	prompt := tok.Decode(res.Prompt, tokenizer.DecodeOptions{Special: true})
	final := &ipc.LlamaCompletionResponse{Index: index, Content: text, Tokens: []int32{}, Stop: true, Model: name,
		TokensPredicted: res.CompletionTokens, TokensEvaluated: res.PromptTokens, GenerationSettings: settings,
		Prompt: &prompt, HasNewLine: ptr(strings.Contains(text, "\n")),
		Truncated: ptr(res.TruncatedTokens > 0 || res.ContextShifts > 0), StopType: stopType,
		StoppingWord: &res.StopSequence, TokensCached: &res.CachedTokens, Timings: tm, RequestID: id}
	switch {
	case body.Stream:
		final.Content = ""
	case body.ReturnTokens:
		final.Tokens = generated
	}
	if !body.Stream {
		final.Probabilities = probs
	}
	return final, nil
}

// llamaSettings are the settings a /completion ran with, as llama-server
// reports them.
func llamaSettings(plan *llamaPlan, body *ipc.LlamaCompletionRequest, nCtx int, model string) *ipc.LlamaGenerationSettings {
	p := plan.req.Sampling
	seed := uint64(math.MaxUint32) // llama-server's "random"
	if p.Seeded {
		seed = p.Seed
	}
	s := &ipc.LlamaGenerationSettings{NCtx: nCtx, NPredict: plan.nPredict, Model: model, Seed: seed,
		Temperature: p.Temperature, TopK: p.TopK, TopP: shownP(p.TopP), MinP: p.MinP, TypicalP: 1,
		RepeatLastN: p.RepeatLastN, RepeatPenalty: p.RepeatPenalty, PresencePenalty: p.PresencePenalty,
		FrequencyPenalty: p.FrequencyPenalty, Stop: append([]string{}, plan.req.Stop...), NKeep: body.NKeep,
		IgnoreEOS: body.IgnoreEOS, Stream: body.Stream, NProbs: body.NProbs, NIndent: body.NIndent,
		TMaxPredictMS: body.TMaxPredictMS, Grammar: body.Grammar, Samplers: plan.samplers}
	if p.TypicalP > 0 && p.TypicalP < 1 {
		s.TypicalP = shownP(p.TypicalP)
	}
	if s.Samplers == nil {
		s.Samplers = []string{"penalties", "top_k", "typ_p", "top_p", "min_p", "temperature"}
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// llamaResponseFields keeps only the named fields of a response; a name
// with slashes reaches into a nested object and puts the value at the top
// under that name, as llama-server's response_fields does.
func llamaResponseFields(v any, fields []string) map[string]any {
	b, _ := json.Marshal(v)
	var all map[string]any
	json.Unmarshal(b, &all)
	out := map[string]any{}
	for _, f := range fields {
		segs := strings.Split(f, "/")
		var cur any = all
		for _, s := range segs {
			obj, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			if cur, ok = obj[s]; !ok {
				break
			}
		}
		if cur != nil {
			out[f] = cur
		}
	}
	return out
}

// llamaBatch is llama-server's default batch, which its infill prompt is
// sized by: up to three quarters of it for the prefix, a quarter for the
// suffix and the prompt.
const llamaBatch = 2048

func (a *API) llamaInfill(w http.ResponseWriter, r *http.Request) {
	var body ipc.LlamaInfillRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	switch {
	case body.InputPrefix == nil:
		openAIError(w, badParam("input_prefix", "is required"))
		return
	case body.InputSuffix == nil:
		openAIError(w, badParam("input_suffix", "is required"))
		return
	}
	switch {
	case len(body.Prompt.Prompts) > 1:
		openAIError(w, badParam("prompt", "must be a string"))
		return
	case len(body.Prompt.Prompts) == 1:
		for _, p := range body.Prompt.Prompts[0] {
			if p.IsToken {
				openAIError(w, badParam("prompt", "must be a string"))
				return
			}
		}
	}
	for i, c := range body.InputExtra {
		if c.Text == nil {
			openAIError(w, badParam(fmt.Sprintf("input_extra[%d].text", i), "is required"))
			return
		}
	}
	record := *body.InputPrefix
	if len(body.Prompt.Prompts) == 1 {
		for _, p := range body.Prompt.Prompts[0] {
			record += p.Text
		}
	}
	a.llamaServe(w, r, &llamaCall{body: &body.LlamaCompletionRequest, endpoint: "infill", record: record,
		tokens: func(m models.Model, tok *tokenizer.Tokenizer, _ int) ([]int32, error) {
			fm, ok := m.(interface{ FIM() (llm.FIMTokens, bool) })
			if !ok {
				return nil, badParam("input_prefix", "this model has no fill-in-the-middle tokens")
			}
			fim, ok := fm.FIM()
			if !ok {
				return nil, badParam("input_prefix", "this model has no fill-in-the-middle tokens")
			}
			var parts []ipc.LlamaPromptPart
			if len(body.Prompt.Prompts) == 1 {
				parts = body.Prompt.Prompts[0]
			}
			prompt, err := llamaPromptTokens(tok, parts, m.Info().VocabSize, "prompt", false, true)
			if err != nil {
				return nil, err
			}
			nPredict := -1
			if body.NPredict != nil && *body.NPredict > 0 {
				nPredict = *body.NPredict
			}
			return infillTokens(tok, fim, *body.InputPrefix, *body.InputSuffix, body.InputExtra, prompt,
				min(llamaBatch, m.Info().ContextLength), nPredict, m.Info().ContextLength), nil
		}})
}

// infillTokens builds an infill prompt as llama-server does: other files'
// chunks (with the repository-level tokens when the model has them), then
// BOS, the prefix's end, the prompt, the suffix's start, the middle token.
func infillTokens(tok *tokenizer.Tokenizer, fim llm.FIMTokens, prefix, suffix string, extra []ipc.LlamaInfillChunk, prompt []int32, nBatch, nPredict, nCtx int) []int32 {
	plain := tokenizer.EncodeOptions{}
	pre := tok.Encode(prefix, plain)
	suf := tok.Encode(suffix, plain)
	var ext []int32
	if fim.Repo >= 0 {
		ext = append(append(ext, fim.Repo), tok.Encode("myproject\n", plain)...)
	}
	for _, c := range extra {
		if fim.FileSep >= 0 {
			name := c.Filename
			if name == "" {
				name = "tmp"
			}
			ext = append(append(ext, fim.FileSep), tok.Encode(name+"\n", plain)...)
		} else {
			ext = append(ext, tok.Encode("\n\n--- snippet ---\n\n", plain)...)
		}
		ext = append(ext, tok.Encode(*c.Text, plain)...)
	}
	if fim.FileSep >= 0 {
		ext = append(append(ext, fim.FileSep), tok.Encode("filename\n", plain)...)
	}
	takePre := min(len(pre), 3*(nBatch/4))
	takeSuf := min(len(suf), max(0, nBatch/4-(2+len(prompt))))
	takeExt := min(max(0, nCtx-nBatch-2*nPredict), len(ext))
	pre, suf = pre[len(pre)-takePre:], suf[:takeSuf]
	out := make([]int32, 0, takeExt+takePre+takeSuf+len(prompt)+4)
	out = append(out, ext[len(ext)-takeExt:]...)
	if tok.AddBOS() {
		out = append(out, tok.BOS())
	}
	out = append(append(append(out, fim.Prefix), pre...), prompt...)
	out = append(append(out, fim.Suffix), suf...)
	return append(out, fim.Middle)
}

// acquireTokenizer holds model (the default when empty) and returns its
// tokenizer; on failure it writes the error and reports false.
func (a *API) acquireTokenizer(w http.ResponseWriter, r *http.Request, model string) (*models.Handle, *tokenizer.Tokenizer, bool) {
	rm, err := a.resolveModel(model) // a created model tokenizes as its base
	if err != nil {
		openAIError(w, err)
		return nil, nil, false
	}
	h, err := a.models.AcquireAs(r.Context(), rm.base, psName(rm.alias(model)), nil)
	if err != nil {
		openAIError(w, err)
		return nil, nil, false
	}
	tok, err := llamaTokenizer(h.Model)
	if err != nil {
		h.Release()
		openAIError(w, err)
		return nil, nil, false
	}
	return h, tok, true
}

func (a *API) llamaTokenize(w http.ResponseWriter, r *http.Request) {
	var body ipc.LlamaTokenizeRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	h, tok, ok := a.acquireTokenizer(w, r, body.Model)
	if !ok {
		return
	}
	defer h.Release()
	parse := body.ParseSpecial == nil || *body.ParseSpecial
	ids, err := llamaPromptTokens(tok, body.Content.Flat(), h.Model.Info().VocabSize, "content", body.AddSpecial, parse)
	if err != nil {
		openAIError(w, err)
		return
	}
	out := ipc.LlamaTokenizeResponse{Tokens: make([]any, 0, len(ids))}
	for _, id := range ids {
		if !body.WithPieces {
			out.Tokens = append(out.Tokens, id)
			continue
		}
		piece := tok.TokenPiece(nil, id)
		var v any = string(piece)
		if !utf8.Valid(piece) {
			v = byteInts(piece)
		}
		out.Tokens = append(out.Tokens, ipc.LlamaTokenPiece{ID: id, Piece: v})
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

func (a *API) llamaDetokenize(w http.ResponseWriter, r *http.Request) {
	var body ipc.LlamaDetokenizeRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	h, tok, ok := a.acquireTokenizer(w, r, body.Model)
	if !ok {
		return
	}
	defer h.Release()
	vocab := h.Model.Info().VocabSize
	ids := make([]int32, len(body.Tokens))
	for i, id := range body.Tokens {
		if id < 0 || id >= int64(vocab) {
			openAIError(w, badParam(fmt.Sprintf("tokens[%d]", i), "token %d is not in this model's vocabulary [0,%d)", id, vocab))
			return
		}
		ids[i] = int32(id)
	}
	// llama-server's text is its pieces joined: a SentencePiece text keeps
	// its first space, and special tokens are written out.
	var text []byte
	for _, id := range ids {
		text = tok.TokenPiece(text, id)
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.LlamaDetokenizeResponse{Content: string(text)})
}

// llamaProps answers GET /props for the model ?model= names (the default
// without one), loading it if it is not loaded.
func (a *API) llamaProps(w http.ResponseWriter, r *http.Request) {
	model := r.URL.Query().Get("model")
	rm, err := a.resolveModel(model) // a created model runs as its base
	if err != nil {
		openAIError(w, err)
		return
	}
	h, err := a.models.AcquireAs(r.Context(), rm.base, psName(rm.alias(model)), nil)
	if err != nil {
		openAIError(w, err)
		return
	}
	defer h.Release()
	info := h.Model.Info()
	// What a /completion that sets nothing runs with (streamed, as
	// llama-server reports its defaults).
	body := &ipc.LlamaCompletionRequest{Stream: true}
	if err := withManifestLlama(rm.man, body); err != nil { // a created model's parameters
		openAIError(w, err)
		return
	}
	plan, err := llamaRequest(body)
	if err != nil {
		openAIError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.LlamaProps{
		DefaultGenerationSettings: ipc.LlamaSlotSettings{NCtx: info.ContextLength, Params: *llamaSettings(plan, body, info.ContextLength, h.Name)},
		TotalSlots:                1, ModelPath: info.Path, ChatTemplate: info.ChatTemplate,
		Modalities: map[string]bool{"vision": false, "audio": false}, BuildInfo: "ruvllm " + a.srv.Config().Version,
	})
}
