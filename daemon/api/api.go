// Package api serves ruvllmd's model endpoints: OpenAI-compatible
// (/v1/chat/completions, /v1/completions, /v1/models, /v1/embeddings),
// Ollama-compatible (/api/chat, /api/generate, /api/tags, /api/ps,
// /api/show, /api/version, /api/embed) and the native /v1/cache. Every
// request runs through the shared model manager, so all clients share
// one warm model and its prefix cache.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/adapters"
	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/jinja"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/internal/disk"
	"github.com/ruvllm/ruvllm/ipc"
)

// API holds the handlers' dependencies.
type API struct {
	srv     *daemon.Server
	models  *models.Manager
	log     *slog.Logger
	version string

	reqs          *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	ttft          prometheus.Histogram
	verifications prometheus.Counter
	cacheHits     *prometheus.CounterVec

	mu       sync.Mutex
	adapters *adapters.Pool
	learning *learning.Service

	pulls pulls
	descs descCache

	// overflow is the daemon's default context overflow mode ("" for
	// each protocol's own: SetContextOverflow); guarded by mu.
	overflow llm.OverflowMode
}

// Register mounts the model endpoints on srv.
func Register(srv *daemon.Server, m *models.Manager) *API {
	a := &API{srv: srv, models: m, log: srv.Logger(), version: srv.Config().Version}
	a.reqs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ruvllm_requests_total", Help: "Generation requests by endpoint and status."}, []string{"endpoint", "status"})
	a.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ruvllm_tokens_total", Help: "Tokens by kind: prompt, cached (prompt tokens from the prefix cache), completion, draft (speculative draft tokens verified), draft_accepted."}, []string{"kind"})
	a.verifications = prometheus.NewCounter(prometheus.CounterOpts{Name: "ruvllm_speculative_verifications_total", Help: "Decode steps that verified a speculative draft; (draft_accepted tokens + verifications) / verifications is the tokens per verification."})
	a.ttft = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ruvllm_time_to_first_token_seconds", Help: "Time to first token.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)})
	srv.Metrics().MustRegister(a.reqs, a.tokens, a.ttft, a.verifications, cacheCollector{m})
	srv.SetHealth(m.Loaded)

	srv.Handle("POST /v1/chat/completions", http.HandlerFunc(a.chatCompletions))
	srv.Handle("POST /v1/chat/template", http.HandlerFunc(a.chatTemplate))
	srv.Handle("POST /v1/completions", http.HandlerFunc(a.completions))
	srv.Handle("GET /v1/models", http.HandlerFunc(a.listModels))
	srv.Handle("GET /v1/models/{id...}", http.HandlerFunc(a.getModel))
	srv.Handle("POST /v1/embeddings", http.HandlerFunc(a.embeddings))
	srv.Handle("GET /v1/cache", http.HandlerFunc(a.cache))
	srv.Handle("DELETE /v1/cache", http.HandlerFunc(a.clearCache))

	srv.Handle("POST /v1/messages", http.HandlerFunc(a.anthropicMessages))
	srv.Handle("POST /v1/messages/count_tokens", http.HandlerFunc(a.anthropicCountTokens))

	srv.Handle("POST /api/chat", http.HandlerFunc(a.ollamaChat))
	srv.Handle("POST /api/generate", http.HandlerFunc(a.ollamaGenerate))
	srv.Handle("GET /api/tags", http.HandlerFunc(a.ollamaTags))
	srv.Handle("GET /api/ps", http.HandlerFunc(a.ollamaPs))
	srv.Handle("POST /api/show", http.HandlerFunc(a.ollamaShow))
	srv.Handle("GET /api/version", http.HandlerFunc(a.ollamaVersion))
	srv.Handle("POST /api/embed", http.HandlerFunc(a.ollamaEmbed))
	srv.Handle("POST /api/pull", http.HandlerFunc(a.ollamaPull))
	srv.Handle("DELETE /api/delete", http.HandlerFunc(a.ollamaDelete))
	srv.Handle("POST /api/embeddings", http.HandlerFunc(a.ollamaEmbeddings))
	srv.Handle("POST /api/create", http.HandlerFunc(a.ollamaCreate))
	srv.Handle("POST /api/copy", http.HandlerFunc(a.ollamaCopy))
	srv.Handle("POST /api/push", http.HandlerFunc(a.ollamaPush))
	srv.Handle("HEAD /api/blobs/{digest}", http.HandlerFunc(a.blobHead))
	srv.Handle("POST /api/blobs/{digest}", http.HandlerFunc(a.blobPost))
	a.registerLlamaServer(srv)
	srv.SetBodyLimit("/api/create", MaxModelfileBytes*2)
	srv.SetBodyLimitPrefix("/api/blobs/", MaxBlobBytes)
	// Unknown routes answer in their protocol's error shape.
	srv.Handle("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ollamaError(w, &requestError{status: http.StatusNotFound, msg: fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path)})
	}))
	srv.Handle("/v1/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		openAIError(w, &requestError{status: http.StatusNotFound, msg: fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path)})
	}))
	a.registerConversations()
	a.registerResponses()
	return a
}

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// run is the shared generation path: acquire the model, generate, and
// record the request in the log and metrics.
type runSpec struct {
	endpoint  string
	model     string
	keepAlive *time.Duration
	req       llm.Request
	onToken   func(llm.Token) error
	// onStart, when set, is called once the model is ready, before the
	// first token (streaming responses send their headers there).
	onStart func(name string)
	// adapters are the LoRA adapters the request names.
	adapters []ipc.AdapterRef
	// id is the completion id the client sees; it is also the id of the
	// request-log record and of the stored exchange that feedback names.
	id string
	// conversation marks a chat, whose next turn will send this request's
	// messages and the reply back: the model warms that turn's history
	// (llm.Request.WarmFollowUp).
	conversation bool
	// prepare, when set, finishes the request once the model is known
	// (constraints, tools); its error ends the run before any output.
	prepare func(m models.Model, req *llm.Request) error
	// done, when set, is called after a generation that ended without an
	// error, while the model is still held.
	done func(m models.Model, res llm.Result)
	// n > 1 generates that many choices (onChoiceToken instead of onToken).
	n             int
	onChoiceToken func(choice int, t llm.Token) error
	// retryNoTemplate marks a run whose llm.ErrNoTemplate failure the
	// caller retries as a raw prompt under the same id: that failure is
	// not counted or logged, so the id names one record.
	retryNoTemplate bool
	// alias, when set, is the created model the client named: responses
	// (through onStart and runResult.name) carry it, as Ollama's do, not
	// the base model that runs (a blob's "sha256-…" file name for a model
	// created from uploaded files). Logs and learning keep the base.
	alias string
	// hdr, when set, is the response's header, which run completes
	// before the first byte is written: the adapter "adapters": "auto"
	// routed to (AdapterHeader) and the learned adapters' version
	// (LearningHeader).
	hdr http.Header
}

