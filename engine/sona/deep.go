package sona

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ruvllm/ruvllm/engine/train"
)

// ErrTooFewExchanges: the deep loop needs Config.DeepMin stored exchanges.
var ErrTooFewExchanges = errors.New("too few stored exchanges for a deep run")

// Deep runs the deep loop: a fresh rank-DeepRank LoRA fine-tuned over the
// scope's stored exchanges, validated on the exchanges reserved for
// validation (Config.ValidationEvery: neither the candidate nor the
// current adapters trained on them) and on general text. It replaces the consolidated adapter (and
// clears the MicroLoRA, the Fisher and the feedback it learned) only if
// its held-back NLL is below that of the scope's current adapters and its
// general-text perplexity at most GeneralTolerance above theirs; either
// way the candidate's figures are kept (Scope.Candidates), and a rejected
// candidate's adapter with them. Training runs without the scope's lock:
// feedback keeps being learned meanwhile, and what arrived during the run
// stays queued.
func (l *Learner) Deep(ctx context.Context, s *Scope) (Candidate, error) {
	start := time.Now()
	c := l.cfg
	s.mu.Lock()
	all := append([]record(nil), s.exchanges...)
	reserved := append([]record(nil), s.validation...)
	current := cloneApplied(s.applied())
	seed := s.nextSeed(c.Seed)
	s.mu.Unlock()
	if len(all) < c.DeepMin {
		return Candidate{}, fmt.Errorf("%w: %d of %d", ErrTooFewExchanges, len(all), c.DeepMin)
	}
	rng := rand.New(rand.NewPCG(seed, 0xdee9))
	trainSet, holdout := examplesOf(all), examplesOf(reserved)
	cand := Candidate{At: start, Train: len(trainSet), Holdout: len(holdout)}
	if len(holdout) == 0 {
		cand.Reason = "no exchange is reserved for validation (Config.ValidationEvery)"
		return l.keepCandidate(s, cand, nil, start), nil
	}
	a, err := train.NewAdapter(l.tr.Base(), train.AdapterConfig{Rank: c.DeepRank, Seed: seed})
	if err != nil {
		return cand, err
	}
	opt := train.NewAdamW(a, c.DeepLR, 0)
	per := (len(trainSet) + c.DeepBatch - 1) / c.DeepBatch
	for step := range c.DeepEpochs * per {
		if _, err := l.tr.Step(ctx, a, opt, minibatch(trainSet, c.DeepBatch, step, rng), train.StepConfig{}); err != nil {
			return cand, fmt.Errorf("deep run: %w", err)
		}
	}
	// The candidate would be served alone: it is held to the guard's
	// budget (scaled back from zero) before it is validated.
	from := a.Clone()
	for _, p := range from.Targets {
		clear(p.B)
	}
	_, drift, err := l.guardAdapter(ctx, l.cfg.GuardBudget, math.NaN(), from, a)
	if err != nil {
		return cand, fmt.Errorf("deep run: %w", err)
	}
	candidate := []train.Applied{{Adapter: a, Scale: 1}}
	if cand.HoldoutNLL, cand.CurrentHoldoutNLL, err = l.compare(ctx, candidate, current, holdout); err != nil {
		return cand, err
	}
	if len(l.general) > 0 {
		g, cur, err := l.compare(ctx, candidate, current, l.general)
		if err != nil {
			return cand, err
		}
		cand.GeneralPPL, cand.CurrentGeneralPPL = ppl(g), ppl(cur)
	}
	switch {
	case cand.HoldoutNLL >= cand.CurrentHoldoutNLL:
		cand.Reason = fmt.Sprintf("held-back NLL %.4f is not below the current %.4f", cand.HoldoutNLL, cand.CurrentHoldoutNLL)
	case cand.GeneralPPL > cand.CurrentGeneralPPL*(1+c.GeneralTolerance):
		cand.Reason = fmt.Sprintf("general perplexity %.3f is more than %.0f%% above the current %.3f",
			cand.GeneralPPL, 100*c.GeneralTolerance, cand.CurrentGeneralPPL)
	default:
		cand.Accepted = true
	}
	if !cand.Accepted {
		return l.keepCandidate(s, cand, a, start), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	undo := s.marshal(false)
	learned := map[uint64]bool{}
	for _, r := range all {
		learned[r.id] = true
	}
	var still []record
	for _, r := range s.queue {
		if !learned[r.id] {
			still = append(still, r)
		}
	}
	s.replay = append(s.replay, s.queue...)
	s.queue = still
	s.cons, s.anchor, s.fisher, s.generalFisher = a, a.Clone(), a.ZeroLike(), nil
	s.micro, s.microOpt = nil, nil
	s.guardEnd = drift
	s.stats.DeepRuns++
	s.stats.DeepAccepted++
	s.stats.Steps += c.DeepEpochs * per
	cand.Duration = time.Since(start)
	s.addCandidate(cand)
	s.publish()
	s.undo = undo
	return cand, nil
}

// compare returns the mean NLL of examples under the candidate's and the
// current adapters.
func (l *Learner) compare(ctx context.Context, candidate, current []train.Applied, examples []train.Example) (float64, float64, error) {
	a, err := l.tr.Evaluate(ctx, candidate, examples)
	if err != nil {
		return 0, 0, err
	}
	b, err := l.tr.Evaluate(ctx, current, examples)
	if err != nil {
		return 0, 0, err
	}
	return a.NLL, b.NLL, nil
}

// keepCandidate records a rejected candidate (its adapter replacing the
// previous rejected one's).
func (l *Learner) keepCandidate(s *Scope, cand Candidate, a *train.Adapter, start time.Time) Candidate {
	s.mu.Lock()
	defer s.mu.Unlock()
	cand.Duration = time.Since(start)
	for i := range s.candidates {
		s.candidates[i].Adapter = nil
	}
	cand.Adapter = a
	s.stats.DeepRuns++
	s.addCandidate(cand)
	l.log.Info("deep candidate rejected", "scope", s.Name, "reason", cand.Reason)
	return cand
}

func (s *Scope) addCandidate(c Candidate) {
	s.candidates = append(s.candidates, c)
	if len(s.candidates) > maxCandidates {
		s.candidates = s.candidates[len(s.candidates)-maxCandidates:]
	}
}

func cloneApplied(as []train.Applied) []train.Applied {
	out := make([]train.Applied, len(as))
	for i, a := range as {
		out[i] = train.Applied{Adapter: a.Adapter.Clone(), Scale: a.Scale}
	}
	return out
}
