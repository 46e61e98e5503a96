package learning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/sona"
	"github.com/ruvllm/ruvllm/engine/train"
	"github.com/ruvllm/ruvllm/ipc"
)

// maxHistory bounds the learning history a scope keeps for the app's
// chart.
const maxHistory = 200

// scopeMeta is the daemon's bookkeeping of a scope, stored beside its
// state.
type scopeMeta struct {
	History []ipc.LearningPoint `json:"history"`
	// DeepAt is the scope's count of received signals at its last deep
	// run.
	DeepAt int `json:"deep_at"`
	// Unlearnable counts the stored signals that could not become an
	// example (an empty answer, a prompt the template no longer
	// renders): saved with the state that clears them from the
	// unlearned index, so that received + unlearnable is every stored
	// signal of the scope, across kill -9.
	Unlearnable int `json:"unlearnable,omitempty"`
}

// served is what the scope's requests apply: the learned adapters on the
// model's backend, with their version.
type served struct {
	version  uint64
	adapters []lora.Applied
}

// scopeState is one learning scope of one model: the sona scope, what it
// serves, and a worker that runs its feedback and control operations one
// at a time, in order.
type scopeState struct {
	ms   *modelState
	name string
	key  string

	mu   sync.Mutex // guards s, meta and marks
	s    *sona.Scope
	meta scopeMeta
	// marks are the feedback ids the state in memory holds and the
	// store does not yet: the next save clears them from the unlearned
	// index.
	marks []string

	served    atomic.Pointer[served]
	unlearned atomic.Int64 // feedback queued in the worker
	// converted are the adapters served now with their snapshots, for
	// serve to reuse (convMu guards them).
	convMu    sync.Mutex
	converted []convertedAdapter

	qmu   sync.Mutex
	queue []func()
	wake  chan struct{}

	saveMu sync.Mutex // one save at a time, each of the latest state
}

func newScopeState(ms *modelState, name string) *scopeState {
	return &scopeState{ms: ms, name: name, key: store.LearningKey(ms.name, name), s: sona.NewScope(name), wake: make(chan struct{}, 1)}
}

// sc returns the sona scope.
func (sc *scopeState) sc() *sona.Scope {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.s
}

// load installs a restored state and serves its adapters.
func (sc *scopeState) load(s *sona.Scope, meta []byte) {
	var m scopeMeta
	if meta != nil {
		if err := json.Unmarshal(meta, &m); err != nil {
			sc.ms.svc.log.Warn("learning history unreadable: starting a new one", "scope", sc.name, "err", err)
			m = scopeMeta{}
		}
	}
	sc.mu.Lock()
	sc.s, sc.meta = s, m
	sc.mu.Unlock()
	sc.serve()
}

// run is the scope's worker.
func (sc *scopeState) run() {
	for {
		sc.qmu.Lock()
		if len(sc.queue) == 0 {
			sc.qmu.Unlock()
			select {
			case <-sc.wake:
				continue
			case <-sc.ms.ctx.Done():
				return
			}
		}
		f := sc.queue[0]
		sc.queue = sc.queue[1:]
		sc.qmu.Unlock()
		if sc.ms.ctx.Err() != nil {
			return
		}
		f()
	}
}

// enqueue adds f to the worker's queue; false when the model is stopping.
func (sc *scopeState) enqueue(f func()) bool {
	if sc.ms.ctx.Err() != nil {
		return false
	}
	sc.qmu.Lock()
	sc.queue = append(sc.queue, f)
	sc.qmu.Unlock()
	select {
	case sc.wake <- struct{}{}:
	default:
	}
	return true
}

// do runs f in the worker, after the feedback queued before it, once the
// learner is ready, and returns its error.
func (sc *scopeState) do(ctx context.Context, f func(ctx context.Context) error) error {
	done := make(chan error, 1)
	ok := sc.enqueue(func() {
		if err := sc.ms.waitReady(sc.ms.ctx); err != nil {
			done <- err
			return
		}
		done <- f(sc.ms.ctx)
	})
	if !ok {
		return ErrNotLoaded
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-sc.ms.ctx.Done():
		return ErrNotLoaded
	}
}

// feedbackJob is one feedback for the instant loop; reply, when set,
// receives the outcome once (at the first step, or at the end when no
// step runs).
type feedbackJob struct {
	fb      ipc.Feedback
	arrived time.Time
	reply   chan ipc.FeedbackLearning
	replied bool
}

func (j *feedbackJob) answer(r ipc.FeedbackLearning) {
	if j.replied || j.reply == nil {
		return
	}
	j.replied = true
	j.reply <- r
}

