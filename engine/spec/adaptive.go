package spec

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Options configures a Controller.
type Options struct {
	// MaxDraft is the most draft tokens a sequence verifies in one step
	// (default 7: with its pending token, a sequence's verification is 8
	// rows, the most the CPU backend's repacked kernels take in one pass
	// over the weights; a ninth row makes the pass read every weight
	// twice. On the shared 19M llama, F16, two threads, an 8-token pass
	// took 1.2-1.4 ms and a 9-token one 1.7-2.0 ms, and the cost table's
	// noisy estimates still let the controller choose 9 now and then:
	// lookup decoded 2-3 % faster with 7 than with 8, on F16 and Q8_0).
	MaxDraft int
	// Fixed, when positive, verifies every draft token up to Fixed per
	// sequence, without weighing costs: for tests and for measuring a
	// speculation kind at a set length.
	Fixed int
	// Margin is the speed-up the cost model must predict before drafts
	// are verified (default 1.03): estimates are noisy, and an even bet
	// is not worth the risk of being slower.
	Margin float64
	// ProbeEvery: a sequence whose drafts are not worth verifying still
	// verifies one draft token every ProbeEvery steps, so that its
	// acceptance rate keeps being measured (default 16; the probe costs
	// one extra token in that step).
	ProbeEvery int
}

// maxCostTokens bounds the batch sizes whose step times are tracked.
const maxCostTokens = 128

// Controller decides how much to speculate. It learns per sequence, and
// across sequences as a prior for new ones, how often each source's first
// choice and its alternatives are accepted, and from the scheduler's
// timings what a step of n tokens, a draft pass and the sampling of one
// token cost; from both it picks the draft length and the tokens worth
// verifying, and none when speculation would not pay (it then probes
// rarely, so it notices when a sequence becomes predictable). A
// Controller is owned by one goroutine.
type Controller struct {
	o        Options
	prior    [numSources][2]rate
	steps    costTable // target forward passes by tokens
	drafts   costTable // draft-model passes by sequences
	next     float64   // seconds per sampled token (EWMA)
	nextSeen bool
	cands    []cand
	guard    guard
	trims    int // Trim calls that had a draft to trim (cost probes)
}

// Seq is one sequence's speculation state.
type Seq struct {
	rate [numSources][2]rate
	idle int // steps it could have speculated in since it last verified a draft
	// Drafted, Accepted and Verifications count the verified draft
	// tokens, those accepted, and the verification passes.
	Drafted, Accepted, Verifications int
	// PredictionDrafted and PredictionAccepted count those of Drafted and
	// Accepted that came from the request's predicted output.
	PredictionDrafted, PredictionAccepted int
}

// rate is an acceptance rate as decayed counts of hits and trials.
type rate struct{ hit, n float64 }

func (r *rate) add(hit bool, decay float64) {
	r.hit *= decay
	r.n *= decay
	r.n++
	if hit {
		r.hit++
	}
}

// p is the rate's estimate, shrunk towards prior with a weight of w
// trials.
func (r rate) p(prior, w float64) float64 { return (r.hit + prior*w) / (r.n + w) }

// NewController returns a controller with o's defaults filled in.
func NewController(o Options) *Controller {
	if o.MaxDraft <= 0 {
		o.MaxDraft = 7
	}
	if o.Margin <= 0 {
		o.Margin = 1.03
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = 16
	}
	c := &Controller{o: o}
	// Start from even odds for first choices (better for long lookup
	// matches, worse after the last token alone, which is verified only
	// once a sequence shows it pays: at even odds the 19M Q8_0 model lost
	// 2-5 % to its failed first tries) and poor ones for alternatives,
	// worth a few trials each.
	for s := range c.prior {
		c.prior[s][0] = rate{hit: 2, n: 4}
		c.prior[s][1] = rate{hit: 1, n: 4}
	}
	c.prior[SrcLookupMid][0] = rate{hit: 2.6, n: 4}
	c.prior[SrcLookupLong][0] = rate{hit: 3.2, n: 4}
	c.prior[SrcLookupOne][0] = rate{hit: 1.4, n: 4}
	// A client's predicted output is meant to be right.
	c.prior[SrcPrediction][0] = rate{hit: 3.2, n: 4}
	return c
}

// Options returns the controller's options, defaults filled in.
func (c *Controller) Options() Options { return c.o }

// accept is the probability that a draft token of source src and sibling
// rank is accepted once its parent is.
func (c *Controller) accept(s *Seq, src Source, rank uint8) float64 {
	k := 0
	if rank > 0 {
		k = 1
	}
	return s.rate[src][k].p(c.prior[src][k].p(0.5, 0), 3)
}