// AdapterHeader names the adapter an "adapters": "auto" request was
// routed to ("none" when the request ran without one).
const AdapterHeader = "X-Ruvllm-Adapter"

// LearningHeader, on a request, switches the learned adapters off for it
// ("off"); on a response, names the learning scope and version the reply
// applied ("user@v12"), or "off"/"none".
const LearningHeader = "X-Ruvllm-Learning"

type runResult struct {
	name string
	// res is the result; for n > 1 the prompt counts once and the choices'
	// completion tokens add up (choices holds each).
	res     llm.Result
	choices []llm.Result
	load    time.Duration
	handle  *models.Handle
}

// multiGenerator is a model that generates n choices from one prefill
// (*llm.Model).
type multiGenerator interface {
	GenerateN(ctx context.Context, req llm.Request, n int, onToken func(choice int, t llm.Token) error) ([]llm.Result, error)
}

// sumResults is the usage of n choices: the prompt (computed once) and all
// their completion tokens.
func sumResults(rs []llm.Result) llm.Result {
	if len(rs) == 0 {
		return llm.Result{}
	}
	sum := rs[0]
	for _, r := range rs[1:] {
		sum.CompletionTokens += r.CompletionTokens
		sum.Speculation.PredictionDrafted += r.Speculation.PredictionDrafted
		sum.Speculation.PredictionAccepted += r.Speculation.PredictionAccepted
		sum.ContextShifts += r.ContextShifts
		sum.ShiftedTokens += r.ShiftedTokens
		if r.Timings.Total > sum.Timings.Total {
			sum.Timings.Total, sum.Timings.Eval = r.Timings.Total, r.Timings.Eval
		}
	}
	return sum
}