// enqueueFeedback queues a feedback unless it is already queued.
func (sc *scopeState) enqueueFeedback(j *feedbackJob) bool {
	ms := sc.ms
	ms.mu.Lock()
	if ms.inflight[j.fb.ID] {
		ms.mu.Unlock()
		return false
	}
	ms.inflight[j.fb.ID] = true
	ms.mu.Unlock()
	sc.unlearned.Add(1)
	ok := sc.enqueue(func() {
		defer func() {
			sc.unlearned.Add(-1)
			ms.mu.Lock()
			delete(ms.inflight, j.fb.ID)
			ms.mu.Unlock()
		}()
		sc.learn(j)
	})
	if !ok {
		sc.unlearned.Add(-1)
		ms.mu.Lock()
		delete(ms.inflight, j.fb.ID)
		ms.mu.Unlock()
	}
	return ok
}

// learn runs the instant loop on one feedback and saves the scope with
// the feedback marked learned.
func (sc *scopeState) learn(j *feedbackJob) {
	ms := sc.ms
	log := ms.svc.log
	res := ipc.FeedbackLearning{FeedbackID: j.fb.ID, RequestID: j.fb.RequestID, Model: ms.name, Scope: sc.name, Signal: signalOf(j.fb).String()}
	finish := func(status string, err error) {
		res.Status = status
		if err != nil {
			res.Error = err.Error()
		}
		j.answer(res)
		ms.publish("learning.applied", res)
	}
	// notLearnable drops a signal that can never become an example,
	// counting it (unlearnable).
	notLearnable := func(err error) {
		log.Warn("feedback not learnable", "feedback", j.fb.ID, "err", err)
		sc.unlearnable(j.fb.ID)
		finish(ipc.LearnFailed, err)
	}
	if err := ms.waitReady(ms.ctx); err != nil {
		if ms.ctx.Err() == nil {
			finish(ipc.LearnOff, err)
		}
		return
	}
	learner, _ := ms.trainer()
	fb, text, err := ms.convert(j.fb)
	if err != nil {
		// The exchange cannot become an example (no prompt, a template
		// that no longer renders it): it never will.
		notLearnable(err)
		return
	}
	s := sc.sc()
	upd, err := learner.Feedback(ms.ctx, s, fb, func(version uint64) {
		sc.serve()
		if !j.replied {
			now := time.Now()
			r := res
			r.Status, r.Version, r.Steps = ipc.LearnApplied, version, 1
			r.AppliedAt, r.LatencyMillis = &now, float64(now.Sub(j.arrived).Microseconds())/1000
			res.AppliedAt, res.LatencyMillis = r.AppliedAt, r.LatencyMillis
			j.answer(r)
		}
	})
	if errors.Is(err, sona.ErrUnlearnable) {
		notLearnable(err) // refused before the scope recorded it
		return
	}
	// From here the scope's state holds the signal (its record, maybe
	// steps): the next save, whichever, marks it learned, so that it is
	// never learned twice; until then kill -9 leaves it unlearned with
	// the older state.
	sc.mu.Lock()
	sc.marks = append(sc.marks, j.fb.ID)
	sc.mu.Unlock()
	if err != nil {
		if ms.ctx.Err() != nil {
			return // stopping: stop saves the state
		}
		log.Warn("feedback not learned", "feedback", j.fb.ID, "err", err)
		if serr := sc.save(); serr != nil {
			log.Error("saving learning state", "model", ms.name, "scope", sc.name, "err", serr)
		}
		finish(ipc.LearnFailed, err)
		return
	}
	// The trajectory: the prompt's embedding, the adapter that answered,
	// the rating, for "adapters": "auto". The embedding and the save run
	// when serving has nothing to do (the update is applied already).
	if err := ms.m.Yield(ms.ctx); err != nil {
		return // stopping: the feedback stays unlearned
	}
	if emb, err := ms.embed(ms.ctx, text); err == nil {
		rating := -1.0
		if fb.Signal == sona.ThumbsUp {
			rating = 1
		}
		if err := s.Bank().Add(sona.Trajectory{Embedding: emb, Adapter: fb.Adapter, Rating: rating, At: fb.At}); err != nil {
			log.Debug("trajectory not stored", "err", err)
		}
	}
	res.Version, res.Steps, res.LossBefore, res.LossAfter = upd.Version, upd.Steps, upd.LossBefore, upd.LossAfter
	status := ipc.LearnApplied
	switch {
	case upd.Reserved:
		status = ipc.LearnReserved
	case upd.Queued:
		status = ipc.LearnPaused
	default:
		sc.addHistory(ipc.LearningPoint{At: time.Now().UTC(), Kind: "feedback", Signal: fb.Signal.String(),
			Loss: upd.LossBefore, After: upd.LossAfter, Version: upd.Version})
	}
	if err := sc.save(); err != nil {
		log.Error("saving learning state", "model", ms.name, "scope", sc.name, "err", err)
	}
	finish(status, nil)
}

