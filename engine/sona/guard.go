package sona

import (
	"context"
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/train"
)

// The general-text guard. Distillation and EWC++ make an update cheap on
// general text, but they only weigh its cost against the feedback's
// objective: the MicroLoRA carries every correction since the last
// consolidation, and consolidations build on each other, so the cost adds
// up. The guard bounds it. The last Config.GuardRows examples of the
// learner's general text are held out of distillation and of every
// Fisher; the base model's perplexity on them is measured once. Whenever
// an update would change what a scope serves — before every instant step
// is published, and before a consolidation installs its adapter — the
// served model's perplexity on them is measured, and when it is more than
// Config.GuardBudget above the base's, the update is scaled back along
// its own direction until it fits: the MicroLoRA's B (so its change to
// every weight, B·A) by a factor α, the consolidated adapter from its
// values before the run towards the new ones by α (θ₀ + α(θ₁ − θ₀)). α is
// found by bisection on [0, 1] (guardSearch evaluations). α = 0 takes the
// update back entirely (the MicroLoRA then adds nothing; the consolidated
// adapter stays as it was), so what a scope serves never costs more than
// the budget on the guard text unless it already did before the update.

// The first step of an instant update is published unmeasured (a
// measurement costs more than the step the user waits for). Its cost is
// measured afterwards, when the update's last step is guarded: the
// drift of what the first step published, less the drift the previous
// update ended at, is the step's increase, and Scope.guardMargin follows
// it (the larger of the new increase and half the previous margin). The
// guard then holds the end of every update, and every consolidation,
// GuardBudget − margin below the base, so that the next first step stays
// within the budget too.

// guardSearch is the number of bisection steps of the guard's line
// search: α to within 1/16.
const guardSearch = 4

// guardRows returns the general examples the guard measures (none when
// the guard is off or the general text leaves nothing to distill).
func (l *Learner) guardRows() []train.Example {
	n := l.cfg.GuardRows
	if l.cfg.GuardBudget <= 0 || n <= 0 || len(l.general) <= n {
		return nil
	}
	return l.general[len(l.general)-n:]
}

// trainingGeneral returns the general examples distillation and the
// general-text Fisher use: all but the guard's.
func (l *Learner) trainingGeneral() []train.Example {
	return l.general[:len(l.general)-len(l.guardRows())]
}

// guardBase returns the base model's mean NLL on the guard rows, computed
// on first use.
func (l *Learner) guardBase(ctx context.Context) (float64, error) {
	l.guardMu.Lock()
	defer l.guardMu.Unlock()
	if l.guardBaseSet {
		return l.guardBaseNLL, nil
	}
	r, err := l.tr.Evaluate(ctx, nil, l.guardRows())
	if err != nil {
		return 0, fmt.Errorf("guard: base perplexity: %w", err)
	}
	l.guardBaseNLL, l.guardBaseSet = r.NLL, true
	return r.NLL, nil
}

// Drift is the relative change of the perplexity of the learner's guard
// text (Config.GuardRows) with adapters applied, against the base model:
// 0.02 is 2 % worse. It is 0 when the guard is off.
func (l *Learner) Drift(ctx context.Context, adapters []train.Applied) (float64, error) {
	rows := l.guardRows()
	if len(rows) == 0 {
		return 0, nil
	}
	base, err := l.guardBase(ctx)
	if err != nil {
		return 0, err
	}
	r, err := l.tr.Evaluate(ctx, adapters, rows)
	if err != nil {
		return 0, fmt.Errorf("guard: %w", err)
	}
	return math.Expm1(r.NLL - base), nil
}

// repair runs up to Config.GuardRepair distillation-only steps on a
// (over frozen, with penalty) while what would be served, served(), costs
// more than the budget on the guard text: steps that pull general text
// back towards the base without a feedback term, so the update keeps what
// it learned where general text does not need the values. It returns the
// steps taken and the drift of the last measurement; the caller holds
// what a and opt belong to.
func (l *Learner) repair(ctx context.Context, budget float64, a *train.Adapter, opt *train.AdamW, frozen []train.Applied,
	penalty func(a, g *train.Adapter) float64, served []train.Applied, at int) (steps int, first, drift float64, err error) {
	for {
		if drift, err = l.Drift(ctx, served); steps == 0 {
			first = drift
		}
		if err != nil || drift <= budget || steps >= l.cfg.GuardRepair {
			return steps, first, drift, err
		}
		batch, err := l.distillRows(ctx, at+steps, 1)
		if err != nil || len(batch) == 0 {
			return steps, first, drift, err
		}
		if _, err := l.tr.Step(ctx, a, opt, batch, train.StepConfig{Frozen: frozen, Penalty: penalty}); err != nil {
			return steps, first, drift, fmt.Errorf("guard: repair: %w", err)
		}
		steps++
	}
}

// learnMargin measures what the update's first step published (first,
// over the consolidated adapter) and updates the scope's margin; the
// caller holds the lock. s.guardEnd is the drift the last guarded state
// ended at.
func (l *Learner) learnMargin(ctx context.Context, s *Scope, first *train.Adapter) error {
	if first == nil || len(l.guardRows()) == 0 {
		return nil
	}
	d, err := l.Drift(ctx, append(s.frozenCons(), train.Applied{Adapter: first, Scale: 1}))
	if err != nil {
		return err
	}
	s.guardFirst = d
	s.guardMargin = max(d-s.guardEnd, s.guardMargin/2, 0)
	return nil
}