func (a *API) run(ctx context.Context, r *http.Request, s runSpec) (runResult, error) {
	var out runResult
	start := time.Now()
	h, err := a.models.AcquireAs(ctx, s.model, psName(s.alias), s.keepAlive)
	if err != nil {
		a.reqs.WithLabelValues(s.endpoint, "error").Inc()
		return out, err
	}
	defer h.Release()
	out.name, out.load = h.Name, h.LoadTime
	if s.alias != "" {
		out.name = s.alias
	}
	if err := checkLogitBias(s.req.Sampling.LogitBias, h.Model.Info().VocabSize); err != nil {
		a.reqs.WithLabelValues(s.endpoint, "error").Inc()
		return out, err
	}
	if err := a.applyAdapters(ctx, r, h, &s); err != nil {
		a.reqs.WithLabelValues(s.endpoint, "error").Inc()
		return out, err
	}
	if s.prepare != nil {
		if err := s.prepare(h.Model, &s.req); err != nil {
			a.reqs.WithLabelValues(s.endpoint, "error").Inc()
			return out, err
		}
	}
	if s.onStart != nil {
		s.onStart(out.name)
	}
	s.req.WarmFollowUp = s.conversation && s.req.Messages != nil
	s.req.Tenant = clientName(r) // slots are shared between apps
	engineStart := time.Now()
	var answer strings.Builder
	var res llm.Result
	if s.n > 1 {
		mg, ok := h.Model.(multiGenerator)
		if !ok {
			a.reqs.WithLabelValues(s.endpoint, "error").Inc()
			return out, badParam("n", "this model cannot generate several choices")
		}
		var results []llm.Result
		results, err = mg.GenerateN(ctx, s.req, s.n, func(i int, t llm.Token) error {
			if i == 0 {
				answer.WriteString(t.Text)
			}
			return s.onChoiceToken(i, t)
		})
		out.choices = results
		res = sumResults(results)
	} else {
		res, err = h.Model.Generate(ctx, s.req, func(t llm.Token) error {
			answer.WriteString(t.Text)
			return s.onToken(t)
		})
	}
	if errors.Is(err, errStopReply) { // the handler ended a finished reply
		err, res.FinishReason = nil, llm.FinishLength
	}
	out.res = res
	if err == nil && s.done != nil {
		s.done(h.Model, res)
	}
	if err != nil && a.srv.ShuttingDown() && ctx.Err() != nil {
		err = fmt.Errorf("%w: the request was cut off after %d tokens", daemon.ErrShuttingDown, res.CompletionTokens)
	}
	if s.retryNoTemplate && errors.Is(err, llm.ErrNoTemplate) {
		return out, err
	}
	status := "ok"
	switch {
	case err != nil && (errors.Is(err, context.Canceled) || ctx.Err() != nil):
		status = "cancelled"
	case err != nil:
		status = "error"
	}
	a.reqs.WithLabelValues(s.endpoint, status).Inc()
	a.tokens.WithLabelValues("prompt").Add(float64(res.PromptTokens))
	a.tokens.WithLabelValues("cached").Add(float64(res.CachedTokens))
	a.tokens.WithLabelValues("completion").Add(float64(res.CompletionTokens))
	if sp := res.Speculation; sp.Verifications > 0 {
		a.tokens.WithLabelValues("draft").Add(float64(sp.Drafted))
		a.tokens.WithLabelValues("draft_accepted").Add(float64(sp.Accepted))
		a.verifications.Add(float64(sp.Verifications))
	}
	if res.CompletionTokens > 0 {
		a.ttft.Observe(res.Timings.TTFT.Seconds())
	}
	if s.id == "" {
		s.id = newID("req-")
	}
	rec := ipc.RequestRecord{
		ID: s.id, Time: start.UTC(), Client: clientName(r), Model: h.Name, Endpoint: s.endpoint,
		PromptTokens: res.PromptTokens, CachedTokens: res.CachedTokens, CompletionTokens: res.CompletionTokens,
		TTFTMillis: float64(res.Timings.TTFT.Microseconds()) / 1000, Status: status,
		DraftTokens: res.Speculation.Drafted, DraftAccepted: res.Speculation.Accepted, Verifications: res.Speculation.Verifications,
	}
	if res.CompletionTokens > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		t := res.Timings
		rec.TTFT = &ipc.TTFTBreakdown{HandlerMillis: ms(engineStart.Sub(start)), PrepareMillis: ms(t.Prepare),
			QueueMillis: ms(t.Queue), PrefillMillis: ms(t.Prefill), PrefillSteps: t.PrefillSteps, SampleMillis: ms(t.Sample)}
	}
	if res.CompletionTokens > 1 && res.Timings.Eval > 0 {
		rec.TokensPerSecond = float64(res.CompletionTokens-1) / res.Timings.Eval.Seconds()
	}
	if err != nil {
		rec.Error = err.Error()
	}
	// Log with a fresh context: a cancelled request is still recorded, and
	// so is what it answered so far, since a stopped reply can be rated.
	var lerr error
	if status == "error" {
		lerr = a.srv.Store().LogRequest(context.Background(), rec)
	} else {
		ex := store.Exchange{ID: s.id, Time: rec.Time, Endpoint: s.endpoint, Model: h.Name, Adapters: s.adapters,
			PromptText: s.req.Prompt, Answer: answer.String(), App: r.Header.Get("X-Ruvllm-Client")}
		for _, m := range s.req.Messages {
			ex.Prompt = append(ex.Prompt, ipc.Message{Role: m.Role, Content: m.Content})
		}
		lerr = a.srv.Store().LogCompletion(context.Background(), rec, ex)
	}
	if lerr != nil {
		a.log.Error("request log", "err", lerr)
	}
	a.srv.Events().Publish("request.finished", rec)
	return out, err
}

