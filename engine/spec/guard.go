package spec

import "time"

// The guard: speculation's cost model predicts from noisy timings, and a
// wrong prediction could make decoding slower than without it. So the
// controller also measures the outcome. Decode steps in which some
// sequence may speculate run in windows of guardWindow steps, for each
// batch size and set of speculation kinds (a draft model's passes cost
// far more than a lookup, and trees verify more tokens than chains); one
// window in guardEvery (one in guardEarly while a setting is young; both
// periods back off as below) runs with speculation set
// the other way than it currently is, and each window's tokens and wall
// time go to the tally of its setting, whose rate is the second best of
// its last guardRates windows (tally.rate). When the tallies show
// speculation losing, it is switched off for that batch size and class, and back on
// when the rarer windows with it show it winning. Prompt lookup starts
// on, since its drafts cost nothing to make; a draft model starts off,
// since its passes are lost whenever its drafts are, and is switched on
// once its exploring windows show it winning. An exploring window that
// confirms the setting clearly (its rate past guardLose or guardWin of
// the other setting's) doubles the period before the next, up to
// guardEvery<<guardMaxBackoff: a draft model that keeps losing by a wide
// margin costs that margin in every exploring window, and one window in
// guardEvery made that 5 % of the decode time. Any other outcome, and a
// switch, brings the period back to guardEvery.
//
// Prompt lookup is judged within its own windows instead (paired): the
// steps of a window that verified no draft are plain decode steps of the
// same stretch of text, so the window's tokens at their time a step
// (tokens/n plain steps) is what it would have cost without speculation,
// and its ratio to the window's real time is speculation's speed-up
// there. Windows of different settings see different text: a summary's
// first tokens are new (nothing to look up) and its later ones repeat
// what it wrote, and comparing a window of one with a window of the
// other had switched lookup off just before it paid (replaying the
// speculation workloads' greedy output at the 19M F16 model's pass costs:
// summary 1.40x with window against window, 1.61x never switched off).
// So lookup, while on, needs no exploring windows without it; while off,
// its exploring windows measure the same ratio. Where a window has fewer
// than two plain steps, a plain step's time is the decayed mean of
// earlier ones (and without any, the cost table's).
const (
	guardWindow = 8
	guardEvery  = 8
	guardEarly  = 4  // the reversed window's period over a key's first guardYoung windows
	guardYoung  = 16 // windows
	guardDecay  = 0.8
	maxGuardSeq = 32
	guardLose   = 0.98 // off when speculating makes less than this share of the tokens per second without
	guardWin    = 1.02 // back on above this
	// A draft model is switched on only above guardModelWin, with at
	// least guardModelWindows windows of each setting measured: one noisy
	// window must not start the passes it costs.
	guardModelWin     = 1.05
	guardModelWindows = 2
	guardMaxBackoff   = 3
	// Prompt lookup, off, explores one window in pairedEvery, backing
	// off at most to one in pairedEvery<<pairedMaxBackoff: its windows
	// cost only the drafts verified in vain (a few percent of a window
	// where it loses), and a summary turns to repeating itself within a
	// few windows, which an exploring window one in 16 would miss.
	pairedEvery      = 2
	pairedMaxBackoff = 1
	pairedMinWindows = 2 // windows measured before lookup is switched off
	// pairedLose: lookup is switched off when its windows' decayed
	// speed-up falls under this (the floor). Its paired measure
	// is not confounded by the text as window against window was, so it
	// need not switch off at the first 2 %: at 0.98 the replayed summary
	// and code edit lost 4-5 % (TestControllerReplay: 1.546 and 1.126x
	// against 1.610 and 1.182x always allowed).
	pairedLose = 0.95
)

// guardKey is a batch size (capped) and the kinds the step's sequences
// speculate with.
type guardKey struct {
	n     int
	kinds Kinds
}

// guard is the controller's measured check on speculation.
type guard struct {
	keys map[guardKey]*guardState
}

