// Package learning is ruvllmd's side of learning from the user
// (engine/sona over engine/train): one sona.Learner per loaded model,
// created when the model loads and stopped when it unloads; learning
// scopes per user (and optionally per app), each with a worker that runs
// the instant loop for every feedback in order; a background loop that
// consolidates and, once enough exchanges have accumulated, runs the deep
// loop; routing of "adapters": "auto" requests through each scope's
// trajectory bank; and the state of every scope in the daemon's bbolt
// store, written after every update in the transaction that marks its
// feedback learned, so that kill -9 loses nothing (a signal not yet
// learned is learned again when the model next loads).
//
// Requests apply their scope's learned adapters automatically (see
// ForRequest); a request opts out with "adapters": "none" (the base model
// exactly) or the header X-Ruvllm-Learning: off (its own adapters only).
package learning

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/sona"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/ipc"
)

// generalText is general English prose (written for ruvllm), in 128-token
// chunks: the text whose perplexity learning must not raise. Every
// learner distils towards the base model on it, its last chunks are the
// general-text guard's (sona.Config.GuardRows), and deep-loop candidates
// are validated on it.
//
//go:embed general.txt
var generalText string

// Model is what learning needs of a loaded model: *llm.Model.
type Model interface {
	Info() llm.Info
	Tokenizer() *tokenizer.Tokenizer
	PromptTokens(req llm.Request) ([]int32, error)
	Embed(ctx context.Context, inputs []string, opts llm.EmbedOptions) ([][]float32, int, error)
	UseAdapter(a *lora.Adapter) error
	Yield(ctx context.Context) error
	Threads() int
}

// Publisher receives learning events ("learning.applied",
// "learning.consolidated", "learning.deep", "learning.paused",
// "learning.resumed", "learning.reset", "learning.undone",
// "learning.ready", "learning.set_aside").
type Publisher interface{ Publish(typ string, data any) }

// Options configures a Service.
type Options struct {
	Store  *store.DB
	Events Publisher
	Logger *slog.Logger
	// Disabled stores feedback but learns nothing.
	Disabled bool
	// PerApp gives every app (the X-Ruvllm-Client of its requests) a
	// scope of its own; otherwise all of the user's requests share the
	// scope "user".
	PerApp bool
	// Interval is the background loop's period (default 2 minutes): each
	// tick consolidates the scopes with queued feedback and runs the deep
	// loop where enough new exchanges have accumulated.
	Interval time.Duration
	// DeepEvery is how many new signals a scope needs since its last deep
	// run before the next (default the learner's DeepMin, 20); a deep run
	// also needs DeepMin stored exchanges.
	DeepEvery int
	// Config tunes the loops (zero fields: sona.DefaultConfig).
	Config sona.Config
	// DenseBytes bounds each trainer's float32 copies of the weights
	// (default 256 MiB; beyond it matrices are dequantized at every use).
	DenseBytes int64
	// Threads of each trainer (default: the model's).
	Threads int
	// FeedbackWait is how long Learn waits for the first instant step
	// before answering "queued" (default 2 s).
	FeedbackWait time.Duration
	// RestoreWait is how long a request on a model that has just loaded
	// waits for its stored scopes to serve their adapters (default 10 s):
	// the first request after a load was answered without them.
	RestoreWait time.Duration
	// ShutdownBudget bounds the consolidation Shutdown runs (default 3 s):
	// one cut short loses nothing (the MicroLoRA keeps it all, saved at
	// unload, and the next start's loop consolidates it), where waiting
	// for it took every stop to the daemon's grace period.
	ShutdownBudget time.Duration
}

// Service learns from feedback on every loaded model. Its methods are
// safe for concurrent use.
type Service struct {
	o   Options
	log *slog.Logger

	mu     sync.Mutex
	models map[string]*modelState
	closed bool
}

// New returns a service; models attach to it as they load.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Interval <= 0 {
		o.Interval = 2 * time.Minute
	}
	if o.DenseBytes <= 0 {
		o.DenseBytes = 256 << 20
	}
	if o.FeedbackWait <= 0 {
		o.FeedbackWait = 2 * time.Second
	}
	if o.RestoreWait <= 0 {
		o.RestoreWait = 10 * time.Second
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	return &Service{o: o, log: o.Logger, models: map[string]*modelState{}}
}