// errStopReply, returned by a runSpec's onToken, ends the reply there as a
// finished one (finish reason "length"), not as a failure: limits of a
// protocol's own that the engine does not know (llama-server's n_indent).
var errStopReply = errors.New("reply ended by the request's limit")

// RequestIDHeader carries the completion id on every generation response,
// so clients of any protocol can name the reply in POST /v1/feedback.
const RequestIDHeader = "X-Ruvllm-Request-Id"

// clientName is the name a request is logged under: its X-Ruvllm-Client,
// else its User-Agent, with unprintable runes as '_' and cut at a rune
// boundary to maxNameBytes. Either header is the client's to choose (up to
// net/http's 1 MiB of headers), and the request log keeps 10,000 records:
// kept whole, 20 requests with a 1 MB name grew state.db by 53 MB, and
// GET /v1/requests answered each name in full.
func clientName(r *http.Request) string {
	c := r.Header.Get("X-Ruvllm-Client")
	if c == "" {
		c = r.UserAgent()
	}
	if c == "" {
		return "unknown"
	}
	c = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, c)
	if len(c) <= maxNameBytes {
		return c
	}
	cut := maxNameBytes
	for cut > 0 && !utf8.RuneStart(c[cut]) {
		cut--
	}
	return c[:cut]
}

