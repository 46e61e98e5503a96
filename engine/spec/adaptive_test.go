package spec

import (
	"math"
	"testing"
	"time"
)

// learn feeds s's acceptance for src with hits of trials one-token
// drafts, the hits spread evenly.
func learn(c *Controller, s *Seq, src Source, hits, trials int) {
	for i := range trials {
		var d Draft
		d.Add(-1, 7, src)
		var path []int32
		if (i+1)*hits/trials > i*hits/trials {
			path = []int32{0}
		}
		c.Observe(s, &d, path, true)
	}
}

// costs records forward passes of 1..max tokens costing fixed + per·n.
func costs(c *Controller, maxTokens int, fixed, per time.Duration) {
	for n := 1; n <= maxTokens; n++ {
		for range minSamples {
			c.StepTime(n, fixed+time.Duration(n)*per)
		}
	}
}

func chain(n int, src Source) *Draft {
	var d Draft
	for i := range n {
		d.Add(int32(i-1), int32(100+i), src)
	}
	return &d
}

func TestTrim(t *testing.T) {
	for _, tc := range []struct {
		name        string
		hits        int // of 40 trials
		fixed, per  time.Duration
		min, max    int // kept tokens of an 8-token chain
		probeStreak int // steps without a draft before
	}{
		{"cheap tokens, good drafts", 38, 10 * time.Millisecond, 200 * time.Microsecond, 6, 8, 0},
		{"cheap tokens, poor drafts", 1, 10 * time.Millisecond, 200 * time.Microsecond, 0, 1, 0},
		{"tokens as costly as a step, good drafts", 38, time.Millisecond, 20 * time.Millisecond, 0, 0, 0},
		{"probe when due", 0, time.Millisecond, 5 * time.Millisecond, 1, 1, 60}, // a probe costs most of a step: every 42 steps
		{"probe not yet due", 0, time.Millisecond, 5 * time.Millisecond, 0, 0, 30},
		{"middling", 30, 5 * time.Millisecond, time.Millisecond, 2, 6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(Options{})
			costs(c, 20, tc.fixed, tc.per)
			var s Seq
			learn(c, &s, SrcModel, tc.hits, 40)
			s.idle = tc.probeStreak
			d := chain(8, SrcModel)
			c.Trim([]*Seq{&s}, []*Draft{d}, 1)
			if d.Len() < tc.min || d.Len() > tc.max || !d.Chain() {
				t.Fatalf("kept %d tokens (chain %v), want %d to %d", d.Len(), d.Chain(), tc.min, tc.max)
			}
		})
	}
}

func TestTrimUnmeasuredSpeculatesNothing(t *testing.T) {
	c := NewController(Options{})
	var s Seq
	d := chain(4, SrcLookup)
	c.Trim([]*Seq{&s}, []*Draft{d}, 1)
	if d.Len() != 0 {
		t.Fatalf("kept %d tokens before any step was timed", d.Len())
	}
	if k := c.DraftSteps([]*Seq{&s}, 1); k != 0 {
		t.Fatalf("DraftSteps = %d before any step was timed", k)
	}
}

func TestTrimPrefersLikelyBranches(t *testing.T) {
	c := NewController(Options{})
	costs(c, 20, 10*time.Millisecond, 100*time.Microsecond)
	var s Seq
	learn(c, &s, SrcLookup, 36, 40)
	learn(c, &s, SrcModel, 8, 40)
	// Lookup's chain of 6 and the model's of 6 beside it: lookup's tokens
	// are the likelier and must survive first.
	var d Draft
	d.AddChain(-1, []int32{1, 2, 3, 4, 5, 6}, SrcLookup, 20)
	d.AddChain(-1, []int32{9, 8, 7, 6, 5, 4}, SrcModel, 20)
	c.o.MaxDraft = 4
	c.Trim([]*Seq{&s}, []*Draft{&d}, 1)
	for i := range d.Tokens {
		if d.Src[i] != SrcLookup {
			t.Fatalf("kept a model token before all of lookup's: %v from %v", d.Tokens, d.Src)
		}
	}
	if d.Len() != 4 {
		t.Fatalf("kept %d tokens, want MaxDraft 4", d.Len())
	}
}

