package learning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/sona"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/engine/train"
	"github.com/ruvllm/ruvllm/ipc"
)

// Model learning states (ipc.LearningModel.Status).
const (
	statusPreparing   = "preparing"
	statusReady       = "ready"
	statusUnsupported = "unsupported"
	statusError       = "error"
)

// modelState is the learning of one loaded model: its trainer and
// learner, its scopes, and the goroutines working on them (stopped by
// cancel, waited for by wg).
type modelState struct {
	svc        *Service
	name, path string
	m          Model // nil: not a model the trainer can use
	// instance is the loaded model as the manager gave it (Attach, Detach
	// tell one load of a name from the next by it).
	instance any

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// restored is closed once the scopes' stored states are serving,
	// ready once the learner is warm (or preparing failed: err says).
	restored, ready chan struct{}

	mu      sync.Mutex
	status  string
	err     error
	file    *gguf.File
	base    *train.Base
	learner *sona.Learner
	scopes  map[string]*scopeState
	// inflight holds the feedback ids queued in a scope's worker, so a
	// feedback is never learned twice (replayed and sent again).
	inflight map[string]bool
	stopped  bool // no new workers (stop is waiting for them)
}

func newModelState(s *Service, name, path string, m any) *modelState {
	ctx, cancel := context.WithCancel(context.Background())
	ms := &modelState{svc: s, name: name, path: path, instance: m, ctx: ctx, cancel: cancel,
		restored: make(chan struct{}), ready: make(chan struct{}), status: statusPreparing,
		scopes: map[string]*scopeState{}, inflight: map[string]bool{}}
	if lm, ok := m.(Model); ok {
		ms.m = lm
	}
	return ms
}

// start prepares the learner in the background and runs the background
// loop once it is ready.
func (ms *modelState) start() {
	ms.wg.Go(func() {
		if err := ms.prepare(); err != nil {
			ms.mu.Lock()
			ms.err = err
			ms.status = statusError
			if errors.Is(err, train.ErrUnsupported) || ms.m == nil {
				ms.status = statusUnsupported
			}
			ms.mu.Unlock()
			if ms.ctx.Err() == nil {
				ms.svc.log.Warn("no learning on this model", "model", ms.name, "err", err)
			}
			closeOnce(ms.restored)
			close(ms.ready)
			return
		}
		ms.mu.Lock()
		ms.status = statusReady
		ms.mu.Unlock()
		close(ms.ready)
		ms.publish("learning.ready", map[string]any{"model": ms.name})
		ms.replay()
		ms.loop()
	})
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// prepare opens the model's file for the trainer, restores the stored
// scopes (their adapters serve requests from then on) and warms the
// learner (general text's Fisher for the instant loop).
func (ms *modelState) prepare() error {
	if ms.m == nil {
		return fmt.Errorf("%w: this model has no trainer", train.ErrUnsupported)
	}
	f, err := gguf.Open(ms.path)
	if err != nil {
		return fmt.Errorf("open %s for training: %w", ms.path, err)
	}
	base, err := train.NewBase(f, train.BaseOptions{DenseBytes: ms.svc.o.DenseBytes})
	if err != nil {
		f.Close()
		return err
	}
	threads := ms.svc.o.Threads
	if t := ms.m.Threads(); t > 0 && t < threads {
		threads = t
	}
	tr := train.NewTrainer(base, train.Options{Threads: threads, Yield: ms.m.Yield})
	general := sona.GeneralExamples(ms.m.Tokenizer().Encode(generalText, tokenizer.EncodeOptions{AddSpecial: true}), 128)
	learner := sona.NewLearner(tr, sona.Options{Config: ms.svc.o.Config, General: general, Logger: ms.svc.log})
	ms.mu.Lock()
	ms.file, ms.base, ms.learner = f, base, learner
	ms.mu.Unlock()
	if err := ms.restore(); err != nil {
		return err
	}
	closeOnce(ms.restored)
	start := time.Now()
	if err := learner.Warm(ms.ctx); err != nil {
		return fmt.Errorf("prepare the learner: %w", err)
	}
	ms.svc.log.Info("learning ready", "model", ms.name, "warm_seconds", time.Since(start).Seconds(), "scopes", len(ms.scopeList()))
	return nil
}

// restore loads the model's stored scopes; a state that does not decode
// or does not fit the model is set aside in the store (not lost).
func (ms *modelState) restore() error {
	states, err := ms.svc.o.Store.LearningStates(ms.ctx, ms.name)
	if err != nil {
		return fmt.Errorf("read learning states: %w", err)
	}
	for _, st := range states {
		_, scope, _ := store.SplitLearningKey(st.Key)
		s, err := sona.UnmarshalScope(st.State)
		if err == nil {
			err = ms.learner.Fits(s)
		}
		if err != nil {
			ms.svc.log.Warn("learning state set aside: it does not fit the model", "model", ms.name, "scope", scope, "err", err)
			if aerr := ms.svc.o.Store.SetLearningAside(ms.ctx, st.Key, err.Error()); aerr != nil {
				return aerr
			}
			ms.publish("learning.set_aside", map[string]any{"model": ms.name, "scope": scope, "reason": err.Error()})
			continue
		}
		sc := ms.scope(scope)
		sc.load(s, st.Meta)
	}
	return nil
}

// replay learns the feedback stored for this model and not learned yet
// (the daemon stopped or was killed before learning it).
func (ms *modelState) replay() {
	fbs, err := ms.svc.o.Store.UnlearnedFeedback(ms.ctx, 1<<20)
	if err != nil {
		ms.svc.log.Error("reading unlearned feedback", "model", ms.name, "err", err)
		return
	}
	n := 0
	for _, fb := range fbs {
		if fb.Model != ms.name {
			continue
		}
		if ms.scope(ms.svc.ScopeOf(fb.App)).enqueueFeedback(&feedbackJob{fb: fb, arrived: time.Now()}) {
			n++
		}
	}
	if n > 0 {
		ms.svc.log.Info("learning feedback stored before the restart", "model", ms.name, "signals", n)
	}
}

// loop is the background loop: every Interval, consolidation of the
// scopes with queued feedback and deep runs where due.
func (ms *modelState) loop() {
	t := time.NewTicker(ms.svc.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ms.ctx.Done():
			return
		case <-t.C:
		}
		ms.consolidateAll(ms.ctx, "periodic")
		for _, sc := range ms.servingScopes() {
			if ms.ctx.Err() != nil {
				return
			}
			sc.deepIfDue(ms.ctx)
		}
	}
}

