package sona

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/train"
)

// record is one stored feedback: its signal and training example.
type record struct {
	id     uint64 // the scope's count of received signals when it came
	signal Signal
	ex     train.Example
	at     time.Time
	// key names what the signal rated (Feedback.Key): a later signal
	// with the same key supersedes this one.
	key string
}

// Stats are a scope's counters, for GET /v1/learning.
type Stats struct {
	Received int // feedback signals received
	Applied  int // learned by the instant loop
	Pending  int // received while paused, not yet learned
	Queued   int // learned by the MicroLoRA, not yet consolidated
	Steps    int // optimisation steps of every loop
	// Consolidations and DeepRuns count background and deep runs;
	// DeepAccepted how many deep candidates replaced the adapter.
	Consolidations, DeepRuns, DeepAccepted int
	LastUpdate                             time.Time
	// LastLoss is the objective of the last instant step.
	LastLoss float64
	// Exchanges are the stored exchanges the deep loop trains on;
	// Validation those reserved to validate its candidates.
	Exchanges, Validation int
}

// Candidate is a deep-loop result with its validation figures.
type Candidate struct {
	At       time.Time
	Accepted bool
	// Reason says why a candidate was rejected.
	Reason                        string
	Train, Holdout                int // exchanges trained on and held back
	HoldoutNLL, CurrentHoldoutNLL float64
	GeneralPPL, CurrentGeneralPPL float64
	Adapter                       *train.Adapter // kept for the latest rejected candidate only
	Duration                      time.Duration
}

// maxCandidates bounds the candidates' history a scope keeps.
const maxCandidates = 16

// Scope is one learning scope's state: its MicroLoRA and optimizer, its
// consolidated adapter with the EWC++ Fisher and anchor, the feedback it
// learned, the trajectories it routes with, and one undo point. Methods
// of Learner change it under its lock.
type Scope struct {
	mu sync.Mutex

	Name   string
	paused bool

	micro    *train.Adapter
	microOpt *train.AdamW
	// served snapshots what requests apply: copies made when an update
	// ends, so training never changes an adapter in use. published holds
	// them with their version for Adapters, which reads it without the
	// lock (an update's callback runs under it).
	servedMicro, servedCons *train.Adapter
	published               atomic.Pointer[publication]

	cons          *train.Adapter
	fisher        *train.Adapter // online (EWC++) Fisher of the feedback
	generalFisher *train.Adapter // Fisher of general text at the first consolidation
	anchor        *train.Adapter // consolidated values the penalty holds to

	queue      []record // learned by the MicroLoRA, not consolidated
	pending    []record // received while paused
	replay     []record
	exchanges  []record // learned, for the deep loop
	validation []record // reserved for the deep loop's validation
	positives  int      // corrections and thumbs-up received

	stats      Stats
	candidates []Candidate
	bank       *Bank
	version    uint64
	seed       uint64

	undo []byte // the state before the last update (without its own undo)

	// The guard's running estimates (guard.go), learned again after a
	// restart: guardMargin is how much an update's first step, published
	// unmeasured, adds to the drift (the guard holds the end of every
	// update this far below its budget), guardEnd the drift the last
	// guarded state ended at, guardFirst what the last first step
	// published.
	guardMargin, guardEnd, guardFirst float64
	// guardMu multiplies the instant loop's distillation weight (the
	// guard's dual variable, adjustMu; 0 means 1).
	guardMu float64
}

// NewScope returns an empty scope: the base model, nothing learned.
func NewScope(name string) *Scope {
	return &Scope{Name: name, bank: NewBank(BankOptions{})}
}

// Stats returns the scope's counters.
func (s *Scope) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Pending, st.Queued, st.Exchanges, st.Validation = len(s.pending), len(s.queue), len(s.exchanges), len(s.validation)
	return st
}

// Candidates returns the deep loop's results, oldest first.
func (s *Scope) Candidates() []Candidate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.candidates)
}

// Version changes whenever the adapters requests should apply change.
func (s *Scope) Version() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// publication is what a scope's requests apply, with its version.
type publication struct {
	version  uint64
	adapters []train.Applied
}

// Adapters returns what the scope's requests apply now, consolidated
// first, and its version. Nil adapters are left out: a new or reset scope
// returns none, and requests run on the base model exactly. The adapters
// are snapshots: the caller may convert and share them, but not change
// them. Adapters takes no lock, so Feedback's onUpdate callback may call
// it to serve the version it is told about.
func (s *Scope) Adapters() (uint64, []train.Applied) {
	if p := s.published.Load(); p != nil {
		return p.version, slices.Clone(p.adapters)
	}
	return 0, nil
}