// guardState is one key's setting, tallies and current window.
type guardState struct {
	off           bool
	on, base      tally
	cur           tally
	curOn         bool
	steps, window int
	backoff       int // the exploring period is guardEvery<<backoff
	// Paired (lookup): the current window's plain steps, a decayed mean
	// of plain step time, and the decayed sums over the windows with
	// speculation of their time without it (cf) and with it (secs).
	curPlain   float64 // seconds in the window's plain steps
	curPlainN  int
	plain      float64 // decayed mean seconds of a plain step; 0: none yet
	cf, secs   float64
	ratioCount int // windows in cf and secs
}

// paired reports whether kinds are judged within their own windows: no
// draft model, whose passes are spent whether or not they pay.
func paired(kinds Kinds) bool { return kinds&KindDraft == 0 }

// pairedRatio is speculation's speed-up over the recent windows with it:
// their time without it over their time with it, each window weighted
// by its time (a speed-up comes in bursts, where the text repeats, and
// small losses in between; a median of windows would miss the bursts).
func (st *guardState) pairedRatio() float64 { return st.cf / st.secs }

// tally is decayed sums of tokens and seconds over windows, and the
// rates of the last guardRates windows.
type tally struct {
	tokens, secs float64
	windows      int
	rates        [guardRates]float64
}

// guardRates is how many recent window rates a tally keeps.
const guardRates = 6

// rate is the tally's decode rate: the second highest of its recent
// windows' rates once it has three (the highest of two, the one of one).
// Other processes only ever slow a window down, so a window that ran
// while they held the cores says less than the best ones, and one such
// window must not switch speculation off (or keep it off); the decayed
// sums stand in where no window was recorded.
func (t *tally) rate() float64 {
	n := min(t.windows, guardRates)
	if n == 0 {
		return t.tokens / t.secs
	}
	var best, second float64
	for _, r := range t.rates[:n] {
		if r > best {
			best, second = r, best
		} else if r > second {
			second = r
		}
	}
	if n < 3 {
		return best
	}
	return second
}

func (g *guard) state(n int, kinds Kinds) *guardState {
	if g.keys == nil {
		g.keys = map[guardKey]*guardState{}
	}
	k := guardKey{min(n, maxGuardSeq), kinds}
	st := g.keys[k]
	if st == nil {
		st = &guardState{off: kinds&KindDraft != 0}
		g.keys[k] = st
	}
	return st
}

// Allowed reports whether a decode step of n sequences may speculate
// with kinds: the guard's setting, reversed in the exploring windows.
func (c *Controller) Allowed(n int, kinds Kinds) bool {
	if c.o.Fixed > 0 {
		return true
	}
	st := c.guard.state(n, kinds)
	if paired(kinds) {
		// On, its windows measure themselves; off, it explores every
		// pairedEvery<<backoff windows.
		return !st.off || st.window%(pairedEvery<<st.backoff) == pairedEvery<<st.backoff-1
	}
	return !st.off != st.exploring()
}

// exploring reports whether the current window runs reversed. A young
// setting explores one window in guardEarly, backed off like the others
// once an exploring window confirms it clearly: a short request's decode
// is all young windows (96 tokens are 12), in which a draft model that
// loses every exploring window ran in one window of four. (On the 19M
// F16 and Q8_0 files draft-only decode read 0.93-1.01x of none before
// and 0.94-1.01x after: within that host's noise.)
func (st *guardState) exploring() bool {
	period := guardEvery << st.backoff
	if st.window < guardYoung {
		period = guardEarly << st.backoff
	}
	return st.window%period == period-1
}