// Enabled reports whether the service learns.
func (s *Service) Enabled() bool { return !s.o.Disabled }

// PerApp reports whether scopes are per app.
func (s *Service) PerApp() bool { return s.o.PerApp }

// UserScope is the scope all requests share unless learning is per app.
const UserScope = "user"

// appPrefix starts the name of an app's scope.
const appPrefix = "app:"

// ScopeOf returns the scope of a request sent by app (its
// X-Ruvllm-Client; "" for none).
func (s *Service) ScopeOf(app string) string {
	if s.o.PerApp && app != "" {
		return appPrefix + scopeApp(app)
	}
	return UserScope
}

// scopeApp makes a client name the app of a scope that CheckScope
// accepts: unprintable runes become '_' and the name is cut at a rune
// boundary to MaxScopeBytes-len(appPrefix) bytes. A client's header is
// not checked, and a scope made from it verbatim (300 bytes, a tab) was
// learned in and stored but could not be named to GET /v1/learning,
// pause, reset, undo or export it.
func scopeApp(app string) string {
	app = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, app)
	cut := MaxScopeBytes - len(appPrefix)
	if len(app) <= cut {
		return app
	}
	for cut > 0 && !utf8.RuneStart(app[cut]) {
		cut--
	}
	return app[:cut]
}

// MaxScopeBytes bounds a scope's name.
const MaxScopeBytes = 256

// CheckScope reports why name is not a scope name ("user" or
// "app:<name>", printable, at most MaxScopeBytes).
func CheckScope(name string) error {
	if name == UserScope {
		return nil
	}
	app, ok := strings.CutPrefix(name, appPrefix)
	switch {
	case !ok:
		return fmt.Errorf("must be %q or \"app:<client name>\", not %q", UserScope, name)
	case app == "" || len(name) > MaxScopeBytes:
		return fmt.Errorf("must name an app of 1 to %d bytes", MaxScopeBytes-len(appPrefix))
	case strings.IndexFunc(app, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return errors.New("must be printable")
	}
	return nil
}

// Attach starts learning on a model that was just loaded (the model
// manager's load hook). Preparing the trainer runs in the background;
// requests apply the scopes' stored adapters as soon as they are
// restored. Models without a trainer for their architecture are listed
// as "unsupported". A disabled service attaches nothing: it prepared a
// learner all the same, which learned the feedback stored before the
// restart and ran consolidations and deep runs on it.
func (s *Service) Attach(name, path string, m any) {
	s.mu.Lock()
	old := s.models[name]
	if s.closed || (old != nil && old.instance == m) {
		s.mu.Unlock()
		return
	}
	// The model loaded again while its last instance unloads: that
	// instance's Detach may come after this (the manager closes unloaded
	// models behind), and it left the new one without learning. It stops
	// here, its scopes saved before the new instance restores them.
	delete(s.models, name)
	s.mu.Unlock()
	if old != nil {
		old.stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.Disabled || s.closed || s.models[name] != nil {
		return
	}
	ms := newModelState(s, name, path, m)
	s.models[name] = ms
	ms.start()
}

// Detach stops learning on a model that is about to unload (the model
// manager's unload hook): training in progress is abandoned (its
// feedback stays unlearned and is learned again on the next load), and
// every scope's state is saved.
func (s *Service) Detach(name string, m any) {
	s.mu.Lock()
	ms := s.models[name]
	if ms != nil && ms.instance != m {
		ms = nil // another instance of the name, loaded since (Attach)
	} else {
		delete(s.models, name)
	}
	s.mu.Unlock()
	if ms != nil {
		ms.stop()
	}
}

// model returns the state of a loaded model (nil when not loaded).
func (s *Service) model(name string) *modelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.models[name]
}

// loaded returns the attached models, sorted by name.
func (s *Service) loaded() []*modelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*modelState, 0, len(s.models))
	for _, ms := range s.models {
		out = append(out, ms)
	}
	sortModels(out)
	return out
}