// storePublication makes the served snapshots what Adapters returns; the
// caller holds the lock (or owns the scope).
func (s *Scope) storePublication() {
	p := &publication{version: s.version}
	for _, a := range []*train.Adapter{s.servedCons, s.servedMicro} {
		if a != nil {
			p.adapters = append(p.adapters, train.Applied{Adapter: a, Scale: 1})
		}
	}
	s.published.Store(p)
}

// CanUndo reports whether Undo has an update to undo.
func (s *Scope) CanUndo() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.undo != nil
}

// Bank returns the scope's trajectory bank.
func (s *Scope) Bank() *Bank { return s.bank }

// Paused reports whether the scope is paused.
func (s *Scope) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// publish snapshots the adapters for serving and bumps the version; the
// caller holds the lock.
func (s *Scope) publish() {
	s.servedMicro, s.servedCons = nil, nil
	if s.micro != nil && !s.micro.IsZero() {
		s.servedMicro = s.micro.Clone()
	}
	if s.cons != nil && !s.cons.IsZero() {
		s.servedCons = s.cons.Clone()
	}
	s.version++
	s.stats.LastUpdate = time.Now()
	s.storePublication()
}

// nextSeed draws seeds for new adapters deterministically per scope.
func (s *Scope) nextSeed(base uint64) uint64 {
	s.seed++
	return base ^ s.seed*0x9e3779b97f4a7c15
}

// frozenCons is the consolidated adapter as a frozen layer.
func (s *Scope) frozenCons() []train.Applied {
	if s.cons == nil {
		return nil
	}
	return []train.Applied{{Adapter: s.cons, Scale: 1}}
}

// Update reports what an instant update did.
type Update struct {
	Version uint64
	Steps   int
	// Queued is true when the scope is paused: the feedback waits.
	Queued bool
	// Reserved is true when the feedback was kept to validate the deep
	// loop's candidates (Config.ValidationEvery) instead of learned.
	Reserved bool
	// LossBefore and LossAfter are the feedback's objective at the first
	// and after the last step.
	LossBefore, LossAfter float64
	// Scale is the factor the guard scaled the MicroLoRA back by after
	// the last step (1: not at all), and Drift the served model's
	// relative perplexity change on the guard's text then (0 with the
	// guard off).
	Scale, Drift float64
	// FirstDrift is the drift of what the first step published (measured
	// at the end of the update; 0 with the guard off or one step).
	FirstDrift float64
	// FirstApplied is the time from the call to the end of the first
	// step, when the scope's requests apply the new adapter; Elapsed the
	// time to the end of the last.
	FirstApplied, Elapsed time.Duration
}