// statusOf maps an error to an HTTP status.
func statusOf(err error) int {
	var re *requestError
	switch {
	case errors.As(err, &re):
		return re.status
	case errors.Is(err, models.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case isTemplateError(err):
		// The model's template refused the conversation (raise_exception),
		// or could not render it.
		return http.StatusBadRequest
	case errors.Is(err, llm.ErrInvalidModel), errors.Is(err, llm.ErrNonFinite):
		return http.StatusUnprocessableEntity
	case errors.Is(err, models.ErrLoadFailed), errors.Is(err, mapfault.ErrFault), errors.Is(err, llm.ErrBusy):
		// A fault: the model file changed under the loaded model, which
		// the next request loads again.
		return http.StatusServiceUnavailable
	case errors.Is(err, models.ErrInUse), errors.Is(err, adapters.ErrInUse):
		return http.StatusConflict
	case errors.Is(err, models.ErrOutsideDir):
		return http.StatusBadRequest
	case errors.Is(err, llm.ErrContextExceeded), errors.Is(err, llm.ErrEmptyInput), errors.Is(err, llm.ErrTokenRange),
		errors.Is(err, llm.ErrNoFIM):
		return http.StatusBadRequest
	case errors.Is(err, daemon.ErrShuttingDown):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled):
		return 499
	case disk.IsFull(err):
		// The state store (conversations, feedback) could not grow.
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}

// isTemplateError reports whether err comes from rendering the model's
// chat template for the request's conversation.
func isTemplateError(err error) bool {
	var re *jinja.RaiseError
	var je *jinja.Error
	var ge *goTemplateError
	return errors.As(err, &re) || errors.As(err, &je) || errors.As(err, &ge) || errors.Is(err, jinja.ErrLimit) || errors.Is(err, llm.ErrNoTemplate) ||
		errors.Is(err, chat.ErrTools) || errors.Is(err, chat.ErrInvalidRole) || errors.Is(err, chat.ErrRoleOrder)
}

// tellClient reports whether a stream that failed with err should still
// get an error event: the client is there, or the daemon is shutting down
// (which cancels the request's context too).
func tellClient(r *http.Request, err error) bool {
	return r.Context().Err() == nil || errors.Is(err, daemon.ErrShuttingDown)
}

func openAIErrorBody(err error) (int, ipc.OpenAIError) {
	status := statusOf(err)
	typ := "server_error"
	if status < 500 {
		typ = "invalid_request_error"
	}
	if status == http.StatusNotFound {
		typ = "not_found_error"
	}
	var body ipc.OpenAIError
	body.Error.Message, body.Error.Type = err.Error(), typ
	var re *requestError
	if errors.As(err, &re) && re.param != "" {
		body.Error.Param = &re.param
	}
	if errors.Is(err, llm.ErrNoFIM) && body.Error.Param == nil {
		// Only a completion's suffix asks for fill-in-the-middle.
		body.Error.Param = strPtr("suffix")
	}
	if errors.Is(err, llm.ErrContextExceeded) {
		// OpenAI's code: clients that trim their own history branch on it.
		body.Error.Code = strPtr("context_length_exceeded")
	}
	if errors.Is(err, models.ErrNotFound) {
		// Clients branch on OpenAI's code for an unknown model.
		body.Error.Code = strPtr("model_not_found")
		body.Error.Param = strPtr("model")
	}
	return status, body
}

func openAIError(w http.ResponseWriter, err error) {
	status, body := openAIErrorBody(err)
	daemon.WriteJSON(w, status, body)
}

func ollamaError(w http.ResponseWriter, err error) {
	daemon.WriteJSON(w, statusOf(err), map[string]string{"error": err.Error()})
}

// SetAdapters enables per-request adapters ("adapters" in OpenAI bodies,
// options.adapters in Ollama bodies), resolved by name through pool.
// Without a pool, requests naming adapters are refused: silently ignoring
// them would give the user the wrong model.
func (a *API) SetAdapters(pool *adapters.Pool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.adapters = pool
}

// resolveAdapters turns a request's adapter references into loaded
// adapters of model m.
func (a *API) resolveAdapters(ctx context.Context, mdl models.Model, refs []ipc.AdapterRef) ([]lora.Applied, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	pool := a.adapterPool()
	if pool == nil {
		return nil, &requestError{status: http.StatusBadRequest, msg: "adapter support not available in this daemon"}
	}
	m, ok := mdl.(adapters.Model)
	if !ok {
		return nil, &requestError{status: http.StatusBadRequest, msg: "adapter support not available for this model"}
	}
	applied, err := pool.Resolve(ctx, m, refs)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &requestError{status: adapters.StatusOf(err), msg: err.Error(), param: "adapters"}
	}
	return applied, nil
}