// StepTime records that a forward pass over tokens tokens, every one of
// which needed logits, took d.
func (c *Controller) StepTime(tokens int, d time.Duration) { c.steps.add(tokens, d.Seconds()) }

// DraftTime records that one draft-model pass over seqs sequences took d.
func (c *Controller) DraftTime(seqs int, d time.Duration) { c.drafts.add(seqs, d.Seconds()) }

// NextTime records that sampling calls tokens took d in all.
func (c *Controller) NextTime(calls int, d time.Duration) {
	if calls <= 0 {
		return
	}
	x := d.Seconds() / float64(calls)
	if !c.nextSeen {
		c.next, c.nextSeen = x, true
		return
	}
	c.next = 0.9*c.next + 0.1*x
}

// stepCost estimates the time of a pass over n tokens.
func (c *Controller) stepCost(n int) float64 { return c.steps.estimate(n, 0.1) }

// DraftSteps returns how many draft-model passes to run for seqs, the
// sequences about to decode one token each among n decoding in the
// batch: the length
// whose expected tokens per second, counting the draft passes, is best,
// or 0 when no length beats not speculating by the margin and no
// sequence is due for a probe.
func (c *Controller) DraftSteps(seqs []*Seq, n int) int {
	if c.o.Fixed > 0 {
		return c.o.Fixed
	}
	if len(seqs) == 0 || !c.steps.known(n) { // no unit of time yet to weigh against
		return 0
	}
	base := float64(n) / (c.stepCost(n) + float64(n)*c.next)
	best, bestRate := 0, base*c.o.Margin
	pass := c.drafts.estimate(len(seqs), 0.1)
	if !c.drafts.known(len(seqs)) {
		pass = 0.25 * c.stepCost(len(seqs)) // unmeasured: a draft model is assumed a quarter of the target
	}
	for k := 1; k <= c.o.MaxDraft; k++ {
		e := 0.0
		for _, s := range seqs {
			e += chainTokens(c.accept(s, SrcModel, 0), k)
		}
		e += float64(n - len(seqs))
		t := c.stepCost(n+k*len(seqs)) + float64(k)*pass + e*c.next
		if r := e / t; r > bestRate {
			best, bestRate = k, r
		}
	}
	if best == 0 {
		probe := pass + c.stepCost(n+len(seqs)) - c.stepCost(n)
		for _, s := range seqs {
			if c.probeDue(s, probe, n) {
				return 1
			}
		}
	}
	return best
}

// probeDue reports whether s, whose drafts are not worth verifying, should
// verify one draft token this step to keep its acceptance measured: after
// ProbeEvery steps without one, or more when a probe costs more (cost,
// against a step of n tokens), so that probing takes at most about 2 %
// of the decode time.
func (c *Controller) probeDue(s *Seq, cost float64, n int) bool {
	every := float64(c.o.ProbeEvery)
	if step := c.stepCost(n); step > 0 {
		every = max(every, 50*cost/step)
	}
	return float64(s.idle+1) >= every
}

// chainTokens is the expected number of tokens a verification of a chain
// of k draft tokens yields, each accepted with probability a once its
// predecessor is: 1 + a + a² + … + a^k.
func chainTokens(a float64, k int) float64 {
	e, p := 1.0, 1.0
	for range k {
		p *= a
		e += p
	}
	return e
}

// cand is a draft token considered for verification.
type cand struct {
	seq, idx int
	p        float64 // probability that it is accepted
}