func TestDraftSteps(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hits       int
		fixed, per time.Duration
		pass       time.Duration
		min, max   int
	}{
		{"cheap draft, good drafts", 36, 10 * time.Millisecond, 200 * time.Microsecond, time.Millisecond, 3, 8},
		{"draft as costly as the target", 36, 10 * time.Millisecond, 200 * time.Microsecond, 10 * time.Millisecond, 0, 0},
		{"poor drafts", 4, 10 * time.Millisecond, 200 * time.Microsecond, time.Millisecond, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewController(Options{})
			costs(c, 20, tc.fixed, tc.per)
			for range minSamples {
				c.DraftTime(1, tc.pass)
			}
			var s Seq
			learn(c, &s, SrcModel, tc.hits, 40)
			if k := c.DraftSteps([]*Seq{&s}, 1); k < tc.min || k > tc.max {
				t.Fatalf("DraftSteps = %d, want %d to %d", k, tc.min, tc.max)
			}
		})
	}
	if k := NewController(Options{Fixed: 5}).DraftSteps(nil, 1); k != 5 {
		t.Fatalf("fixed length: DraftSteps = %d, want 5", k)
	}
}

// TestGuard feeds decode steps whose speculating windows are slower than
// the others: the guard must switch speculation off but for its rare
// exploring windows, and back on once speculating wins.
func TestGuard(t *testing.T) {
	c := NewController(Options{})
	run := func(onRate, offRate float64, steps int) (allowed int) {
		for range steps {
			a := c.Allowed(1, KindDraft)
			if a {
				allowed++
			}
			rate := offRate
			if a {
				rate = onRate
			}
			c.StepDone(1, KindDraft, 2, 1, time.Duration(2/rate*float64(time.Second)), a)
		}
		return allowed
	}
	// A young setting explores one window in guardEarly, backing off as
	// its exploring windows keep losing: over the first guardYoung
	// windows it explores windows 3, 7 and 15, not every fourth.
	if got := run(80, 100, guardYoung*guardWindow); got != 3*guardWindow {
		t.Fatalf("a losing young setting speculated in %d steps of its first %d windows, want 3 windows' %d", got, guardYoung, 3*guardWindow)
	}
	if r, ok := c.GuardRatio(1, KindDraft); !ok || r > 0.9 || !c.guard.state(1, KindDraft).off {
		t.Fatalf("after %d windows: GuardRatio = %v, %v, off %v", guardYoung, r, ok, c.guard.state(1, KindDraft).off)
	}
	// Exploring windows that keep confirming a clear loss come ever
	// rarer, down to one in guardEvery<<guardMaxBackoff.
	run(80, 100, 40*guardWindow)
	st := c.guard.state(1, KindDraft)
	if st.backoff != guardMaxBackoff {
		t.Fatalf("after 40 losing windows the exploring period is guardEvery<<%d, want <<%d", st.backoff, guardMaxBackoff)
	}
	slow := 2 * (guardEvery << guardMaxBackoff)
	if got := run(80, 100, slow*guardWindow); got != 2*guardWindow {
		t.Fatalf("losing speculation allowed in %d of %d steps, want only the exploring %d", got, slow*guardWindow, 2*guardWindow)
	}
	// The first exploring window that finds speculation winning brings
	// the period back, and the next switches it on; from then on the
	// exploring windows (without speculation) confirm it and come rarer.
	run(130, 100, (slow/2+2*guardEvery)*guardWindow)
	if st.off {
		t.Fatalf("winning speculation still off %d windows after it started to win", slow/2+2*guardEvery)
	}
	run(130, 100, 40*guardWindow)
	if st.backoff != guardMaxBackoff {
		t.Fatalf("after 40 winning windows the exploring period is guardEvery<<%d, want <<%d", st.backoff, guardMaxBackoff)
	}
	if got := run(130, 100, slow*guardWindow); got != (slow-2)*guardWindow {
		t.Fatalf("winning speculation allowed in %d of %d steps, want all but the exploring %d", got, slow*guardWindow, 2*guardWindow)
	}
	// Other batch sizes and the other class keep their own setting: an
	// unmeasured lookup class starts on, a draft-model class off (but for
	// its exploring windows).
	if !c.Allowed(1, KindLookup) || !c.Allowed(3, KindLookup|KindTree) {
		t.Fatal("an unmeasured lookup class is not allowed to speculate")
	}
	if c.Allowed(3, KindDraft) {
		t.Fatal("an unmeasured draft-model class speculates outside its exploring windows")
	}
}

