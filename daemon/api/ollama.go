package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/ipc"
)

var tokenizerDecode = tokenizer.DecodeOptions{}

// ollamaRequest converts and validates Ollama options, with Ollama's
// defaults.
func ollamaRequest(o *ipc.OllamaOptions, format any) (llm.Request, error) {
	var req llm.Request
	if format != nil {
		return req, badParam("format", "(structured output) is not supported yet")
	}
	p := sample.Params{Temperature: 0.8, TopK: 40, TopP: 0.9, RepeatPenalty: 1.1, RepeatLastN: 64}
	if o != nil {
		set := func(dst *float32, v *float32) {
			if v != nil {
				*dst = *v
			}
		}
		set(&p.Temperature, o.Temperature)
		set(&p.TopP, o.TopP)
		set(&p.MinP, o.MinP)
		set(&p.TypicalP, o.TypicalP)
		set(&p.RepeatPenalty, o.RepeatPenalty)
		if o.TopK != nil {
			p.TopK = *o.TopK
		}
		if o.RepeatLastN != nil {
			p.RepeatLastN = *o.RepeatLastN
		}
		if o.Seed != nil {
			p.Seed = *o.Seed
		}
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
		if o.NumCtx < 0 {
			return req, badParam("options.num_ctx", "must be positive (0: the model's context), not %d", o.NumCtx)
		}
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
	req.Sampling = p
	return req, nil
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
		PromptCachedCount: out.res.CachedTokens,
		DraftCount:        out.res.Speculation.Drafted, DraftAcceptedCount: out.res.Speculation.Accepted,
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

func (a *API) ollamaChat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var body ipc.OllamaChatRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	if body.Model == "" {
		ollamaError(w, badParam("model", "is required"))
		return
	}
	req, err := ollamaRequest(body.Options, body.Format)
	if err != nil {
		ollamaError(w, err)
		return
	}
	if len(body.Messages) == 0 { // Ollama: an empty chat only loads the model
		a.preload(w, r, body.Model, body.KeepAlive, func(name string) any {
			return ipc.OllamaChatResponse{Model: name, CreatedAt: nowISO(), Message: ipc.Message{Role: "assistant"}, Done: true, DoneReason: "load"}
		})
		return
	}
	if req.Messages, err = chatMessages(body.Messages, "messages"); err != nil {
		ollamaError(w, err)
		return
	}
	stream := body.Stream == nil || *body.Stream
	var name string
	nd := &ndjson{w: w}
	var text []byte
	id := newID("req-")
	w.Header().Set(RequestIDHeader, id)
	out, err := a.run(r.Context(), r, runSpec{endpoint: "api.chat", conversation: true, model: body.Model, keepAlive: keepAlive(body.KeepAlive), req: req, adapters: ollamaAdapters(body.Options), id: id,
		onStart: func(n string) { name = n },
		onToken: func(t llm.Token) error {
			if !stream {
				text = append(text, t.Text...)
				return nil
			}
			if t.Text == "" {
				return nil
			}
			return nd.send(ipc.OllamaChatResponse{Model: name, CreatedAt: nowISO(), Message: ipc.Message{Role: "assistant", Content: t.Text}})
		}})
	if err != nil {
		if !nd.started {
			ollamaError(w, err)
		} else if tellClient(r, err) {
			nd.send(map[string]string{"error": err.Error()})
		}
		return
	}
	final := ipc.OllamaChatResponse{Model: name, CreatedAt: nowISO(), Message: ipc.Message{Role: "assistant", Content: string(text)},
		Done: true, DoneReason: finishReason(out.res.FinishReason), OllamaMetrics: metrics(out, time.Since(start)), RequestID: id}
	if stream {
		final.Message.Content = ""
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
	if body.Model == "" {
		ollamaError(w, badParam("model", "is required"))
		return
	}
	req, err := ollamaRequest(body.Options, body.Format)
	if err != nil {
		ollamaError(w, err)
		return
	}
	if body.Prompt == "" && body.System == "" { // Ollama: load (or unload with keep_alive 0)
		a.preload(w, r, body.Model, body.KeepAlive, func(name string) any {
			return ipc.OllamaGenerateResponse{Model: name, CreatedAt: nowISO(), Done: true, DoneReason: "load"}
		})
		return
	}
	if body.Template != "" {
		a.log.Info("ignoring custom template in /api/generate; the model's chat template is used", "model", body.Model)
	}
	switch {
	case body.Raw:
		req.Prompt, req.Raw = body.Prompt, true
	default:
		// Like Ollama, a generate prompt is wrapped in the model's chat
		// template as one user turn (with the system prompt if given).
		if body.System != "" {
			req.Messages = append(req.Messages, chat.Message{Role: "system", Content: body.System})
		}
		req.Messages = append(req.Messages, chat.Message{Role: "user", Content: body.Prompt})
	}
	stream := body.Stream == nil || *body.Stream
	var name string
	nd := &ndjson{w: w}
	var text []byte
	id := newID("req-")
	w.Header().Set(RequestIDHeader, id)
	spec := runSpec{endpoint: "api.generate", model: body.Model, keepAlive: keepAlive(body.KeepAlive), req: req, adapters: ollamaAdapters(body.Options), id: id,
		retryNoTemplate: !body.Raw,
		onStart:         func(n string) { name = n },
		onToken: func(t llm.Token) error {
			if !stream {
				text = append(text, t.Text...)
				return nil
			}
			if t.Text == "" {
				return nil
			}
			return nd.send(ipc.OllamaGenerateResponse{Model: name, CreatedAt: nowISO(), Response: t.Text})
		}}
	out, err := a.run(r.Context(), r, spec)
	if err != nil && isNoTemplate(err) && !body.Raw {
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
	final := ipc.OllamaGenerateResponse{Model: name, CreatedAt: nowISO(), Response: string(text), Done: true,
		DoneReason: finishReason(out.res.FinishReason), OllamaMetrics: metrics(out, time.Since(start)), RequestID: id}
	if stream {
		final.Response = ""
		nd.send(final)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, final)
}

func isNoTemplate(err error) bool { return errors.Is(err, llm.ErrNoTemplate) }

// preload loads a model (or unloads it when keep_alive is 0) without
// generating, as Ollama does for empty requests.
func (a *API) preload(w http.ResponseWriter, r *http.Request, model string, ka *ipc.Duration, resp func(string) any) {
	h, err := a.models.Acquire(r.Context(), model, keepAlive(ka))
	if err != nil {
		ollamaError(w, err)
		return
	}
	name := h.Name
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

func details(info llm.Info) ipc.OllamaModelDetails {
	return ipc.OllamaModelDetails{Format: "gguf", Family: info.Architecture, Families: []string{info.Architecture},
		ParameterSize: fmt.Sprintf("%.1fM", float64(info.Parameters)/1e6), QuantizationLevel: info.FileType}
}

func (a *API) ollamaTags(w http.ResponseWriter, r *http.Request) {
	list, err := a.models.List()
	if err != nil {
		ollamaError(w, err)
		return
	}
	out := ipc.OllamaTags{Models: []ipc.OllamaModel{}}
	for _, m := range list {
		out.Models = append(out.Models, ipc.OllamaModel{Name: m.Name, Model: m.Name, ModifiedAt: m.Modified.UTC().Format(time.RFC3339), Size: m.Size,
			Details: ipc.OllamaModelDetails{Format: "gguf"}})
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

func (a *API) ollamaPs(w http.ResponseWriter, r *http.Request) {
	out := ipc.OllamaTags{Models: []ipc.OllamaModel{}}
	loaded := a.models.Models()
	for _, lm := range a.models.Loaded() {
		om := ipc.OllamaModel{Name: lm.Name, Model: lm.Name, Size: lm.Size}
		if m := loaded[lm.Name]; m != nil {
			om.Details = details(m.Info())
		}
		if !lm.ExpiresAt.IsZero() {
			om.ExpiresAt = lm.ExpiresAt.UTC().Format(time.RFC3339)
		}
		out.Models = append(out.Models, om)
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

func (a *API) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var body ipc.OllamaShowRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	if body.Model == "" {
		body.Model = body.Name
	}
	h, err := a.models.Acquire(r.Context(), body.Model, nil)
	if err != nil {
		ollamaError(w, err)
		return
	}
	defer h.Release()
	info := h.Model.Info()
	mi := map[string]any{
		"general.architecture": info.Architecture, "general.parameter_count": info.Parameters,
		"context_length": info.ContextLength, "embedding_length": info.EmbeddingSize, "vocab_size": info.VocabSize,
	}
	if cm, ok := h.Model.(configModel); ok {
		cfg := cm.Config()
		mi["embedding_length"], mi["block_count"] = cfg.Dim, cfg.Layers
		mi["attention.head_count"], mi["attention.head_count_kv"] = cfg.Heads, cfg.KVHeads
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.OllamaShowResponse{Template: info.ChatTemplate, Details: details(info), ModelInfo: mi})
}

// configModel is a model that reports its architecture shape (*llm.Model).
type configModel interface{ Config() model.Config }

func (a *API) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	daemon.WriteJSON(w, http.StatusOK, map[string]string{"version": a.version})
}

func (a *API) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	var body ipc.OllamaEmbedRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	if err := checkEmbeddingInputs(body.Input, "input"); err != nil {
		ollamaError(w, err)
		return
	}
	h, err := a.models.Acquire(r.Context(), body.Model, nil)
	if err != nil {
		ollamaError(w, err)
		return
	}
	defer h.Release()
	vecs, n, err := a.embed(r, h, "api.embed", body.Input)
	if err != nil {
		ollamaError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.OllamaEmbedResponse{Model: h.Name, Embeddings: vecs, PromptEvalCount: n})
}

// ollamaAdapters returns the adapters named in options.adapters.
func ollamaAdapters(o *ipc.OllamaOptions) []ipc.AdapterRef {
	if o == nil {
		return nil
	}
	return o.Adapters
}