// Trim reduces each draft (drafts[i] belongs to seqs[i]; the batch
// decodes n tokens besides, one for each of these sequences and for
// others) to the tokens worth verifying: the most
// likely to be accepted, as long as each adds more expected tokens per
// second than the batch makes without it, or nothing when the best set
// does not beat not speculating by the margin. A sequence due for a probe
// keeps its first draft token. Drafting time is spent already and not
// counted.
func (c *Controller) Trim(seqs []*Seq, drafts []*Draft, n int) {
	if c.o.Fixed > 0 {
		for _, d := range drafts {
			if d.Len() > c.o.Fixed {
				keep := make([]bool, d.Len())
				for i := range keep {
					keep[i] = i < c.o.Fixed
				}
				d.Keep(keep)
			}
		}
		return
	}
	if !c.steps.known(n) { // no unit of time yet to weigh against
		for _, d := range drafts {
			d.Reset()
		}
		return
	}
	c.cands = c.cands[:0]
	for si, d := range drafts {
		ps := make([]float64, d.Len())
		for i := range d.Tokens {
			p := c.accept(seqs[si], d.Src[i], d.Rank[i])
			if par := d.Parents[i]; par >= 0 {
				p *= ps[par]
			}
			ps[i] = p
			c.cands = append(c.cands, cand{si, i, p})
		}
	}
	// Most likely first; a token is never more likely than its parent,
	// and among equals the parent comes first (stable on the index).
	sort.SliceStable(c.cands, func(a, b int) bool { return c.cands[a].p > c.cands[b].p })
	e := float64(n)
	base := e / (c.stepCost(n) + e*c.next)
	bestRate, bestCnt := base*c.o.Margin, 0
	for i, cd := range c.cands {
		if i >= len(seqs)*c.o.MaxDraft {
			break
		}
		e += cd.p
		if r := e / (c.stepCost(n+i+1) + e*c.next); r > bestRate {
			bestRate, bestCnt = r, i+1
		}
	}
	if len(c.cands) > 0 {
		c.trims++
	}
	// A cost probe: where the step one token larger than the chosen one
	// has fewer timings than the table keeps, verify the next most likely
	// token too, every costProbeEvery steps with a draft. A size timed
	// only a few times, and those while other processes held the cores,
	// would otherwise keep its inflated cost, and a cost that keeps a
	// size from being chosen is never timed again.
	if bestCnt < len(c.cands) && bestCnt < len(seqs)*c.o.MaxDraft && c.trims%costProbeEvery == 0 &&
		c.steps.samples(n+bestCnt+1) < costTableSamples && c.cands[bestCnt].p >= costProbeMinP {
		bestCnt++
	}
	keep := make([][]bool, len(drafts))
	for si, d := range drafts {
		keep[si] = make([]bool, d.Len())
	}
	for _, cd := range c.cands[:bestCnt] {
		keep[cd.seq][cd.idx] = true
	}
	probe := c.stepCost(n+1) - c.stepCost(n)
	for si, d := range drafts {
		if d.Len() > 0 && !slices.Contains(keep[si], true) && c.probeDue(seqs[si], probe, n) {
			keep[si][0] = true // a probe: the first draft token alone
		}
		d.Keep(keep[si])
		if d.Len() == 0 {
			seqs[si].idle++ // it could have speculated, and did not
		}
	}
}

// Observe learns from one verification of s's draft d: path lists the
// accepted draft tokens in order, and mismatched reports whether the walk
// ended on a sampled token that matched none of the children of its last
// node (false when generation stopped there, so those children were not
// tested).
func (c *Controller) Observe(s *Seq, d *Draft, path []int32, mismatched bool) {
	if d.Len() == 0 {
		return
	}
	s.idle = 0
	s.Verifications++
	s.Drafted += d.Len()
	s.Accepted += len(path)
	for i, src := range d.Src {
		if src == SrcPrediction {
			s.PredictionDrafted++
			if slices.Contains(path, int32(i)) {
				s.PredictionAccepted++
			}
		}
	}
	parent := int32(-1)
	for step := 0; step <= len(path); step++ {
		var next int32 = -1
		if step < len(path) {
			next = path[step]
		} else if !mismatched {
			break
		}
		for i := parent + 1; int(i) < d.Len(); i++ {
			if d.Parents[i] != parent {
				continue
			}
			k := 0
			if d.Rank[i] > 0 {
				k = 1
			}
			hit := i == next
			s.rate[d.Src[i]][k].add(hit, 0.9)
			c.prior[d.Src[i]][k].add(hit, 0.995)
		}
		parent = next
	}
}

// costTable keeps the last samples of a duration by a small integer size
// and estimates it from the second lowest: other processes sharing the
// machine only ever add time (to wall and CPU time alike, through the
// caches they evict), so the lowest samples are the truest, and the
// second guards against one that a clock's granularity made too low.
type costTable struct {
	ring [maxCostTokens + 1]struct {
		v    [costTableSamples]float64
		n, i int
	}
	// capped[n] is estimate's result for n ≤ maxCappedTokens, valid
	// while !dirty.
	low    [maxCostTokens + 1]float64 // second lowest sample of each size (at)
	capped [maxCappedTokens + 1]float64
	dirty  bool
	growth float64 // the growth capped was computed with
}

const (
	minSamples       = 3
	costTableSamples = 16
	// maxCappedTokens bounds the sizes whose estimates are held to the
	// sum of smaller ones' (estimate).
	maxCappedTokens = 32
	// costProbeEvery and costProbeMinP: Trim verifies one token more than
	// the cost model chooses every costProbeEvery calls, when the larger
	// size has fewer than costTableSamples timings and the token is
	// accepted with at least costProbeMinP.
	costProbeEvery = 4
	costProbeMinP  = 0.4
)

// samples returns how many timings of size n the table holds.
func (t *costTable) samples(n int) int {
	if n < 1 || n > maxCostTokens {
		return 0
	}
	return t.ring[n].n
}