// TestCostTableCapsInflatedSizes checks that a size timed only while the
// machine was busy is estimated at no more than two smaller passes cost,
// and that the sizes extrapolated above it are held likewise.
func TestCostTableCapsInflatedSizes(t *testing.T) {
	var tb costTable
	for range costTableSamples {
		tb.add(1, 1.0)
		tb.add(2, 1.1)
		tb.add(3, 1.2)
	}
	for range minSamples {
		tb.add(4, 4.0) // three timings, all while other processes ran
	}
	for _, tc := range []struct {
		n    int
		want float64
	}{
		{1, 1.0}, {2, 1.1}, {3, 1.2}, // measured, below any cap
		{4, 2.2}, // 4.0 measured, capped by 2+2
		{5, 2.3}, // extrapolated 6.8, capped by 2+3
		{6, 2.4}, // 3+3
		{8, 3.5}, // 3+5
	} {
		if got := tb.estimate(tc.n, 0.1); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("estimate(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	tb.add(4, 1.25) // two quiet timings: the second lowest is one of them
	tb.add(4, 1.3)
	if got := tb.estimate(4, 0.1); math.Abs(got-1.3) > 1e-9 {
		t.Errorf("after two quiet timings estimate(4) = %v, want 1.3", got)
	}
}

// TestCostTableHoldsSizesToLargerOnes checks that a size whose few
// timings fell in a busy moment is estimated at no more than a larger size
// timed in full, and that sizes above every measured one are not held.
func TestCostTableHoldsSizesToLargerOnes(t *testing.T) {
	var tb costTable
	for range costTableSamples {
		tb.add(1, 1.0)
		tb.add(2, 1.1)
		tb.add(4, 1.5)
	}
	for range minSamples {
		tb.add(3, 6.0) // three timings, all while other processes ran
	}
	for _, tc := range []struct {
		n    int
		want float64
	}{
		{1, 1.0}, {2, 1.1}, // measured, below the larger sizes
		{3, 1.5}, // 6.0 measured, 2.1 by 1+2, held to 4's 1.5
		{4, 1.5},
		{5, 1.65}, // above every measured size: 4 and the least growth, 0.1 of its cost
	} {
		if got := tb.estimate(tc.n, 0.1); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("estimate(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

// TestTrimProbesUndersampledSizes checks that Trim, every costProbeEvery
// calls, verifies one token more than the cost model chooses while the
// larger step has fewer than costTableSamples timings, and stops once it
// has them.
func TestTrimProbesUndersampledSizes(t *testing.T) {
	c := NewController(Options{})
	for range costTableSamples {
		c.StepTime(1, 10*time.Millisecond)
		c.StepTime(2, 11*time.Millisecond)
	}
	for range minSamples {
		c.StepTime(3, 40*time.Millisecond) // inflated: the model keeps one token
	}
	var s Seq
	learn(c, &s, SrcLookup, 36, 40)
	lens := make([]int, 2*costProbeEvery)
	for i := range lens {
		d := chain(4, SrcLookup)
		c.Trim([]*Seq{&s}, []*Draft{d}, 1)
		lens[i] = d.Len()
	}
	probes := 0
	for _, l := range lens {
		switch l {
		case 1:
		case 2:
			probes++
		default:
			t.Fatalf("kept %v tokens, want 1 or 2 (a probe)", lens)
		}
	}
	if probes != 2 {
		t.Fatalf("kept %v tokens: %d probes in %d calls, want 2", lens, probes, len(lens))
	}
	for range costTableSamples {
		c.StepTime(3, 40*time.Millisecond) // now timed in full: really that costly
	}
	for range 2 * costProbeEvery {
		d := chain(4, SrcLookup)
		c.Trim([]*Seq{&s}, []*Draft{d}, 1)
		if d.Len() != 1 {
			t.Fatalf("kept %d tokens once size 3 is fully timed, want 1", d.Len())
		}
	}
}

// TestPairedGuard checks the guard of prompt lookup, which measures each
// window with speculation against its own plain steps: winning lookup
// runs with no window without it, one slow window does not switch it
// off, lookup that keeps losing is switched off, and an exploring window
// that finds it winning again (the text began to repeat) switches it
// back on at once.
func TestPairedGuard(t *testing.T) {
	c := NewController(Options{})
	st := c.guard.state(1, KindLookup)
	// window runs guardWindow steps; where lookup is allowed every other
	// step verifies a draft and makes tokens tokens in slow times a plain
	// step's time (1 ms), the others are plain.
	window := func(tokens int, slow float64) (allowed int) {
		for i := range guardWindow {
			a := c.Allowed(1, KindLookup)
			got, verified, d := 1, 0, time.Millisecond
			if a {
				allowed++
				if i%2 == 1 {
					got, verified, d = tokens, 3, time.Duration(slow*float64(time.Millisecond))
				}
			}
			c.StepDone(1, KindLookup, got, verified, d, a)
		}
		return allowed
	}
	for w := range 40 {
		if got := window(3, 1.3); got != guardWindow {
			t.Fatalf("winning lookup allowed in %d steps of window %d, want all %d", got, w, guardWindow)
		}
	}
	if r, ok := c.GuardRatio(1, KindLookup); !ok || r < 1.5 {
		t.Fatalf("GuardRatio = %v, %v; want the windows' speed-up, (1+3)/(1+1.3) = 1.74", r, ok)
	}
	window(3, 6) // a window whose drafts ran while the cores were busy
	if st.off {
		t.Fatal("one slow window switched winning lookup off")
	}
	// Drafts that fail: 2 tokens in 2.2 plain steps' time, 0.91x. The
	// recent windows' sums forget the winning ones within a few windows.
	for w := 0; !st.off; w++ {
		if w >= 12 {
			t.Fatalf("lookup that keeps losing is still on after %d windows", w)
		}
		window(1, 1.2)
	}
	// Off, it explores one window in guardEarly<<backoff; the first that
	// finds it winning switches it back on.
	for w := 0; st.off; w++ {
		if w > 2*guardEarly {
			t.Fatalf("lookup winning again still off after %d windows", w)
		}
		window(3, 1.3)
	}
	if got := window(3, 1.3); got != guardWindow {
		t.Fatalf("lookup back on allowed in %d of %d steps", got, guardWindow)
	}
}

// TestOneTokenMatchesLearnedApart checks the class of drafts after a
// match of the last token alone: at first it is trusted less than a
// longer match (its prior), it earns longer drafts once a sequence's
// are accepted, and a sequence whose one-token drafts all fail still
// verifies its longer matches as before, since each class keeps its own
// rate.
func TestOneTokenMatchesLearnedApart(t *testing.T) {
	kept := func(learnSrc Source, hits int, src Source) int {
		c := NewController(Options{})
		costs(c, 20, time.Millisecond, 150*time.Microsecond)
		var s Seq
		if hits >= 0 {
			learn(c, &s, learnSrc, hits, 40)
		}
		d := chain(7, src)
		c.Trim([]*Seq{&s}, []*Draft{d}, 1)
		return d.Len()
	}
	fresh, freshLonger := kept(0, -1, SrcLookupOne), kept(0, -1, SrcLookup)
	if fresh >= freshLonger {
		t.Errorf("untried: %d one-token draft tokens kept, %d of a longer match's; want fewer", fresh, freshLonger)
	}
	if good := kept(SrcLookupOne, 36, SrcLookupOne); good <= fresh || good < 3 {
		t.Errorf("after 36 of 40 accepted: %d one-token draft tokens kept (untried %d), want more, at least 3", good, fresh)
	}
	if bad := kept(SrcLookupOne, 0, SrcLookup); bad != freshLonger {
		t.Errorf("after one-token drafts all failed: %d tokens of a longer match kept, want %d as untried", bad, freshLonger)
	}
}
