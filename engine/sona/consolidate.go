package sona

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ruvllm/ruvllm/engine/train"
)

// Consolidation reports a background run.
type Consolidation struct {
	Examples, Replayed int
	Steps              int
	// Loss is the mean objective of the last steps; Penalty the EWC++
	// term at the end.
	Loss, Penalty float64
	// Scale is how much of the run's change the guard kept (1: all),
	// and Drift the new adapter's relative perplexity change on the
	// guard's text (0 with the guard off).
	Scale, Drift float64
	// Mu is the guard's distillation multiplier at the end (1: never
	// raised).
	Mu       float64
	Duration time.Duration
}

// Consolidate runs the background loop: the feedback the MicroLoRA
// learned since the last run, with a replay sample of earlier feedback,
// is trained into the consolidated adapter under the EWC++ penalty
// λ/2·Σ F_i(θ_i − θ*_i)² (θ* the consolidated values before the run, F
// the Fisher: general text's, fixed at the first run, plus the online
// estimate over feedback); then the online Fisher is updated at the new
// values (F ← γF + (1−γ)F_new, F_new the mean squared per-example
// gradient), the anchor moves to them, and the MicroLoRA starts again
// from zero. Training runs without the scope's lock: feedback that
// arrives meanwhile is learned as usual, and again over the new
// consolidated adapter when the run installs it. The daemon calls it
// periodically and on shutdown. It does nothing when no feedback is
// queued.
func (l *Learner) Consolidate(ctx context.Context, s *Scope) (Consolidation, error) {
	start := time.Now()
	c := l.cfg
	var res Consolidation
	// Take what the run needs and train without the lock: feedback keeps
	// being learned meanwhile.
	s.mu.Lock()
	if len(s.queue) == 0 {
		s.mu.Unlock()
		return res, nil
	}
	queue := slices.Clone(s.queue)
	rng := rand.New(rand.NewPCG(s.nextSeed(c.Seed), 0xc0))
	replayed := sample(s.replay, c.ReplaySize, rng)
	var current []train.Applied
	if c.ConsolidateTransfer > 0 && s.micro != nil {
		current = cloneApplied(s.applied())
	}
	var cons, generalFisher, fisher, anchor *train.Adapter
	if s.cons != nil {
		cons, anchor, fisher, generalFisher = s.cons.Clone(), s.anchor, s.fisher.Clone(), s.generalFisher
	}
	seed := s.nextSeed(c.Seed)
	s.mu.Unlock()

	if cons == nil {
		a, err := train.NewAdapter(l.tr.Base(), train.AdapterConfig{Rank: c.ConsolidatedRank, Seed: seed})
		if err != nil {
			return res, err
		}
		cons, anchor, fisher = a, a.Clone(), a.ZeroLike()
		if gen := l.trainingGeneral(); c.EWCLambda > 0 && c.GeneralFisherRows > 0 && len(gen) > 0 {
			gen = gen[:min(c.GeneralFisherRows, len(gen))]
			f, err := l.fisherOf(ctx, cons, gen)
			if err != nil {
				return res, fmt.Errorf("consolidate: general Fisher: %w", err)
			}
			generalFisher = f
		}
	}
	examples := append(examplesOf(queue), examplesOf(replayed)...)
	if current != nil {
		learned, err := l.transferExamples(ctx, current, queue)
		if err != nil {
			return res, fmt.Errorf("consolidate: %w", err)
		}
		examples = append(examples, learned...)
	}
	res.Examples, res.Replayed = len(queue), len(replayed)
	opt := train.NewAdamW(cons, c.ConsolidateLR, 0)
	penalty := l.ewcPenalty(anchor, fisher, generalFisher)
	var lossSum float64
	var lossN int
	s.mu.Lock()
	budget := l.target(s)
	s.mu.Unlock()
	mu := 1.0
	for step := range c.ConsolidateSteps {
		if step > 0 && step%guardEvery == 0 && len(l.guardRows()) > 0 {
			// The guard's dual step: distil harder while the adapter
			// costs general text more than the budget.
			d, err := l.Drift(ctx, []train.Applied{{Adapter: cons, Scale: 1}})
			if err != nil {
				return res, fmt.Errorf("consolidate: %w", err)
			}
			mu = adjustMu(mu, d, budget)
		}
		batch := minibatch(examples, c.DeepBatch*2, step, rng)
		d, err := l.distillRows(ctx, step, mu)
		if err != nil {
			return res, fmt.Errorf("consolidate: %w", err)
		}
		batch = append(slices.Clone(batch), d...)
		r, err := l.tr.Step(ctx, cons, opt, batch, train.StepConfig{Penalty: penalty})
		if err != nil {
			return res, fmt.Errorf("consolidate: %w", err)
		}
		res.Steps++
		if step >= c.ConsolidateSteps-5 {
			lossSum += r.Objective
			lossN++
		}
		res.Penalty = r.Penalty
	}
	if lossN > 0 {
		res.Loss = lossSum / float64(lossN)
	}
	res.Mu = mu
	// What requests will apply must fit the guard's budget: the run's
	// change is scaled back from the values it started from.
	var (
		err      error
		repaired int
	)
	if res.Scale, res.Drift, repaired, err = l.guardConsolidated(ctx, budget, anchor, cons, opt, penalty, c.ConsolidateSteps); err != nil {
		return res, fmt.Errorf("consolidate: %w", err)
	}
	res.Steps += repaired
	newFisher, err := l.fisherOf(ctx, cons, examplesOf(queue))
	if err != nil {
		return res, fmt.Errorf("consolidate: Fisher: %w", err)
	}
	decay := float32(c.FisherDecay)
	fv, nv := fisher.Vectors(), newFisher.Vectors()
	for i, v := range fv {
		for j := range v {
			v[j] = decay*v[j] + (1-decay)*nv[i][j]
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// A reset, undo or other consolidation meanwhile: the run no longer
	// fits the scope.
	if len(s.queue) < len(queue) {
		return res, ErrChanged
	}
	for i, r := range queue {
		if s.queue[i].id != r.id {
			return res, ErrChanged
		}
	}
	newer := slices.Clone(s.queue[len(queue):])
	undo := s.marshal(false)
	s.cons, s.fisher, s.generalFisher, s.anchor = cons, fisher, generalFisher, cons.Clone()
	s.replay = append(s.replay, queue...)
	if over := len(s.replay) - c.ReplayCap; over > 0 {
		// Keep a uniform sample of everything replayed so far.
		rng.Shuffle(len(s.replay), func(i, j int) { s.replay[i], s.replay[j] = s.replay[j], s.replay[i] })
		s.replay = s.replay[:c.ReplayCap]
	}
	s.queue = nil
	s.micro, s.microOpt = nil, nil
	s.guardEnd = res.Drift
	s.stats.Steps += res.Steps
	s.stats.Consolidations++
	s.publish()
	// What arrived during the run was learned by the MicroLoRA just
	// dropped: learn it again over the new consolidated adapter.
	for _, rec := range newer {
		if _, err := l.instant(ctx, s, rec, time.Now(), nil); err != nil {
			s.undo = undo
			return res, err
		}
	}
	s.undo = undo
	res.Duration = time.Since(start)
	return res, nil
}

// transferExamples are the queued feedback's answers with what the
// scope applies now (current) as their teacher, weighted by
// Config.ConsolidateTransfer times the signal's weight; signals that
// lower an answer's likelihood bring none.
func (l *Learner) transferExamples(ctx context.Context, current []train.Applied, queue []record) ([]train.Example, error) {
	var out []train.Example
	for _, r := range queue {
		w := r.ex.Weight
		if w == 0 {
			w = 1
		}
		if w > 0 {
			out = append(out, train.Example{Tokens: r.ex.Tokens, Start: r.ex.Start, Weight: w * float32(l.cfg.ConsolidateTransfer)})
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	teachers, err := l.tr.Teach(ctx, current, out)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Teacher = teachers[i]
	}
	return out, nil
}

// ErrChanged: the scope was reset, undone or consolidated while a
// background run trained; its result was dropped.
var ErrChanged = errors.New("the scope changed during the run")

// ewcPenalty returns the step penalty holding a near anchor with the
// Fisher weights (the online one plus general text's, when present).
func (l *Learner) ewcPenalty(anchor, fisher, general *train.Adapter) func(a, g *train.Adapter) float64 {
	lambda := l.cfg.EWCLambda
	if lambda == 0 {
		return nil
	}
	return func(a, g *train.Adapter) float64 {
		av, gv, tv, fv := a.Vectors(), g.Vectors(), anchor.Vectors(), fisher.Vectors()
		var gen [][]float32
		if general != nil {
			gen = general.Vectors()
		}
		var pen float64
		for i, v := range av {
			for j, x := range v {
				f := float64(fv[i][j])
				if gen != nil {
					f += float64(gen[i][j])
				}
				if f == 0 {
					continue
				}
				d := float64(x - tv[i][j])
				pen += 0.5 * lambda * f * d * d
				gv[i][j] += float32(lambda * f * d)
			}
		}
		return pen
	}
}

// fisherOf is the empirical diagonal Fisher of a's values over examples:
// the mean over examples of each value's squared gradient of the
// example's negative log-likelihood.
func (l *Learner) fisherOf(ctx context.Context, a *train.Adapter, examples []train.Example) (*train.Adapter, error) {
	f := a.ZeroLike()
	g := a.ZeroLike()
	fv, gv := f.Vectors(), g.Vectors()
	n := 0
	for _, e := range examples {
		if e.Weight < 0 { // unlikelihood examples have no likelihood to keep
			continue
		}
		e.Weight, e.Avoid = 1, nil
		train.Zero(g)
		if _, err := l.tr.Gradients(ctx, a, nil, []train.Example{e}, g); err != nil {
			return nil, err
		}
		for i, v := range gv {
			for j, x := range v {
				fv[i][j] += x * x
			}
		}
		n++
	}
	if n > 0 {
		inv := 1 / float32(n)
		for _, v := range fv {
			for j := range v {
				v[j] *= inv
			}
		}
	}
	return f, nil
}

// minibatch returns the step-th batch of up to size examples, cycling
// through a shuffled order (all examples when they fit one batch).
func minibatch(examples []train.Example, size, step int, rng *rand.Rand) []train.Example {
	if len(examples) <= size {
		return examples
	}
	per := (len(examples) + size - 1) / size
	if step%per == 0 {
		rng.Shuffle(len(examples), func(i, j int) { examples[i], examples[j] = examples[j], examples[i] })
	}
	i := (step % per) * size
	return examples[i:min(i+size, len(examples))]
}
