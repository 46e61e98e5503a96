package sona

import (
	"context"
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
