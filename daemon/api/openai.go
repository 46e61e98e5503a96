package api

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/ipc"
)

var jsonMarshal = json.Marshal

// openAIRequest converts and validates the shared OpenAI sampling fields.
func openAIRequest(f ipc.SamplingFields) (llm.Request, error) {
	var req llm.Request
	if f.N > 1 {
		return req, badParam("n", "must be 1: n > 1 is not supported yet")
	}
	if f.N < 0 {
		return req, badParam("n", "must be 1, not %d", f.N)
	}
	p := sample.Params{Temperature: 1, TopP: 1, PresencePenalty: f.PresencePenalty, FrequencyPenalty: f.FrequencyPenalty, RepeatPenalty: f.RepeatPenalty}
	if f.Temperature != nil {
		p.Temperature = *f.Temperature
	}
	if f.TopP != nil {
		p.TopP = *f.TopP
	}
	if f.TopK != nil {
		p.TopK = *f.TopK
	}
	if f.MinP != nil {
		p.MinP = *f.MinP
	}
	if f.Seed != nil {
		p.Seed = *f.Seed
	}
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
	if err := speculation(&req, f.Speculation); err != nil {
		return req, err
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

func usage(res llm.Result) ipc.Usage {
	return ipc.Usage{
		PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
		TotalTokens:         res.PromptTokens + res.CompletionTokens,
		PromptTokensDetails: &ipc.PromptTokensDetails{CachedTokens: res.CachedTokens},
	}
}

// tokenizerModel is a model whose tokenizer can spell a token id (*llm.Model).
type tokenizerModel interface{ Tokenizer() *tokenizer.Tokenizer }

// tokenLogprob converts a token's log-probabilities. The token's own text
// is its tokenizer piece when the model exposes a tokenizer, else the
// streamed text.
func tokenLogprob(m models.Model, t llm.Token) ipc.TokenLogprob {
	text := t.Text
	if tm, ok := m.(tokenizerModel); ok {
		text = tm.Tokenizer().Decode([]int32{t.ID}, tokenizerDecode)
	}
	tl := ipc.TokenLogprob{Token: text, Logprob: t.Logprob, TopLogprobs: []ipc.TopLogprob{}}
	tl.Bytes = []byte(tl.Token)
	for _, c := range t.Top {
		tl.TopLogprobs = append(tl.TopLogprobs, ipc.TopLogprob{Token: c.Text, Logprob: c.Logprob, Bytes: []byte(c.Text)})
	}
	return tl
}

func (a *API) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var body ipc.ChatCompletionRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	req, err := openAIRequest(body.SamplingFields)
	if err != nil {
		openAIError(w, err)
		return
	}
	if len(body.Messages) == 0 {
		openAIError(w, badParam("messages", "must not be empty"))
		return
	}
	if req.Messages, err = chatMessages(body.Messages, "messages"); err != nil {
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
	id, created := newID("chatcmpl-"), time.Now().Unix()
	w.Header().Set(RequestIDHeader, id)
	if !body.Stream {
		a.chatOnce(w, r, body, req, id, created)
		return
	}
	sse := &sseWriter{w: w, fl: w.(http.Flusher)}
	var model models.Model
	var name string
	var handleModel = func(n string) { name = n }
	chunk := func(d ipc.Delta, lp *ipc.Logprobs, finish *string) ipc.ChatCompletionChunk {
		return ipc.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: name,
			Choices: []ipc.ChunkChoice{{Delta: d, Logprobs: lp, FinishReason: finish}}}
	}
	spec := runSpec{endpoint: "chat.completions", conversation: true, model: body.Model, req: req, adapters: body.Adapters, id: id,
		onStart: func(n string) {
			handleModel(n)
			model = a.models.Models()[n]
			sse.send(chunk(ipc.Delta{Role: "assistant"}, nil, nil))
		},
		onToken: func(t llm.Token) error {
			var lp *ipc.Logprobs
			if req.Logprobs && t.ID >= 0 && model != nil {
				lp = &ipc.Logprobs{Content: []ipc.TokenLogprob{tokenLogprob(model, t)}}
			}
			if t.Text == "" && lp == nil {
				return nil
			}
			return sse.send(chunk(ipc.Delta{Content: t.Text}, lp, nil))
		}}
	out, err := a.run(r.Context(), r, spec)
	if err != nil {
		if !sse.started {
			openAIError(w, err)
			return
		}
		if tellClient(r, err) {
			sse.fail(err)
		}
		return
	}
	sse.send(chunk(ipc.Delta{}, nil, strPtr(finishReason(out.res.FinishReason))))
	if body.StreamOptions != nil && body.StreamOptions.IncludeUsage {
		u := usage(out.res)
		sse.send(ipc.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: name, Choices: []ipc.ChunkChoice{}, Usage: &u})
	}
	sse.done()
}