// unlearnable counts a signal that can never be learned and saves the
// count with the state, clearing the signal from the unlearned index in
// the same transaction.
func (sc *scopeState) unlearnable(id string) {
	sc.mu.Lock()
	sc.meta.Unlearnable++
	sc.marks = append(sc.marks, id)
	sc.mu.Unlock()
	if err := sc.save(); err != nil {
		sc.ms.svc.log.Error("saving learning state", "model", sc.ms.name, "scope", sc.name, "err", err)
	}
}

// serve converts the scope's adapters for the model's backend and makes
// them what its requests apply. An adapter with the same values as one
// served before (the consolidated adapter, republished at every instant
// step) keeps its converted copy: conversion copies and hashes every
// value, work the training goroutine does between yields.
func (sc *scopeState) serve() {
	_, base := sc.ms.trainer()
	s := sc.sc()
	version, as := s.Adapters()
	if base == nil {
		return
	}
	out := &served{version: version}
	sc.convMu.Lock()
	defer sc.convMu.Unlock()
	var converted []convertedAdapter
	for i, a := range as {
		var la *lora.Adapter
		for _, c := range sc.converted {
			if sameValues(c.src, a.Adapter) {
				la = c.la
				break
			}
		}
		if la == nil {
			var err error
			la, err = a.Adapter.LoRA(fmt.Sprintf("learned:%s:v%d:%d", sc.name, version, i), base)
			if err == nil {
				err = sc.ms.m.UseAdapter(la)
			}
			if err != nil {
				sc.ms.svc.log.Error("serving learned adapter", "scope", sc.name, "err", err)
				return
			}
		}
		converted = append(converted, convertedAdapter{src: a.Adapter, la: la})
		out.adapters = append(out.adapters, lora.Applied{Adapter: la, Scale: a.Scale})
	}
	sc.converted = converted
	sc.served.Store(out)
}

// convertedAdapter is a served adapter and the snapshot it was made of.
type convertedAdapter struct {
	src *train.Adapter
	la  *lora.Adapter
}

// sameValues reports whether two adapters hold the same values.
func sameValues(a, b *train.Adapter) bool {
	if a == b {
		return true
	}
	if a.Alpha != b.Alpha || !a.SameShape(b) {
		return false
	}
	for k, p := range a.Targets {
		q := b.Targets[k]
		if !slices.Equal(p.A, q.A) || !slices.Equal(p.B, q.B) {
			return false
		}
	}
	return true
}

// save writes the scope's state and meta; the feedback the state now
// holds (marks) is cleared from the unlearned index in the same
// transaction.
func (sc *scopeState) save() error {
	sc.saveMu.Lock()
	defer sc.saveMu.Unlock()
	start := time.Now()
	sc.mu.Lock()
	learned := sc.marks
	sc.mu.Unlock()
	s := sc.sc()
	state, err := s.MarshalBinary()
	if err != nil {
		return err
	}
	sc.mu.Lock()
	meta, err := json.Marshal(sc.meta)
	sc.mu.Unlock()
	if err != nil {
		return err
	}
	marshalled := time.Since(start)
	err = sc.ms.svc.o.Store.SaveLearning(context.Background(), sc.key, state, meta, learned)
	if err == nil {
		sc.mu.Lock()
		sc.marks = slices.Delete(sc.marks, 0, len(learned))
		sc.mu.Unlock()
	}
	sc.ms.svc.log.Debug("learning state saved", "scope", sc.name, "bytes", len(state), "marshal_ms", marshalled.Milliseconds(),
		"total_ms", time.Since(start).Milliseconds())
	return err
}

func (sc *scopeState) addHistory(p ipc.LearningPoint) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.meta.History = append(sc.meta.History, p)
	if over := len(sc.meta.History) - maxHistory; over > 0 {
		sc.meta.History = append([]ipc.LearningPoint(nil), sc.meta.History[over:]...)
	}
}

// consolidate runs the background loop on the scope when it has queued
// feedback.
func (sc *scopeState) consolidate(ctx context.Context, why string) error {
	learner, _ := sc.ms.trainer()
	s := sc.sc()
	if learner == nil || s.Stats().Queued == 0 {
		return nil
	}
	res, err := learner.Consolidate(ctx, s)
	if errors.Is(err, sona.ErrChanged) {
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // cut short (shutdown, unload): the MicroLoRA still holds it all
		}
		return fmt.Errorf("consolidate %s: %w", sc.name, err)
	}
	if res.Steps == 0 {
		return nil
	}
	sc.serve()
	sc.addHistory(ipc.LearningPoint{At: time.Now().UTC(), Kind: "consolidate", Loss: res.Loss, Version: s.Version()})
	if err := sc.save(); err != nil {
		return err
	}
	sc.ms.svc.log.Info("learning consolidated", "model", sc.ms.name, "scope", sc.name, "why", why,
		"examples", res.Examples, "replayed", res.Replayed, "seconds", res.Duration.Seconds())
	sc.ms.publish("learning.consolidated", map[string]any{"model": sc.ms.name, "scope": sc.name, "why": why,
		"examples": res.Examples, "replayed": res.Replayed, "steps": res.Steps, "loss": res.Loss,
		"duration_ms": float64(res.Duration.Microseconds()) / 1000, "version": s.Version()})
	return nil
}