func logitBias(in map[string]float32) (map[int32]float32, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > MaxLogitBias {
		return nil, badParam("logit_bias", "may hold at most %d entries, not %d", MaxLogitBias, len(in))
	}
	out := make(map[int32]float32, len(in))
	for k, v := range in {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, badParam("logit_bias", "has key %q, which is not a token id", k)
		}
		out[int32(id)] = v
	}
	return out, nil
}

// sseWriter streams server-sent events.
type sseWriter struct {
	w       http.ResponseWriter
	fl      http.Flusher
	started bool
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	s.w.WriteHeader(http.StatusOK)
}

func (s *sseWriter) send(v any) error {
	s.start()
	b, err := jsonMarshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	s.fl.Flush()
	return nil
}

// fail ends a stream that already started with an error event in OpenAI's
// shape, then [DONE], so clients see why the stream stopped.
func (s *sseWriter) fail(err error) {
	_, body := openAIErrorBody(err)
	s.send(body)
	s.done()
}

func (s *sseWriter) done() {
	s.start()
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	s.fl.Flush()
}

func nowISO() string { return time.Now().UTC().Format(time.RFC3339Nano) }

func strPtr(s string) *string { return &s }

func finishReason(r llm.FinishReason) string {
	if r == "" {
		return "stop"
	}
	return string(r)
}

// embed runs an embedding request on an acquired model and records it in
// the request log and metrics like a generation.
func (a *API) embed(r *http.Request, h *models.Handle, endpoint string, inputs []string, opts llm.EmbedOptions) ([][]float32, int, error) {
	return a.recordEmbed(r, h, endpoint, func() ([][]float32, int, error) {
		return h.Model.Embed(r.Context(), inputs, opts)
	})
}

// recordEmbed runs an embedding request's work and counts and logs it as
// embed does.
func (a *API) recordEmbed(r *http.Request, h *models.Handle, endpoint string, run func() ([][]float32, int, error)) ([][]float32, int, error) {
	start := time.Now()
	vecs, n, err := run()
	status := "ok"
	switch {
	case err != nil && r.Context().Err() != nil:
		status = "cancelled"
	case err != nil:
		status = "error"
	}
	a.reqs.WithLabelValues(endpoint, status).Inc()
	a.tokens.WithLabelValues("prompt").Add(float64(n))
	rec := ipc.RequestRecord{ID: newID("req-"), Time: start.UTC(), Client: clientName(r), Model: h.Name, Endpoint: endpoint,
		PromptTokens: n, Status: status}
	if err != nil {
		rec.Error = err.Error()
	}
	if lerr := a.srv.Store().LogRequest(context.Background(), rec); lerr != nil {
		a.log.Error("request log", "err", lerr)
	}
	a.srv.Events().Publish("request.finished", rec)
	return vecs, n, err
}
