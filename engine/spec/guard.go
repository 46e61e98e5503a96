package spec

import "time"

// The guard: speculation's cost model predicts from noisy timings, and a
// wrong prediction could make decoding slower than without it. So the
// controller also measures the outcome: decode steps run in windows of
// guardWindow steps, one window in guardEvery with speculation set the
// other way than it currently is, and each window's tokens and wall time
// go to the tally of its setting, per number of decoding sequences. When
// the tallies show speculation losing, it is switched off for that batch
// size (and back on when the rarer windows with it show it winning).
const (
	guardWindow = 16
	guardEvery  = 8
	guardDecay  = 0.8 // weight of older windows in a tally
	maxGuardSeq = 32
	guardLose   = 0.98 // off when speculating makes less than this share of the tokens per second without
	guardWin    = 1.02 // back on above this
)

// guard is the controller's measured check on speculation.
type guard struct {
	steps, windows int
	// per batch size (decoding sequences): the setting and the tallies of
	// windows run with and without speculation
	off      [maxGuardSeq + 1]bool
	on, base [maxGuardSeq + 1]tally
	cur      [maxGuardSeq + 1]tally // the current window's tally
	curMode  [maxGuardSeq + 1]bool
	curValid [maxGuardSeq + 1]bool
}

// tally is decayed sums of tokens and seconds over windows.
type tally struct {
	tokens, secs float64
	windows      int
}

func (t *tally) rate() float64 { return t.tokens / t.secs }

// Allowed reports whether a decode step of n sequences may speculate: the
// guard's setting for n, reversed in one window of guardEvery.
func (c *Controller) Allowed(n int) bool {
	if c.o.Fixed > 0 {
		return true
	}
	g := &c.guard
	n = min(n, maxGuardSeq)
	explore := g.windows%guardEvery == guardEvery-1
	return !g.off[n] != explore
}

// StepDone records a decode step of n sequences that produced tokens
// tokens in d of wall time, with speculation allowed or not (Allowed's
// answer for it), and updates the guard at the end of each window.
func (c *Controller) StepDone(n, tokens int, d time.Duration, allowed bool) {
	if c.o.Fixed > 0 || n <= 0 || d <= 0 {
		return
	}
	g := &c.guard
	n = min(n, maxGuardSeq)
	if !g.curValid[n] || g.curMode[n] != allowed {
		g.cur[n], g.curMode[n], g.curValid[n] = tally{}, allowed, true
	}
	g.cur[n].tokens += float64(tokens)
	g.cur[n].secs += d.Seconds()
	g.steps++
	if g.steps%guardWindow != 0 {
		return
	}
	g.windows++
	for k := range g.cur {
		if !g.curValid[k] || g.cur[k].secs == 0 {
			continue
		}
		t := &g.base[k]
		if g.curMode[k] {
			t = &g.on[k]
		}
		t.tokens = t.tokens*guardDecay + g.cur[k].tokens
		t.secs = t.secs*guardDecay + g.cur[k].secs
		t.windows++
		g.curValid[k] = false
		if g.on[k].windows >= 2 && g.base[k].windows >= 1 {
			r := g.on[k].rate() / g.base[k].rate()
			switch {
			case !g.off[k] && r < guardLose:
				g.off[k] = true
			case g.off[k] && r > guardWin:
				g.off[k] = false
			}
		}
	}
}

// GuardRatio returns the measured decode rate with speculation over the
// rate without for n sequences, and whether both have been measured.
func (c *Controller) GuardRatio(n int) (float64, bool) {
	g := &c.guard
	n = min(n, maxGuardSeq)
	if g.on[n].windows == 0 || g.base[n].windows == 0 {
		return 0, false
	}
	return g.on[n].rate() / g.base[n].rate(), true
}