// deepIfDue runs the deep loop when the scope has DeepMin stored
// exchanges and DeepEvery new signals since its last run.
func (sc *scopeState) deepIfDue(ctx context.Context) {
	learner, _ := sc.ms.trainer()
	s := sc.sc()
	if learner == nil {
		return
	}
	st := s.Stats()
	cfg := learner.Config()
	every := sc.ms.svc.o.DeepEvery
	if every <= 0 {
		every = cfg.DeepMin
	}
	sc.mu.Lock()
	last := sc.meta.DeepAt
	sc.mu.Unlock()
	if st.Exchanges < cfg.DeepMin || st.Received-last < every {
		return
	}
	cand, err := learner.Deep(ctx, s)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, sona.ErrTooFewExchanges) {
			sc.ms.svc.log.Warn("deep run failed", "model", sc.ms.name, "scope", sc.name, "err", err)
		}
		return
	}
	sc.mu.Lock()
	sc.meta.DeepAt = st.Received
	sc.mu.Unlock()
	if cand.Accepted {
		sc.serve()
	}
	sc.addHistory(ipc.LearningPoint{At: time.Now().UTC(), Kind: "deep", Loss: cand.HoldoutNLL, After: cand.CurrentHoldoutNLL, Version: s.Version()})
	if err := sc.save(); err != nil {
		sc.ms.svc.log.Error("saving learning state", "scope", sc.name, "err", err)
	}
	sc.ms.publish("learning.deep", map[string]any{"model": sc.ms.name, "scope": sc.name, "candidate": candidateOf(cand)})
}

// unlearnableCount is the count of signals that could not be learned.
func (sc *scopeState) unlearnableCount() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.meta.Unlearnable
}

// status describes the scope for GET /v1/learning.
func (sc *scopeState) status() ipc.LearningScope {
	s := sc.sc()
	st := s.Stats()
	out := ipc.LearningScope{Scope: sc.name, Model: sc.ms.name, Paused: s.Paused(), Version: s.Version(),
		Received: st.Received, Applied: st.Applied, Pending: st.Pending, Queued: st.Queued, Unlearned: int(sc.unlearned.Load()),
		Unlearnable: sc.unlearnableCount(), Steps: st.Steps, Consolidations: st.Consolidations, DeepRuns: st.DeepRuns, DeepAccepted: st.DeepAccepted,
		LastLoss: st.LastLoss, Exchanges: st.Exchanges, Validation: st.Validation, Trajectories: s.Bank().Len(),
		Adapters: []ipc.LearnedAdapter{}, Candidates: []ipc.LearningCandidate{}, CanUndo: s.CanUndo()}
	if !st.LastUpdate.IsZero() && st.LastUpdate.Unix() > 0 {
		t := st.LastUpdate.UTC()
		out.LastUpdate = &t
	}
	_, as := s.Adapters()
	learner, _ := sc.ms.trainer()
	for i, a := range as {
		kind := "consolidated"
		if (len(as) == 2 && i == 1) || (len(as) == 1 && learner != nil && a.Adapter.Rank == learner.Config().MicroRank) {
			kind = "micro"
		}
		out.Adapters = append(out.Adapters, ipc.LearnedAdapter{Kind: kind, Rank: a.Adapter.Rank, Params: a.Adapter.Params()})
	}
	for _, c := range s.Candidates() {
		out.Candidates = append(out.Candidates, candidateOf(c))
	}
	sc.mu.Lock()
	out.History = append([]ipc.LearningPoint{}, sc.meta.History...)
	sc.mu.Unlock()
	return out
}

func candidateOf(c sona.Candidate) ipc.LearningCandidate {
	return ipc.LearningCandidate{At: c.At.UTC(), Accepted: c.Accepted, Reason: c.Reason, Train: c.Train, Holdout: c.Holdout,
		HoldoutNLL: c.HoldoutNLL, CurrentHoldoutNLL: c.CurrentHoldoutNLL, GeneralPPL: c.GeneralPPL,
		CurrentGeneralPPL: c.CurrentGeneralPPL, DurationMillis: float64(c.Duration.Microseconds()) / 1000}
}
