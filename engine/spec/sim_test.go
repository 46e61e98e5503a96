package spec

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simModel is a simulated decode: a forward pass of n tokens costs
// fixed + per·(n-1), a draft pass draft, every duration multiplied by
// noise; each draft token is right with probability alpha.
type simModel struct {
	fixed, per, draft time.Duration
	alpha             float64
	noise             float64 // spread of the lognormal noise
	// burst is the probability that another process holds a core during
	// a duration, which then takes four times as long (one-sided noise,
	// as on a shared machine).
	burst float64
}

// simulate decodes tokens tokens of one sequence with the controller (or
// with a fixed draft length when fixed >= 0) and returns the tokens per
// simulated second.
func simulate(m simModel, fixed int, tokens int, seed uint64, useModel bool) float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	noisy := func(d time.Duration) time.Duration {
		x := float64(d) * math.Exp(r.NormFloat64()*m.noise)
		if m.burst > 0 && r.Float64() < m.burst {
			x *= 4
		}
		return time.Duration(x)
	}
	o := Options{}
	if fixed >= 0 {
		o.Fixed = max(fixed, 1)
	}
	c := NewController(o)
	var s Seq
	var elapsed time.Duration
	made := 0
	for made < tokens {
		kinds := KindLookup
		if useModel {
			kinds = KindDraft
		}
		allowed := fixed != 0 && c.Allowed(1, kinds)
		var d Draft
		var spent time.Duration
		if allowed {
			k := 0
			if useModel {
				k = c.DraftSteps([]*Seq{&s}, 1)
			} else {
				k = 8
			}
			for i := range k {
				d.Add(int32(i-1), int32(i), SrcModel)
				if useModel {
					dd := noisy(m.draft)
					c.DraftTime(1, dd)
					spent += dd
				}
			}
			c.Trim([]*Seq{&s}, []*Draft{&d}, 1)
		}
		step := noisy(m.fixed + time.Duration(d.Len())*m.per)
		c.StepTime(1+d.Len(), step)
		spent += step
		var path []int32
		for i := range d.Len() {
			if r.Float64() >= m.alpha {
				break
			}
			path = append(path, int32(i))
		}
		c.Observe(&s, &d, path, len(path) < d.Len())
		got := 1 + len(path)
		c.StepDone(1, kinds, got, d.Len(), spent, allowed)
		made += got
		elapsed += spent
	}
	return float64(made) / elapsed.Seconds()
}

// TestControllerUnderNoise simulates decoding with noisy timings: the
// adaptive controller must come close to the best fixed draft length
// where speculation pays, and stay near decoding without it where it
// does not.
func TestControllerUnderNoise(t *testing.T) {
	for _, tc := range []struct {
		name     string
		m        simModel
		useModel bool
	}{
		{"cheap verify, good draft model", simModel{5 * time.Millisecond, 500 * time.Microsecond, 700 * time.Microsecond, 0.85, 0.3, 0}, true},
		{"cheap verify, lookup", simModel{5 * time.Millisecond, 500 * time.Microsecond, 0, 0.7, 0.3, 0}, false},
		{"cheap verify, lookup, bursty load", simModel{5 * time.Millisecond, 500 * time.Microsecond, 0, 0.7, 0.1, 0.15}, false},
		{"linear verify, draft model", simModel{time.Millisecond, 4 * time.Millisecond, 700 * time.Microsecond, 0.85, 0.3, 0}, true},
		{"poor drafts", simModel{5 * time.Millisecond, 500 * time.Microsecond, 700 * time.Microsecond, 0.1, 0.3, 0}, true},
		{"expensive draft model", simModel{5 * time.Millisecond, 500 * time.Microsecond, 5 * time.Millisecond, 0.85, 0.3, 0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const tokens = 3000
			var plain, adaptive, best float64
			bestK := 0
			for seed := uint64(1); seed <= 3; seed++ {
				plain += simulate(tc.m, 0, tokens, seed, tc.useModel)
				adaptive += simulate(tc.m, -1, tokens, seed, tc.useModel)
			}
			for k := 1; k <= 8; k++ {
				var v float64
				for seed := uint64(1); seed <= 3; seed++ {
					v += simulate(tc.m, k, tokens, seed, tc.useModel)
				}
				if v > best {
					best, bestK = v, k
				}
			}
			t.Logf("plain %.0f, adaptive %.0f (%.2fx), best fixed k=%d %.0f (%.2fx) tokens/s",
				plain/3, adaptive/3, adaptive/plain, bestK, best/3, best/plain)
			if adaptive < 0.95*plain {
				t.Errorf("adaptive speculation is %.2fx of none", adaptive/plain)
			}
			if best > plain*1.1 && adaptive < 0.85*best {
				t.Errorf("adaptive reaches %.2f of the best fixed length", adaptive/best)
			}
		})
	}
}