func (a *API) chatOnce(w http.ResponseWriter, r *http.Request, body ipc.ChatCompletionRequest, req llm.Request, id string, created int64) {
	var text []byte
	var lps []ipc.TokenLogprob
	var model models.Model
	out, err := a.run(r.Context(), r, runSpec{endpoint: "chat.completions", conversation: true, model: body.Model, req: req, adapters: body.Adapters, id: id,
		onStart: func(n string) { model = a.models.Models()[n] },
		onToken: func(t llm.Token) error {
			text = append(text, t.Text...)
			if req.Logprobs && t.ID >= 0 && model != nil {
				lps = append(lps, tokenLogprob(model, t))
			}
			return nil
		}})
	if err != nil {
		openAIError(w, err)
		return
	}
	choice := ipc.ChatChoice{Message: ipc.Message{Role: "assistant", Content: string(text)}, FinishReason: finishReason(out.res.FinishReason)}
	if req.Logprobs {
		choice.Logprobs = &ipc.Logprobs{Content: lps}
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.ChatCompletionResponse{ID: id, Object: "chat.completion", Created: created,
		Model: out.name, Choices: []ipc.ChatChoice{choice}, Usage: usage(out.res)})
}

func (a *API) completions(w http.ResponseWriter, r *http.Request) {
	var body ipc.CompletionRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	req, err := openAIRequest(body.SamplingFields)
	if err != nil {
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
	if body.Logprobs > 0 {
		req.Logprobs, req.TopLogprobs = true, body.Logprobs
	}
	id, created := newID("cmpl-"), time.Now().Unix()
	w.Header().Set(RequestIDHeader, id)
	var name string
	var model models.Model
	onStart := func(n string) { name, model = n, a.models.Models()[n] }
	// logprobsOf converts one token's log-probabilities (nil when not asked).
	logprobsOf := func(t llm.Token, offset int, into *ipc.CompletionLogprobs) *ipc.CompletionLogprobs {
		if !req.Logprobs || t.ID < 0 || model == nil {
			return nil
		}
		if into == nil {
			into = &ipc.CompletionLogprobs{}
		}
		into.Add(tokenLogprob(model, t), offset)
		return into
	}
	resp := func(text string, lp *ipc.CompletionLogprobs, finish *string, u *ipc.Usage) ipc.CompletionResponse {
		return ipc.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: name,
			Choices: []ipc.CompletionChoice{{Text: text, Logprobs: lp, FinishReason: finish}}, Usage: u}
	}
	if !body.Stream {
		var text []byte
		var lp *ipc.CompletionLogprobs
		out, err := a.run(r.Context(), r, runSpec{endpoint: "completions", model: body.Model, req: req, adapters: body.Adapters, id: id, onStart: onStart,
			onToken: func(t llm.Token) error {
				lp = logprobsOf(t, len(text), lp)
				text = append(text, t.Text...)
				return nil
			}})
		if err != nil {
			openAIError(w, err)
			return
		}
		u := usage(out.res)
		daemon.WriteJSON(w, http.StatusOK, resp(string(text), lp, strPtr(finishReason(out.res.FinishReason)), &u))
		return
	}
	sse := &sseWriter{w: w, fl: w.(http.Flusher)}
	offset := 0
	out, err := a.run(r.Context(), r, runSpec{endpoint: "completions", model: body.Model, req: req, adapters: body.Adapters, id: id,
		onStart: func(n string) { onStart(n); sse.start() },
		onToken: func(t llm.Token) error {
			lp := logprobsOf(t, offset, nil)
			offset += len(t.Text)
			if t.Text == "" && lp == nil {
				return nil
			}
			return sse.send(resp(t.Text, lp, nil, nil))
		}})
	if err != nil {
		if !sse.started {
			openAIError(w, err)
		} else if tellClient(r, err) {
			sse.fail(err)
		}
		return
	}
	sse.send(resp("", nil, strPtr(finishReason(out.res.FinishReason)), nil))
	if body.StreamOptions != nil && body.StreamOptions.IncludeUsage {
		u := usage(out.res)
		sse.send(ipc.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: name, Choices: []ipc.CompletionChoice{}, Usage: &u})
	}
	sse.done()
}

// getModel answers GET /v1/models/{id}.
func (a *API) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
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
		out.Data = append(out.Data, ipc.ModelCard{ID: m.Name, Object: "model", Created: m.Modified.Unix(), OwnedBy: "ruvllm"})
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
	switch body.EncodingFormat {
	case "", "float", "base64":
	default:
		openAIError(w, badParam("encoding_format", "must be \"float\" or \"base64\", not %q", body.EncodingFormat))
		return
	}
	if body.Dimensions != nil && *body.Dimensions < 1 {
		openAIError(w, badParam("dimensions", "must be at least 1, not %d", *body.Dimensions))
		return
	}
	h, err := a.models.Acquire(r.Context(), body.Model, nil)
	if err != nil {
		openAIError(w, err)
		return
	}
	defer h.Release()
	if body.Dimensions != nil && *body.Dimensions > h.Model.Info().EmbeddingSize {
		openAIError(w, badParam("dimensions", "%d is more than the model's %d", *body.Dimensions, h.Model.Info().EmbeddingSize))
		return
	}
	vecs, n, err := a.embed(r, h, "embeddings", body.Input)
	if err != nil {
		openAIError(w, err)
		return
	}
	out := ipc.EmbeddingResponse{Object: "list", Model: h.Name, Usage: ipc.Usage{PromptTokens: n, TotalTokens: n}}
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