// target is the drift the guard holds an update's end to: the budget
// less the scope's margin for the next unmeasured first step, never
// below half the budget.
func (l *Learner) target(s *Scope) float64 {
	return max(l.cfg.GuardBudget-s.guardMargin, l.cfg.GuardBudget/2)
}

// adjustMu is the guard's dual step on the distillation's weight: the
// multiplier doubles (up to maxMu) while updates come out over the
// budget and halves (down to 1) once they fit with room to spare, so
// that distillation weighs as much as general text needs, rather than
// the update being scaled back afterwards.
func adjustMu(mu, drift, budget float64) float64 {
	mu = max(mu, 1)
	switch {
	case drift > budget:
		return min(2*mu, maxMu)
	case drift < budget/2:
		return max(mu/2, 1)
	}
	return mu
}

// maxMu bounds the guard's distillation multiplier; guardEvery is how
// many consolidation steps run between its measurements.
const (
	maxMu      = 16
	guardEvery = 10
)

// lineSearch returns the largest α in [0, 1] (to within 2^-guardSearch)
// for which drift(α) is within the budget, and the drift there: 1 when
// the whole update fits, 0 when no tried fraction does. d1 is drift(1)
// when already measured (NaN: not yet).
func (l *Learner) lineSearch(budget, d1 float64, drift func(alpha float64) (float64, error)) (alpha, d float64, err error) {
	if d = d1; math.IsNaN(d) {
		if d, err = drift(1); err != nil {
			return 1, d, err
		}
	}
	if d <= budget {
		return 1, d, nil
	}
	lo, hi, dlo := 0.0, 1.0, math.NaN()
	for range guardSearch {
		mid := (lo + hi) / 2
		dm, err := drift(mid)
		if err != nil {
			return 0, 0, err
		}
		if dm <= budget {
			lo, dlo = mid, dm
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		if dlo, err = drift(0); err != nil {
			return 0, 0, err
		}
	}
	return lo, dlo, nil
}

// guardMicro scales the scope's MicroLoRA back until what the scope
// serves (consolidated adapter and MicroLoRA) fits the guard's budget,
// and returns the factor and the drift after; the caller holds the lock.
func (l *Learner) guardMicro(ctx context.Context, s *Scope, penalty func(a, g *train.Adapter) float64) (alpha, drift float64, err error) {
	if len(l.guardRows()) == 0 || s.micro == nil {
		return 1, 0, nil
	}
	frozen := s.frozenCons()
	served := append(frozen[:len(frozen):len(frozen)], train.Applied{Adapter: s.micro, Scale: 1})
	budget := l.target(s)
	steps, natural, d1, err := l.repair(ctx, budget, s.micro, s.microOpt, frozen, penalty, served, s.stats.Steps)
	s.stats.Steps += steps
	if err != nil {
		return 1, 0, err
	}
	s.guardMu = adjustMu(s.guardMu, natural, budget)
	defer func() { s.guardEnd = drift }()
	alpha, drift, err = l.lineSearch(budget, d1, func(a float64) (float64, error) {
		as := frozen
		if a > 0 {
			as = append(frozen[:len(frozen):len(frozen)], train.Applied{Adapter: s.micro, Scale: float32(a)})
		}
		return l.Drift(ctx, as)
	})
	if err != nil || alpha == 1 {
		return alpha, drift, err
	}
	for _, p := range s.micro.Targets {
		for i := range p.B {
			p.B[i] *= float32(alpha)
		}
	}
	return alpha, drift, nil
}

// guardConsolidated moves cons back towards from (its values before the
// run) until it fits the guard's budget on its own (what the scope serves
// once it is installed), and returns the factor and the drift after.
func (l *Learner) guardConsolidated(ctx context.Context, budget float64, from, cons *train.Adapter, opt *train.AdamW, penalty func(a, g *train.Adapter) float64, at int) (alpha, drift float64, repaired int, err error) {
	if len(l.guardRows()) == 0 {
		return 1, 0, 0, nil
	}
	served := []train.Applied{{Adapter: cons, Scale: 1}}
	repaired, _, d1, err := l.repair(ctx, budget, cons, opt, nil, penalty, served, at)
	if err != nil {
		return 1, 0, repaired, err
	}
	alpha, drift, err = l.guardAdapter(ctx, budget, d1, from, cons)
	return alpha, drift, repaired, err
}

// guardAdapter moves a back towards from (θ₀ + α(θ₁ − θ₀)) until a
// alone fits budget on the guard's text, and returns the factor and the
// drift after; d1 is a's drift when already measured (NaN: not yet).
func (l *Learner) guardAdapter(ctx context.Context, budget, d1 float64, from, a *train.Adapter) (alpha, drift float64, err error) {
	if len(l.guardRows()) == 0 {
		return 1, 0, nil
	}
	served := []train.Applied{{Adapter: a, Scale: 1}}
	trained := a.Clone()
	fv, tv, cv := from.Vectors(), trained.Vectors(), a.Vectors()
	set := func(a float64) {
		for i, v := range cv {
			for j := range v {
				v[j] = fv[i][j] + float32(a)*(tv[i][j]-fv[i][j])
			}
		}
	}
	alpha, drift, err = l.lineSearch(budget, d1, func(a float64) (float64, error) {
		set(a)
		return l.Drift(ctx, served)
	})
	if err != nil {
		return 0, 0, err
	}
	set(alpha)
	return alpha, drift, nil
}