// Feedback learns one signal with the instant loop: its example gets
// MicroSteps AdamW steps on the MicroLoRA, over the consolidated adapter
// (the first alone, the others with a few of the scope's recent
// examples). After every step the scope's
// adapters are republished (onUpdate, when set, is called then, under
// the scope's lock, with the new version). A paused scope queues it.
func (l *Learner) Feedback(ctx context.Context, s *Scope, fb Feedback, onUpdate func(version uint64)) (Update, error) {
	start := time.Now()
	ex, err := l.example(&fb)
	if err == nil {
		err = l.tr.Base().Check(ex)
	}
	if err != nil {
		return Update{}, fmt.Errorf("%w: %w", ErrUnlearnable, err)
	}
	if fb.At.IsZero() {
		fb.At = start
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The undo point is the scope before this signal: taken after the
	// signal was stored and the ratings it supersedes removed, undo kept
	// it among the exchanges deep runs train on, and lost those.
	undo := s.marshal(false)
	s.stats.Received++
	rec := record{id: uint64(s.stats.Received), signal: fb.Signal, ex: ex, at: fb.At, key: fb.Key}
	s.supersede(fb.Key)
	if fb.Embedding != nil {
		rating := 1.0
		if fb.Signal == ThumbsDown || fb.Signal == Regenerate || fb.Signal == Correction {
			rating = -1
		}
		if err := s.bank.Add(Trajectory{Embedding: fb.Embedding, Adapter: fb.Adapter, Rating: rating, At: fb.At}); err != nil {
			l.log.Warn("trajectory not stored", "scope", s.Name, "err", err)
		}
	}
	if fb.Signal == Correction || fb.Signal == ThumbsUp {
		s.positives++
		if every := l.cfg.ValidationEvery; every > 0 && s.positives%every == 0 {
			s.validation = keep(s.validation, rec, l.cfg.MaxExchanges)
			return Update{Version: s.version, Reserved: true}, nil
		}
	}
	s.exchanges = keep(s.exchanges, rec, l.cfg.MaxExchanges)
	if s.paused {
		s.pending = append(s.pending, rec)
		return Update{Version: s.version, Queued: true}, nil
	}
	upd, err := l.instant(ctx, s, rec, start, onUpdate)
	if upd.Steps > 0 {
		s.undo = undo
	}
	return upd, err
}

// supersede removes the records of the signals key named before (a reply
// rated again: the earlier rating no longer holds) from the queue, the
// pending, replayed, stored and validation records, so that consolidation,
// replay and deep runs learn the new rating alone. What the earlier one's
// instant steps left in the MicroLoRA goes with it at the next
// consolidation (a run that began with the record in its queue is
// discarded as changed). The caller holds the lock; an empty key removes
// nothing.
func (s *Scope) supersede(key string) {
	if key == "" {
		return
	}
	stale := func(r record) bool { return r.key == key }
	for _, rs := range []*[]record{&s.queue, &s.pending, &s.replay, &s.exchanges, &s.validation} {
		*rs = slices.DeleteFunc(*rs, stale)
	}
}

// instant runs the instant loop's steps for rec; the caller holds the lock.
func (l *Learner) instant(ctx context.Context, s *Scope, rec record, start time.Time, onUpdate func(uint64)) (Update, error) {
	c := l.cfg
	m, penalty, err := l.newMicro(ctx)
	if err != nil {
		return Update{}, err
	}
	if s.micro == nil {
		s.micro, s.microOpt = m, train.NewAdamW(m, c.MicroLR, 0)
	} else if !s.micro.SameShape(m) {
		penalty = nil // a MicroLoRA of an earlier configuration
	}
	s.microOpt.Warmup = c.MicroWarmup
	examples := []train.Example{rec.ex}
	for i := len(s.queue) - 1; i >= 0 && len(examples) <= c.MicroRecent; i-- {
		examples = append(examples, s.queue[i].ex)
	}
	upd := Update{Scale: 1}
	var first *train.Adapter // the MicroLoRA the first step published
	for step := range c.MicroSteps {
		batch := examples
		if step == 0 {
			// The first step learns the new example alone: it is the
			// one the user waits for, and the smallest batch is the
			// quickest update.
			batch = examples[:1]
		} else {
			// The others also hold general text to the base model.
			d, err := l.distillRows(ctx, s.stats.Steps, s.guardMu)
			if err != nil {
				return upd, fmt.Errorf("instant update: %w", err)
			}
			batch = append(slices.Clone(examples), d...)
		}
		res, err := l.tr.Step(ctx, s.micro, s.microOpt, batch, train.StepConfig{Frozen: s.frozenCons(), Penalty: penalty})
		if err != nil {
			return upd, fmt.Errorf("instant update: %w", err)
		}
		if step == 0 {
			upd.LossBefore = res.Objective
		}
		if step == c.MicroSteps-1 {
			// What requests apply once the update ends must fit the
			// guard's budget. The earlier steps are published unmeasured:
			// a measurement costs more than a step, and the first is the
			// one the user waits for; each moves the values by about the
			// learning rate, from a state that fitted.
			if err := l.learnMargin(ctx, s, first); err != nil {
				return upd, fmt.Errorf("instant update: %w", err)
			}
			alpha, drift, err := l.guardMicro(ctx, s, penalty)
			if err != nil {
				return upd, fmt.Errorf("instant update: %w", err)
			}
			upd.Scale, upd.Drift = alpha, drift
			if first != nil {
				upd.FirstDrift = s.guardFirst
			}
		} else if step == 0 && len(l.guardRows()) > 0 {
			first = s.micro.Clone()
		}
		upd.Steps++
		s.stats.Steps++
		s.stats.LastLoss = res.Objective
		s.publish()
		upd.Version = s.version
		if step == 0 {
			upd.FirstApplied = time.Since(start)
		}
		if onUpdate != nil {
			onUpdate(s.version)
		}
	}
	after, err := l.tr.Evaluate(ctx, s.applied(), examples[:1])
	if err == nil {
		upd.LossAfter = after.Objective
	}
	s.queue = append(s.queue, rec)
	s.stats.Applied++
	upd.Elapsed = time.Since(start)
	return upd, nil
}

// applied is what the scope applies now (live adapters, not snapshots);
// the caller holds the lock.
func (s *Scope) applied() []train.Applied {
	var out []train.Applied
	for _, a := range []*train.Adapter{s.cons, s.micro} {
		if a != nil {
			out = append(out, train.Applied{Adapter: a, Scale: 1})
		}
	}
	return out
}

// keep appends rec to rs, dropping the oldest beyond max.
func keep(rs []record, rec record, max int) []record {
	rs = append(rs, rec)
	if len(rs) > max {
		rs = slices.Delete(rs, 0, len(rs)-max)
	}
	return rs
}

// Pause stops the instant loop for the scope: feedback is queued.
func (s *Scope) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = true
}