// consolidateAll runs the background loop's consolidation on every scope
// with queued feedback.
func (ms *modelState) consolidateAll(ctx context.Context, why string) error {
	select {
	case <-ms.ready:
	default:
		return nil // nothing learned yet
	}
	if ms.failed() != nil {
		return nil
	}
	var errs []error
	for _, sc := range ms.servingScopes() {
		if err := sc.consolidate(ctx, why); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stop cancels the model's work, waits for it, saves every scope and
// closes the trainer's file.
func (ms *modelState) stop() {
	ms.mu.Lock()
	ms.stopped = true
	ms.mu.Unlock()
	ms.cancel()
	ms.wg.Wait()
	for _, sc := range ms.scopeList() {
		if sc.sc() != nil {
			if err := sc.save(); err != nil {
				ms.svc.log.Error("saving learning state", "model", ms.name, "scope", sc.name, "err", err)
			}
		}
	}
	ms.mu.Lock()
	f := ms.file
	ms.file = nil
	ms.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// failed returns why the model cannot learn (nil while preparing or
// ready).
func (ms *modelState) failed() error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.status == statusUnsupported || ms.status == statusError {
		return ms.err
	}
	return nil
}

// waitReady blocks until the learner is ready, or fails.
func (ms *modelState) waitReady(ctx context.Context) error {
	select {
	case <-ms.ready:
	case <-ctx.Done():
		return ctx.Err()
	case <-ms.ctx.Done():
		return ms.ctx.Err()
	}
	return ms.failed()
}

// scope returns the named scope, creating it (empty) if needed.
func (ms *modelState) scope(name string) *scopeState {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	sc := ms.scopes[name]
	if sc == nil {
		sc = newScopeState(ms, name)
		ms.scopes[name] = sc
		if !ms.stopped {
			ms.wg.Go(sc.run)
		}
	}
	return sc
}

// existingScope returns the named scope or nil.
func (ms *modelState) existingScope(name string) *scopeState {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.scopes[name]
}

// scopeList returns the scopes by name.
func (ms *modelState) scopeList() []*scopeState {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	out := make([]*scopeState, 0, len(ms.scopes))
	for _, sc := range ms.scopes {
		out = append(out, sc)
	}
	slices.SortFunc(out, func(a, b *scopeState) int { return strings.Compare(a.name, b.name) })
	return out
}

// servingScopes are the scopes requests are served with now: without
// per-app learning, the app scopes an earlier --learning-per-app run left
// are kept as they are, not consolidated or deepened in the background
// (they cost tens of seconds of CPU each, ahead of the user's scope, for
// adapters no request used).
func (ms *modelState) servingScopes() []*scopeState {
	all := ms.scopeList()
	if ms.svc.o.PerApp {
		return all
	}
	return slices.DeleteFunc(all, func(sc *scopeState) bool { return strings.HasPrefix(sc.name, appPrefix) })
}

// trainer returns the learner and base (nil until prepared).
func (ms *modelState) trainer() (*sona.Learner, *train.Base) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.learner, ms.base
}

// embed returns the model's embedding of text (its end, when long).
func (ms *modelState) embed(ctx context.Context, text string) ([]float32, error) {
	if len(text) > maxEmbedBytes {
		text = text[len(text)-maxEmbedBytes:]
	}
	vecs, _, err := ms.m.Embed(ctx, []string{text}, llm.EmbedOptions{Truncate: true})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// maxEmbedBytes bounds the text embedded for routing.
const maxEmbedBytes = 2000

func (ms *modelState) publish(typ string, data any) {
	if ms.svc.o.Events != nil {
		ms.svc.o.Events.Publish(typ, data)
	}
}

// statusOf describes the model for GET /v1/learning.
func (ms *modelState) statusOf(scope string) ipc.LearningModel {
	ms.mu.Lock()
	out := ipc.LearningModel{Model: ms.name, Status: ms.status, Scopes: []ipc.LearningScope{}}
	if ms.err != nil {
		out.Error = ms.err.Error()
	}
	ms.mu.Unlock()
	for _, sc := range ms.scopeList() {
		if scope != "" && sc.name != scope {
			continue
		}
		out.Scopes = append(out.Scopes, sc.status())
	}
	return out
}

func sortModels(ms []*modelState) {
	slices.SortFunc(ms, func(a, b *modelState) int { return strings.Compare(a.name, b.name) })
}