// Shutdown consolidates every scope with queued feedback (the background
// loop's run at shutdown, bounded by ctx and Options.ShutdownBudget) and
// saves every scope. The
// daemon calls it before the models unload.
func (s *Service) Shutdown(ctx context.Context) error {
	budget := s.o.ShutdownBudget
	if budget <= 0 {
		budget = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	var errs []error
	for _, ms := range s.loaded() {
		if err := ms.consolidateAll(ctx, "shutdown"); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return errors.Join(errs...)
}

// ForRequest returns the learned adapters a request of app on model
// applies (none when learning is off, the model has no learner yet or
// the scope has learned nothing) and a label naming the scope and its
// version ("user@v12"; "" when none).
//
// On a model that has just loaded it first waits, up to RestoreWait or
// ctx's end, for the stored scopes to be restored: the request would
// otherwise run without what the scope learned.
func (s *Service) ForRequest(ctx context.Context, model, app string) ([]lora.Applied, string) {
	if s.o.Disabled {
		return nil, ""
	}
	ms := s.model(model)
	if ms == nil {
		return nil, ""
	}
	select {
	case <-ms.restored:
	default:
		t := time.NewTimer(s.o.RestoreWait)
		select {
		case <-ms.restored:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	sc := ms.existingScope(s.ScopeOf(app))
	if sc == nil {
		return nil, ""
	}
	sv := sc.served.Load()
	if sv == nil || len(sv.adapters) == 0 {
		return nil, ""
	}
	return sv.adapters, fmt.Sprintf("%s@v%d", sc.name, sv.version)
}

// Route picks, among the installed adapters, the one that did best on
// requests of app's scope like this one (text: the request's last user
// message or prompt), through the scope's trajectory bank. ok is false
// when the bank knows no better than none.
func (s *Service) Route(ctx context.Context, model, app, text string, installed []string) (string, bool) {
	if s.o.Disabled || len(installed) == 0 || strings.TrimSpace(text) == "" {
		return "", false
	}
	ms := s.model(model)
	if ms == nil {
		return "", false
	}
	sc := ms.existingScope(s.ScopeOf(app))
	if sc == nil || sc.sc() == nil || sc.sc().Bank().Len() == 0 {
		return "", false
	}
	emb, err := ms.embed(ctx, text)
	if err != nil {
		s.log.Debug("routing: no embedding", "err", err)
		return "", false
	}
	r, ok := sc.sc().Bank().Route(emb, installed)
	return r.Adapter, ok
}

// ErrNotLoaded: the model has no learner (not loaded, or learning off).
var ErrNotLoaded = errors.New("the model is not loaded")

// Learn hands a stored feedback to its scope's instant loop and waits up
// to Options.FeedbackWait for the first step, which is when the scope's
// requests start applying it. arrived is when the feedback came (the
// latency is measured from it). The answer says what happened; when it
// is "queued", a "learning.applied" event follows.
func (s *Service) Learn(ctx context.Context, fb ipc.Feedback, arrived time.Time) ipc.FeedbackLearning {
	res := ipc.FeedbackLearning{FeedbackID: fb.ID, RequestID: fb.RequestID, Model: fb.Model, Scope: s.ScopeOf(fb.App), Signal: signalOf(fb).String()}
	if s.o.Disabled {
		res.Status, res.Error = ipc.LearnOff, "learning is switched off in this daemon"
		return res
	}
	ms := s.model(fb.Model)
	if ms == nil {
		res.Status, res.Error = ipc.LearnQueued, fmt.Sprintf("model %s is not loaded: the feedback is learned when it next loads", fb.Model)
		return res
	}
	if err := ms.failed(); err != nil {
		res.Status, res.Error = ipc.LearnOff, err.Error()
		return res
	}
	j := &feedbackJob{fb: fb, arrived: arrived, reply: make(chan ipc.FeedbackLearning, 1)}
	if !ms.scope(res.Scope).enqueueFeedback(j) {
		res.Status = ipc.LearnQueued
		return res
	}
	t := time.NewTimer(s.o.FeedbackWait)
	defer t.Stop()
	select {
	case r := <-j.reply:
		return r
	case <-t.C:
	case <-ctx.Done():
	case <-ms.ctx.Done():
	}
	res.Status = ipc.LearnQueued
	return res
}

// signalOf maps a stored feedback to its signal.
func signalOf(fb ipc.Feedback) sona.Signal {
	switch {
	case fb.Signal == ipc.SignalRegenerate:
		return sona.Regenerate
	case fb.Correction != "":
		return sona.Correction
	case fb.Rating > 0:
		return sona.ThumbsUp
	}
	return sona.ThumbsDown
}