// StepDone records a decode step of n sequences speculating with kinds
// that produced tokens tokens in d (of the cost clock), verifying
// verified draft tokens, with speculation allowed or not (Allowed's answer
// for it), and updates the guard at the end of each window. Steps in
// which no sequence could speculate are not recorded.
func (c *Controller) StepDone(n int, kinds Kinds, tokens, verified int, d time.Duration, allowed bool) {
	if c.o.Fixed > 0 || n <= 0 || d <= 0 {
		return
	}
	st := c.guard.state(n, kinds)
	if st.steps%guardWindow == 0 || st.curOn != allowed {
		st.cur, st.curOn = tally{}, allowed
		st.curPlain, st.curPlainN = 0, 0
	}
	st.cur.tokens += float64(tokens)
	st.cur.secs += d.Seconds()
	if verified == 0 {
		st.curPlain += d.Seconds()
		st.curPlainN++
		if st.plain == 0 {
			st.plain = d.Seconds()
		}
		st.plain = st.plain*guardDecay + d.Seconds()*(1-guardDecay)
	}
	st.steps++
	if st.steps%guardWindow != 0 {
		return
	}
	if paired(kinds) {
		c.pairedWindow(st, n)
		return
	}
	explored := st.curOn == st.off // this window ran reversed
	st.window++
	t := &st.base
	if st.curOn {
		t = &st.on
	}
	t.tokens = t.tokens*guardDecay + st.cur.tokens
	t.secs = t.secs*guardDecay + st.cur.secs
	t.rates[t.windows%guardRates] = st.cur.tokens / st.cur.secs
	t.windows++
	if st.on.windows >= 1 && st.base.windows >= 1 {
		r := st.on.rate() / st.base.rate()
		win, enough := guardWin, true
		if kinds&KindDraft != 0 {
			win = guardModelWin
			enough = st.on.windows >= guardModelWindows && st.base.windows >= guardModelWindows
		}
		wasOff := st.off
		switch {
		case !st.off && r < guardLose:
			st.off = true
		case st.off && r > win && enough:
			st.off = false
		}
		switch {
		case st.off != wasOff:
			st.backoff = 0
		case explored:
			// The exploring window's own rate against the other
			// setting's: the tallies' second-best rule hides a first
			// window that finds the other setting winning.
			w := st.cur.tokens / st.cur.secs
			wr := w / st.base.rate() // speculating over not
			if !st.curOn {
				wr = st.on.rate() / w
			}
			if st.off && wr < guardLose || !st.off && wr > guardWin {
				st.backoff = min(st.backoff+1, guardMaxBackoff)
			} else {
				st.backoff = 0
			}
		}
	}
}

// pairedWindow ends a window of a paired key (see the guard's comment).
// A window with speculation yields its time without it (its tokens at a
// plain step's time). While on, the decayed sums of the recent windows
// switch speculation off below pairedLose, once pairedMinWindows are
// measured; while off, an exploring window's own speed-up above guardWin
// switches it back on, and one below guardLose backs the exploring
// period off.
func (c *Controller) pairedWindow(st *guardState, n int) {
	st.window++
	if !st.curOn {
		return
	}
	plain := st.plain
	if st.curPlainN >= 2 {
		plain = st.curPlain / float64(st.curPlainN)
	}
	if plain == 0 {
		if !c.steps.known(n) {
			return
		}
		plain = c.stepCost(n) + float64(n)*c.next
	}
	cf := st.cur.tokens / float64(n) * plain
	if st.off {
		r := cf / st.cur.secs
		switch {
		case r > guardWin:
			st.off, st.backoff = false, 0
			st.cf, st.secs, st.ratioCount = 0, 0, 0
		case r < guardLose:
			st.backoff = min(st.backoff+1, pairedMaxBackoff)
			return
		default:
			st.backoff = 0
			return
		}
	}
	st.cf = st.cf*guardDecay + cf
	st.secs = st.secs*guardDecay + st.cur.secs
	st.ratioCount++
	if st.ratioCount >= pairedMinWindows && st.pairedRatio() < pairedLose {
		st.off, st.backoff = true, 0
	}
}

// GuardRatio returns the measured decode rate with speculation over the
// rate without for n sequences speculating with kinds, and whether both
// have been measured.
func (c *Controller) GuardRatio(n int, kinds Kinds) (float64, bool) {
	st := c.guard.state(n, kinds)
	if paired(kinds) {
		if st.ratioCount == 0 {
			return 0, false
		}
		return st.pairedRatio(), true // while on
	}
	if st.on.windows == 0 || st.base.windows == 0 {
		return 0, false
	}
	return st.on.rate() / st.base.rate(), true
}
