package sona

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGuardHoldsGeneralText: with the guard on, what a scope serves after
// every instant update and after every consolidation (two in a row) costs
// at most the budget on the guard's general text, where the same feedback
// without the guard costs at least twice as much; the guard scales updates
// back rather than dropping them (the feedback is still learned).
func TestGuardHoldsGeneralText(t *testing.T) {
	ctx := context.Background()
	const budget = 0.006
	off := Config{MicroSteps: 3, MicroLR: 4e-3, ConsolidateSteps: 12, ConsolidateLR: 4e-3, ValidationEvery: -1, DistillWeight: -1, GuardBudget: -1}
	on := off
	on.GuardBudget = budget
	type result struct {
		worstInstant, worstCons float64 // drifts on the guard text
		transient               float64 // the worst of any publication
		scaled                  bool    // some update was scaled back
		nll, baseNLL            float64
	}
	var res [2]result
	for i, c := range []Config{off, on} {
		l, tr := tinyLearner(t, c)
		// One measure for both runs: the guard's drift of a learner
		// with the guard on over the same general text.
		probe := NewLearner(tr, Options{Config: on, General: l.general})
		if len(probe.guardRows()) != 4 || len(probe.trainingGeneral()) != len(l.general)-4 {
			t.Fatalf("guard rows %d, training rows %d of %d", len(probe.guardRows()), len(probe.trainingGeneral()), len(l.general))
		}
		drift := func(s *Scope) float64 {
			_, as := s.Adapters()
			d, err := probe.Drift(ctx, as)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		s := NewScope("u")
		rng := rand.New(rand.NewPCG(8, 8))
		var fbs []Feedback
		for j := range 8 {
			fb := feedback(rng, tr.Base().Config().Vocab)
			fbs = append(fbs, fb)
			upd, err := l.Feedback(ctx, s, fb, func(uint64) {
				// The earlier steps' publications are not measured by
				// the guard: their drift is only reported.
				res[i].transient = max(res[i].transient, drift(s))
			})
			if err != nil {
				t.Fatal(err)
			}
			res[i].worstInstant = max(res[i].worstInstant, drift(s))
			res[i].scaled = res[i].scaled || upd.Scale < 1
			if j%4 == 3 {
				cres, err := l.Consolidate(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				res[i].scaled = res[i].scaled || cres.Scale < 1
				res[i].worstCons = max(res[i].worstCons, drift(s))
			}
		}
		_, as := s.Adapters()
		res[i].nll, res[i].baseNLL = nllOf(t, tr, as, fbs), nllOf(t, tr, nil, fbs)
	}
	t.Logf("worst drift on the guard text, instant and consolidated: without the guard %+.2f%%, %+.2f%%; with %+.2f%%, %+.2f%% (after an unmeasured step %+.2f%%); feedback NLL base %.3f, without %.3f, with %.3f",
		100*res[0].worstInstant, 100*res[0].worstCons, 100*res[1].worstInstant, 100*res[1].worstCons, 100*res[1].transient, res[0].baseNLL, res[0].nll, res[1].nll)
	if !(res[0].worstInstant > 2*budget) || !(res[0].worstCons > 2*budget) || res[0].scaled {
		t.Fatal("without the guard the feedback should cost more than the budget on general text")
	}
	if !(res[1].worstInstant <= budget) || !(res[1].worstCons <= budget) || !res[1].scaled {
		t.Fatalf("with the guard an update served more than the %.1f%% budget", 100*budget)
	}
	if !(res[1].nll < res[1].baseNLL-0.1*(res[1].baseNLL-res[0].nll)) {
		t.Fatal("with the guard the feedback was not learned")
	}
}

// TestAdjustMu: the guard's dual step doubles the distillation multiplier
// while over the budget (up to maxMu), halves it (down to 1) with half the
// budget to spare, and keeps it in between.
func TestAdjustMu(t *testing.T) {
	for _, tc := range []struct{ mu, drift, want float64 }{
		{0, 0.02, 2}, // unset means 1
		{1, 0.011, 2},
		{8, 0.02, 16},
		{16, 0.05, maxMu},
		{4, 0.007, 4},
		{4, 0.004, 2},
		{1, 0, 1},
	} {
		if got := adjustMu(tc.mu, tc.drift, 0.01); got != tc.want {
			t.Errorf("adjustMu(%v, %v, 0.01) = %v, want %v", tc.mu, tc.drift, got, tc.want)
		}
	}
}

// TestLineSearch: the guard keeps the largest fraction of an update (to
// 1/16) whose drift fits, all of it when it fits, none when nothing does.
func TestLineSearch(t *testing.T) {
	l := &Learner{cfg: Config{GuardBudget: 0.01}}
	for _, tc := range []struct {
		name      string
		drift     func(a float64) float64
		wantAlpha float64
	}{
		{"fits", func(a float64) float64 { return 0.005 * a }, 1},
		{"quadratic", func(a float64) float64 { return 0.04 * a * a }, 0.5},
		{"linear", func(a float64) float64 { return 0.03 * a }, 0.3125},
		{"never", func(a float64) float64 { return 0.02 + a }, 0},
	} {
		calls := 0
		alpha, d, err := l.lineSearch(0.01, math.NaN(), func(a float64) (float64, error) {
			calls++
			return tc.drift(a), nil
		})
		if err != nil || alpha != tc.wantAlpha || d != tc.drift(alpha) || (alpha > 0 && d > 0.01) {
			t.Errorf("%s: alpha %v drift %v (%v), want alpha %v", tc.name, alpha, d, err, tc.wantAlpha)
		}
		if calls > 2+guardSearch {
			t.Errorf("%s: %d measurements", tc.name, calls)
		}
	}
}