// Resume restarts learning and learns the feedback queued meanwhile.
func (l *Learner) Resume(ctx context.Context, s *Scope) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = false
	if len(s.pending) == 0 {
		return nil
	}
	undo := s.marshal(false)
	pending := s.pending
	s.pending = nil
	learned := false
	for i, rec := range pending {
		upd, err := l.instant(ctx, s, rec, time.Now(), nil)
		learned = learned || upd.Steps > 0
		if err != nil {
			s.pending = append(s.pending, pending[i+1:]...)
			if learned {
				s.undo = undo
			}
			return err
		}
	}
	s.undo = undo
	return nil
}

// Reset puts the scope back on the base model exactly: no adapters, no
// Fisher, no stored feedback; its trajectories stay (they describe
// installed adapters). Undo brings the state before the reset back.
func (s *Scope) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	undo := s.marshal(false)
	s.micro, s.microOpt, s.cons, s.fisher, s.generalFisher, s.anchor = nil, nil, nil, nil, nil, nil
	s.queue, s.pending, s.replay, s.exchanges, s.validation, s.positives = nil, nil, nil, nil, nil, 0
	s.guardMargin, s.guardEnd, s.guardFirst, s.guardMu = 0, 0, 0, 0
	s.publish()
	s.undo = undo
}

// Undo brings back the state before the last update (an instant update,
// a consolidation, an accepted deep candidate, a reset), exactly: the
// adapters are the same values, so requests give the same outputs. The
// trajectory bank stays as it is. One level: a second Undo returns
// ErrNothingToUndo.
func (s *Scope) Undo() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.undo == nil {
		return ErrNothingToUndo
	}
	prev, err := unmarshalScope(s.undo, false)
	if err != nil {
		return fmt.Errorf("undo: %w", err)
	}
	version, received := s.version, s.stats.Received
	s.restore(prev)
	s.undo = nil
	// The undone signal was received (and stays stored), and record ids
	// count received signals: they never go back.
	s.version, s.stats.Received = version, received
	s.publish()
	return nil
}

// restore moves prev's state into s (both locked or unshared).
func (s *Scope) restore(prev *Scope) {
	s.paused = prev.paused
	s.micro, s.microOpt = prev.micro, prev.microOpt
	s.cons, s.fisher, s.generalFisher, s.anchor = prev.cons, prev.fisher, prev.generalFisher, prev.anchor
	s.queue, s.pending, s.replay, s.exchanges = prev.queue, prev.pending, prev.replay, prev.exchanges
	s.validation, s.positives = prev.validation, prev.positives
	s.stats, s.candidates, s.seed = prev.stats, prev.candidates, prev.seed
}

// sample draws up to n records of rs without replacement.
func sample(rs []record, n int, rng *rand.Rand) []record {
	if len(rs) <= n {
		return slices.Clone(rs)
	}
	idx := rng.Perm(len(rs))[:n]
	out := make([]record, n)
	for i, j := range idx {
		out[i] = rs[j]
	}
	return out
}

func examplesOf(rs []record) []train.Example {
	out := make([]train.Example, len(rs))
	for i, r := range rs {
		out[i] = r.ex
	}
	return out
}

// ppl is the perplexity of a mean NLL.
func ppl(nll float64) float64 { return math.Exp(nll) }

// ErrNothingLearned: the scope has no consolidated adapter to export.
var ErrNothingLearned = errors.New("nothing consolidated to export")

// Export returns the scope's consolidated adapter as a llama.cpp GGUF
// LoRA file named name (lora.Adapter.GGUF; llama.cpp loads it with
// --lora, engine/lora with LoadGGUF). Feedback only the MicroLoRA holds
// is not in it: consolidate first.
func (l *Learner) Export(s *Scope, name string) (*gguf.Writer, error) {
	s.mu.Lock()
	cons := s.cons
	if cons != nil {
		cons = cons.Clone()
	}
	s.mu.Unlock()
	if cons == nil {
		return nil, ErrNothingLearned
	}
	la, err := cons.LoRA(name, l.tr.Base())
	if err != nil {
		return nil, err
	}
	return la.GGUF()
}