func (t *costTable) add(n int, d float64) {
	if n < 1 || n > maxCostTokens || d <= 0 || math.IsNaN(d) {
		return
	}
	r := &t.ring[n]
	r.v[r.i] = d
	r.i = (r.i + 1) % len(r.v)
	r.n = min(r.n+1, len(r.v))
	t.low[n] = t.secondLowest(n)
	t.dirty = true
}

func (t *costTable) known(n int) bool {
	return n >= 1 && n <= maxCostTokens && t.ring[n].n >= minSamples
}

// at returns the second lowest of the samples of size n.
func (t *costTable) at(n int) float64 { return t.low[n] }

// secondLowest returns the second lowest of the samples of size n.
func (t *costTable) secondLowest(n int) float64 {
	r := &t.ring[n]
	var buf [16]float64
	v := buf[:r.n]
	copy(v, r.v[:r.n])
	slices.Sort(v)
	return v[min(1, r.n-1)]
}

// estimate returns the cost of size n: measured, interpolated between
// the nearest measured sizes, or extrapolated from the largest measured
// size below with the slope of the two largest, and at least growth
// (a fraction of its cost) per unit when only one is measured. Nothing
// measured yet gives 1 + growth·(n-1), in no unit: only ratios matter
// until a size is measured.
//
// Up to maxCappedTokens, an estimate is held to at most the sum of the
// estimates of two smaller sizes (a pass of n tokens costs no more than a
// pass of m and one of n-m): the timings of a size seldom run may all
// have fallen while other processes held the cores, and its neighbours'
// slope extrapolates such a cost further; and to at most the estimate of
// any larger measured size.
func (t *costTable) estimate(n int, growth float64) float64 {
	n = min(max(n, 1), maxCostTokens)
	if n > maxCappedTokens {
		return t.raw(n, growth)
	}
	if t.dirty || t.growth != growth || t.capped[1] == 0 {
		hi := 0 // the nearest measured size above k
		for k := maxCostTokens; k > maxCappedTokens; k-- {
			if t.known(k) {
				hi = k
			}
		}
		var above [maxCappedTokens + 1]int
		for k := maxCappedTokens; k >= 1; k-- {
			above[k] = hi
			if t.known(k) {
				hi = k
			}
		}
		lo := 0 // the nearest measured size below k
		for k := 1; k <= maxCappedTokens; k++ {
			var e float64
			if t.known(k) {
				e = t.at(k)
			} else {
				e = t.between(k, growth, lo, above[k])
			}
			if t.known(k) {
				lo = k
			}
			for m := 1; m <= k/2; m++ {
				e = min(e, t.capped[m]+t.capped[k-m])
			}
			t.capped[k] = e
		}
		// And to no more than a larger measured size: a pass over fewer
		// tokens does part of the work of one over more. A size chosen
		// rarely keeps the few timings it had, and when those fell in a
		// busy moment it stays dearer than larger sizes timed every step
		// (on the shared 19M F16 model, lookup's table held 3 tokens at
		// 640 µs from three early timings, beside 4 tokens at 530-590 µs
		// from sixteen).
		least := math.Inf(1)
		for k := maxCostTokens; k >= 1; k-- {
			if k <= maxCappedTokens {
				t.capped[k] = min(t.capped[k], least)
				if t.known(k) {
					least = min(least, t.capped[k])
				}
			} else if t.known(k) {
				least = min(least, t.at(k))
			}
		}
		t.dirty, t.growth = false, growth
	}
	return t.capped[n]
}

// raw is estimate without the cap.
func (t *costTable) raw(n int, growth float64) float64 {
	if t.known(n) {
		return t.at(n)
	}
	lo, hi := 0, 0
	for k := n - 1; k >= 1; k-- {
		if t.known(k) {
			lo = k
			break
		}
	}
	for k := n + 1; k <= maxCostTokens; k++ {
		if t.known(k) {
			hi = k
			break
		}
	}
	return t.between(n, growth, lo, hi)
}

// between is raw for an unmeasured size n whose nearest measured sizes
// are lo below and hi above (0: none).
func (t *costTable) between(n int, growth float64, lo, hi int) float64 {
	switch {
	case lo > 0 && hi > 0:
		a, b := t.at(lo), t.at(hi)
		return a + (b-a)*float64(n-lo)/float64(hi-lo)
	case lo > 0:
		a := t.at(lo)
		slope := growth * a
		for k := lo - 1; k >= 1; k-- {
			if t.known(k) {
				slope = max(slope, (a-t.at(k))/float64(lo-k))
				break
			}
		}
		return a + slope*float64(n-lo)
	case hi > 0:
		return t.at(hi) * float64(n) / float64(hi)
	}
	return 1 + growth*float64(n-1)
}
