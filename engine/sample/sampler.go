package sample

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// minTemperature is the smallest temperature that scales logits; one
// below it samples greedily. Scaling by 1/t past it overflows float32
// (1/1e-38 is 1e38, times a logit of 10 is +Inf): every scaled logit was
// ±Inf or NaN, no token could be drawn, and the reply ended at once,
// empty. Such a temperature is greedy in all but name: a logit gap of
// 1e-28 is already a factor of e^100.
const minTemperature = 1e-30

// defaultRepeatLastN is the penalty window used when Params.RepeatLastN is 0,
// the same default as llama.cpp.
const defaultRepeatLastN = 64

// cand is one surviving token during sampling: p holds its probability
// after a softmax, aux the typicality score while typical-p sorts.
type cand struct {
	id    int32
	logit float32
	p     float32
	aux   float32
}

// Sampler draws tokens from logits according to Params. It owns its PRNG so
// that a sequence's tokens depend only on its seed and inputs, never on other
// sequences. A Sampler keeps scratch buffers between calls (no allocations
// once warmed up) and is therefore not safe for concurrent use: give every
// sequence its own.
type Sampler struct {
	p      Params
	seed   uint64
	rng    *rand.Rand
	cands  []cand
	xs     []float32 // a vocabulary's exponentials (expLogits)
	masked []float32 // a vocabulary's logits, those outside a mask −Inf (SampleMasked)
	counts map[int32]int
}

// New returns a Sampler for p. A Seed of 0 picks a random seed (see Seed)
// unless p.Seeded is set.
func New(p Params) *Sampler {
	if p.Temperature > 0 && p.Temperature < minTemperature {
		p.Temperature = 0
	}
	seed := p.Seed
	if seed == 0 && !p.Seeded {
		seed = rand.Uint64() | 1 // never 0, so Seed() can be fed back to reproduce
	}
	return &Sampler{
		p:      p,
		seed:   seed,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		counts: make(map[int32]int),
	}
}

// Seed reports the seed in use, so a run started with Seed 0 can be repeated.
func (s *Sampler) Seed() uint64 { return s.seed }

// Params reports the parameters the sampler was built with.
func (s *Sampler) Params() Params { return s.p }

// Sample picks the next token from logits (one per vocabulary entry) given
// the token history (prompt and generated tokens) that penalties look at.
//
// Sample modifies logits in place: on return they hold the biased and
// penalised values (but not temperature-scaled), exactly what TopLogprobs
// expects for reporting log-probabilities. The chain follows llama.cpp's
// common sampler: logit bias, penalties, top-k, typical-p, top-p, min-p,
// temperature, softmax, draw. Temperature <= 0 is greedy: the arg-max, lowest
// id on ties. Sample returns -1 when no token can be drawn: empty logits, or
// every logit -Inf or NaN (every token banned).
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	if len(logits) == 0 {
		return -1
	}
	s.applyBias(logits)
	s.applyPenalties(logits, history)
	if s.p.Temperature <= 0 {
		return argmax(logits)
	}
	return s.drawFiltered(logits)
}

// drawFiltered runs the truncation chain and temperature over logits and
// draws a token (-1 when none is left), from the whole vocabulary when no
// step drops a token.
func (s *Sampler) drawFiltered(logits []float32) int32 {
	if s.untruncated() {
		return s.drawAll(logits)
	}
	c := s.filter(logits)
	if len(c) == 0 {
		return -1
	}
	return s.draw(c)
}

// SampleMasked is Sample restricted to the tokens whose bit is set in
// allowed (bit id%64 of word id/64; nil allows every token): the mask
// comes before every other step, so bias, penalties, truncation and
// temperature only ever see allowed tokens, and a token outside the mask
// is never drawn, whatever its bias. Logits of allowed tokens are modified
// as Sample modifies them; the others are left as they were (see
// MaskLogits). With every bit set it draws exactly what Sample draws.
func (s *Sampler) SampleMasked(logits []float32, history []int32, allowed []uint64) int32 {
	if allowed == nil {
		return s.Sample(logits, history)
	}
	if len(logits) == 0 {
		return -1
	}
	s.biasAndPenalizeMasked(logits, history, allowed)
	if s.p.Temperature <= 0 {
		return argmaxMasked(logits, allowed)
	}
	if denseMask(allowed, len(logits)) {
		// Most tokens allowed (free text inside a constraint): the whole
		// vocabulary's steps over a copy with the others at −Inf choose
		// what the candidates of the allowed tokens would.
		if cap(s.masked) < len(logits) {
			s.masked = make([]float32, len(logits))
		}
		m := s.masked[:len(logits)]
		copy(m, logits)
		MaskLogits(m, allowed)
		return s.drawFiltered(m)
	}
	c := s.filterMasked(logits, allowed)
	if len(c) == 0 {
		return -1
	}
	return s.draw(c)
}

// biasAndPenalizeMasked applies the logit bias and the penalties to the
// allowed tokens alone, SampleMasked's first steps.
func (s *Sampler) biasAndPenalizeMasked(logits []float32, history []int32, allowed []uint64) {
	in := func(id int32) bool {
		return id >= 0 && int(id>>6) < len(allowed) && allowed[id>>6]&(1<<(id&63)) != 0
	}
	for id, b := range s.p.LogitBias {
		if int(id) < len(logits) && in(id) {
			logits[id] += b
		}
	}
	s.penalize(logits, history, in)
}

// denseMask reports whether allowed lets through at least an eighth of n
// tokens: then SampleMasked masks a copy of the logits rather than
// gathering the allowed tokens as candidates.
func denseMask(allowed []uint64, n int) bool {
	set := 0
	for w, bitsW := range allowed {
		if w*64 >= n {
			break
		}
		set += bits.OnesCount64(bitsW)
	}
	return set >= n/8 && n >= 1024
}

// Skip advances the sampler as drawing from a single allowed token would,
// without logits: a token a constraint forces can be appended without a
// forward pass and the tokens drawn after it stay the ones a token-by-token
// run draws.
func (s *Sampler) Skip() {
	if s.p.Temperature > 0 {
		s.rng.Float64()
	}
}

// MaskLogits sets the logits of tokens outside allowed to -Inf (for
// reporting log-probabilities of a constrained generation).
func MaskLogits(logits []float32, allowed []uint64) {
	if allowed == nil {
		return
	}
	quant.SetWhereClear(logits, allowed, float32(math.Inf(-1)))
}

// argmaxMasked is argmax over the allowed tokens.
func argmaxMasked(logits []float32, allowed []uint64) int32 {
	best := -1
	bv := float32(math.Inf(-1))
	for w, bitsW := range allowed {
		base := w * 64
		if base >= len(logits) {
			break
		}
		for bitsW != 0 {
			i := base + bits.TrailingZeros64(bitsW)
			bitsW &= bitsW - 1
			if i >= len(logits) {
				break
			}
			if l := logits[i]; l > bv {
				best, bv = i, l
			}
		}
	}
	return int32(best)
}

// filterMasked is filter over the allowed tokens.
func (s *Sampler) filterMasked(logits []float32, allowed []uint64) []cand {
	if cap(s.cands) < len(logits) {
		s.cands = make([]cand, 0, len(logits))
	}
	c := s.cands[:0]
	for w, bitsW := range allowed {
		base := w * 64
		for bitsW != 0 {
			i := base + bits.TrailingZeros64(bitsW)
			bitsW &= bitsW - 1
			if i >= len(logits) {
				break
			}
			l := logits[i]
			switch {
			case math.IsInf(float64(l), -1) || math.IsNaN(float64(l)):
				continue
			case math.IsInf(float64(l), 1):
				l = math.MaxFloat32
			}
			c = append(c, cand{id: int32(i), logit: l})
		}
	}
	s.cands = c
	return s.truncate(c)
}

// filter runs the truncation chain (top-k, typical-p, top-p, min-p) and
// temperature over the finite logits and returns the surviving candidates,
// which alias the sampler's scratch buffer. Top-k, top-p and min-p pick
// their survivors from the logits themselves and make candidates of those
// alone: a vocabulary of 150K candidates is 2.4 MB, more than a core's
// L2, and building it cost more than the rest of the chain.
func (s *Sampler) filter(logits []float32) []cand {
	p := s.p
	switch {
	case p.TypicalP > 0 && p.TypicalP < 1:
	case p.TopK > 0:
		if c, ok := s.topK(logits, p.TopK); ok {
			return s.finish(c, true, stepTopP)
		}
	case p.TopP > 0 && p.TopP < 1:
		if c, ok := s.nucleus(logits, p.TopP); ok {
			return s.finish(c, true, stepMinP)
		}
	case p.MinP > 0:
		return s.finish(s.minPCands(logits, p.MinP), false, stepTemperature)
	}
	return s.truncate(s.allCands(logits))
}

// allCands returns a candidate for every finite logit, in id order (+Inf
// taken as the largest float32), in the sampler's scratch buffer.
func (s *Sampler) allCands(logits []float32) []cand {
	if cap(s.cands) < len(logits) {
		s.cands = make([]cand, 0, len(logits))
	}
	c := s.cands[:0]
	for i, l := range logits {
		switch {
		case math.IsInf(float64(l), -1) || math.IsNaN(float64(l)):
			continue // banned or broken: never drawn
		case math.IsInf(float64(l), 1):
			l = math.MaxFloat32 // a +Inf bias forces the token without NaNs in softmax
		}
		c = append(c, cand{id: int32(i), logit: l})
	}
	s.cands = c // keep the grown buffer for the next call
	return c
}

// truncate runs top-k, typical-p, top-p, min-p and temperature over the
// candidates (in ascending id order).
func (s *Sampler) truncate(c []cand) []cand {
	if len(c) == 0 {
		return c
	}
	sorted := false
	if k := s.p.TopK; k > 0 && k < len(c) {
		partialSortDesc(c, k)
		c = c[:k]
		sorted = true
	}
	if tp := s.p.TypicalP; tp > 0 && tp < 1 {
		c = typical(c, tp)
		sorted = false
	}
	return s.finish(c, sorted, stepTopP)
}

// The steps of the chain after top-k and typical-p, in order: finish
// starts at one of them.
const (
	stepTopP = iota
	stepMinP
	stepTemperature
)

// finish runs the chain from step on over candidates that the steps
// before it have left (sorted: best first): top-p, min-p, temperature.
func (s *Sampler) finish(c []cand, sorted bool, step int) []cand {
	if len(c) == 0 {
		return c
	}
	if tp := s.p.TopP; step <= stepTopP && tp > 0 && tp < 1 {
		c = topP(c, tp, sorted)
	}
	if mp := s.p.MinP; step <= stepMinP && mp > 0 {
		c = minP(c, mp)
	}
	if t := s.p.Temperature; t != 1 {
		inv := 1 / t
		for i := range c {
			c[i].logit *= inv
		}
	}
	return c
}

// applyBias adds the configured biases; a -Inf bias bans a token. Ids outside
// the vocabulary are ignored.
func (s *Sampler) applyBias(logits []float32) {
	for id, b := range s.p.LogitBias {
		if id >= 0 && int(id) < len(logits) {
			logits[id] += b
		}
	}
}

// applyPenalties applies repeat, presence and frequency penalties over the
// last RepeatLastN tokens of history, the way llama.cpp does: the repeat
// penalty divides positive logits and multiplies negative ones, then
// count*frequency + presence is subtracted.
func (s *Sampler) applyPenalties(logits []float32, history []int32) {
	s.penalize(logits, history, nil)
}

// penalize is applyPenalties limited to the tokens for which in reports
// true (nil: all).
func (s *Sampler) penalize(logits []float32, history []int32, in func(int32) bool) {
	rp, pp, fp := s.p.RepeatPenalty, s.p.PresencePenalty, s.p.FrequencyPenalty
	if (rp == 0 || rp == 1) && pp == 0 && fp == 0 {
		return
	}
	n := s.p.RepeatLastN
	if n == 0 {
		n = defaultRepeatLastN
	}
	window := history
	if n > 0 && len(window) > n {
		window = window[len(window)-n:]
	}
	if len(window) == 0 {
		return
	}
	clear(s.counts)
	for _, t := range window {
		s.counts[t]++
	}
	for t, cnt := range s.counts {
		if t < 0 || int(t) >= len(logits) || in != nil && !in(t) {
			continue
		}
		l := logits[t]
		if rp != 0 && rp != 1 {
			if l > 0 {
				l /= rp
			} else {
				l *= rp
			}
		}
		l -= float32(cnt)*fp + pp
		logits[t] = l
	}
}

// argmax returns the index of the largest logit, lowest index on ties. NaN
// never wins. It returns -1 when no logit is greater than -Inf.
func argmax(logits []float32) int32 {
	if hi, _, special := quant.MaxMin(logits); !special {
		if math.IsInf(float64(hi), -1) {
			return -1 // every logit −Inf (or none)
		}
		return int32(quant.IndexEqual(logits, hi)) // the first of the largest
	}
	best := -1
	bv := float32(math.Inf(-1))
	for i, l := range logits {
		if l > bv {
			best, bv = i, l
		}
	}
	return int32(best)
}

// better orders candidates by logit descending, then id ascending, so every
// selection is deterministic.
func better(a, b cand) bool {
	if a.logit != b.logit {
		return a.logit > b.logit
	}
	return a.id < b.id
}

// partialSortDesc moves the m best candidates to the front of c in
// descending order, in place and without allocating: a min-heap of size m
// is kept over c[:m] while scanning the rest (O(n log m)), then heap-sorted.
func partialSortDesc(c []cand, m int) {
	if m >= len(c) {
		slices.SortFunc(c, cmpDesc)
		return
	}
	h := c[:m]
	for i := m/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for i := m; i < len(c); i++ {
		if better(c[i], h[0]) {
			h[0], c[i] = c[i], h[0]
			siftDown(h, 0)
		}
	}
	// Heap sort: repeatedly move the worst to the end, leaving best first.
	for end := m - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		siftDown(h[:end], 0)
	}
}

// siftDown restores the min-heap property (worst candidate at the root).
func siftDown(h []cand, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		w := l
		if r := l + 1; r < len(h) && better(h[l], h[r]) {
			w = r
		}
		if !better(h[i], h[w]) {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

func cmpDesc(a, b cand) int {
	if better(a, b) {
		return -1
	}
	if better(b, a) {
		return 1
	}
	return 0
}

// softmax fills c[i].p with the probabilities of the candidates' logits:
// each exponential rounded to float32 and their sum in float64 in
// quant.ExpShift's lanes, by id modulo 8 (in c's order), so that drawAll
// and nucleus, which sum a whole vocabulary's exponentials so, find every
// token's probability as this does over the vocabulary's candidates.
func softmax(c []cand) {
	maxL := c[0].logit
	for _, x := range c[1:] {
		if x.logit > maxL {
			maxL = x.logit
		}
	}
	var lanes [8]float64
	for i := range c {
		c[i].p = float32(math.Exp(float64(c[i].logit - maxL)))
		lanes[c[i].id&7] += float64(c[i].p)
	}
	inv := 1 / quant.LaneSum(&lanes)
	for i := range c {
		c[i].p = float32(float64(c[i].p) * inv)
	}
}

// typical implements locally typical sampling: keep the tokens whose
// surprisal is closest to the distribution's entropy until their mass
// reaches p. The survivors are left in typicality order.
func typical(c []cand, p float32) []cand {
	scoreTypicality(c)
	// Only the most typical candidates are kept: sort those, found by a
	// histogram of the mass by typicality, as topP finds the
	// nucleus (a full sort of a vocabulary took 15-20 ms).
	if n := massPrefix(c, float64(p), byTypicality); n > 0 {
		slices.SortFunc(c[:n], cmpTypical)
		if out, ok := cumCut(c[:n], p); ok {
			return out
		}
	}
	slices.SortFunc(c, cmpTypical)
	var cum float64
	for i, x := range c {
		cum += float64(x.p)
		if cum >= float64(p) {
			return c[:i+1]
		}
	}
	return c
}

// scoreTypicality sets every candidate's probability (softmax) and its
// typicality in aux: how far its surprisal lies from the entropy.
func scoreTypicality(c []cand) {
	softmax(c)
	var ent float64
	for _, x := range c {
		if x.p > 0 {
			ent -= float64(x.p) * math.Log(float64(x.p))
		}
	}
	for i := range c {
		c[i].aux = float32(math.Abs(-math.Log(float64(c[i].p)) - ent))
	}
}

// cmpTypical orders candidates by typicality (aux, ascending), then id.
func cmpTypical(a, b cand) int {
	switch {
	case a.aux < b.aux:
		return -1
	case a.aux > b.aux:
		return 1
	}
	return int(a.id) - int(b.id)
}

// topP keeps the smallest highest-probability prefix whose mass reaches p.
// Without a prior sort it avoids sorting the whole vocabulary: candidates are
// bucketed by logit (a histogram of probability mass, O(n)), and only the
// buckets that hold the nucleus are moved to the front and sorted.
func topP(c []cand, p float32, sorted bool) []cand {
	softmax(c)
	if !sorted {
		if n := massPrefix(c, float64(p), byLogit); n > 0 {
			slices.SortFunc(c[:n], cmpDesc)
			sorted = true
			if out, ok := cumCut(c[:n], p); ok {
				return out
			}
		}
	}
	// Fallback (rounding at the bucket edge, or all logits equal): grow a
	// sorted prefix until it holds mass p.
	m := len(c)
	if !sorted {
		m = min(len(c), 128)
	}
	for {
		if !sorted {
			partialSortDesc(c, m)
		}
		if out, ok := cumCut(c[:m], p); ok {
			return out
		}
		if m == len(c) {
			return c
		}
		m = min(len(c), m*4)
	}
}

// cumCut returns the shortest prefix of the sorted c whose mass reaches p.
func cumCut(c []cand, p float32) ([]cand, bool) {
	var cum float64
	for i := range c {
		cum += float64(c[i].p)
		if cum >= float64(p) {
			return c[:i+1], true
		}
	}
	return c, false
}

// nucleusBuckets is the resolution of massPrefix's histogram.
const nucleusBuckets = 256

// bucketOf is the histogram bucket of v, a distance from the first bucket
// in buckets: its integer part, clamped to the buckets. Where the logits'
// range overflows float32 the distance can be NaN or infinite (huge
// logits from a broken model); such a token goes to the last bucket, which
// keeps the buckets in order.
func bucketOf(v float32) int {
	switch {
	case !(v < nucleusBuckets-1): // NaN, +Inf or past the last
		return nucleusBuckets - 1
	case v < 0:
		return 0
	}
	return int(v)
}

// massPrefix moves the candidates of the lowest-key histogram buckets
// (key(x), lowest first) holding probability mass p to the front of c and
// returns how many there are, or 0 where the finite keys have no spread
// or their mass never reaches p. A candidate whose key is not finite
// (typical-p's +Inf for probability 0) comes after every bucket. Buckets
// are monotone in the key, so the front is exactly the start of a full
// sort by key, in some order: topP takes the highest logits (key −logit),
// typical the most typical candidates (key aux).
func massPrefix(c []cand, p float64, key func(cand) float32) int {
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, x := range c {
		if k := key(x); k >= -math.MaxFloat32 && k <= math.MaxFloat32 {
			lo, hi = min(lo, k), max(hi, k)
		}
	}
	if !(hi > lo) {
		return 0
	}
	scale := float32(nucleusBuckets-1) / (hi - lo)
	bucket := func(k float32) int {
		if !(k >= -math.MaxFloat32 && k <= math.MaxFloat32) {
			return nucleusBuckets // after every bucket
		}
		return bucketOf((k - lo) * scale)
	}
	var mass [nucleusBuckets]float64
	for _, x := range c {
		if b := bucket(key(x)); b < nucleusBuckets {
			mass[b] += float64(x.p)
		}
	}
	last, cum := -1, 0.0
	for b := range mass {
		cum += mass[b]
		if cum >= p {
			last = b
			break
		}
	}
	if last < 0 {
		return 0
	}
	n := 0
	for i := range c {
		if bucket(key(c[i])) <= last {
			c[i], c[n] = c[n], c[i]
			n++
		}
	}
	return n
}

// byLogit and byTypicality are massPrefix's keys for topP and typical.
func byLogit(x cand) float32      { return -x.logit }
func byTypicality(x cand) float32 { return x.aux }

// minP drops candidates whose probability is below p times the best one's,
// i.e. whose logit is below max + ln(p). Order is preserved.
func minP(c []cand, p float32) []cand {
	maxL := c[0].logit
	for _, x := range c[1:] {
		if x.logit > maxL {
			maxL = x.logit
		}
	}
	thr := maxL + float32(math.Log(float64(p)))
	out := c[:0]
	for _, x := range c {
		if x.logit >= thr {
			out = append(out, x)
		}
	}
	return out
}

// draw samples one candidate in proportion to exp(logit).
func (s *Sampler) draw(c []cand) int32 {
	softmax(c)
	r := s.rng.Float64()
	var cum float64
	for _, x := range c {
		cum += float64(x.p)
		if r < cum {
			return x.id
		}
	}
	// Rounding can leave cum a hair below 1: fall back to the last
	// candidate with non-zero probability.
	for i := len(c) - 1; i >= 0; i-- {
		if c[i].p > 0 {
			return c[i].id
		}
	}
	return c[0].id
}

// Candidate is a token with its log-probability.
type Candidate struct {
	ID      int32   `json:"id"`
	Logprob float32 `json:"logprob"`
}

// TopLogprobs returns the n most likely tokens of log-softmax(logits), best
// first (lowest id on ties). Pass the logits Sample left behind to report the
// distribution after bias and penalties but before temperature, as the
// OpenAI and llama.cpp servers do. It does not modify logits; it allocates
// (it is meant for the reporting path, not every token of a plain run).
func TopLogprobs(logits []float32, n int) []Candidate {
	if min(n, len(logits)) <= 0 {
		return nil
	}
	return topLogprobs(logits, n, logSumExp(logits))
}

// Logprobs returns Logprob(logits, id) and TopLogprobs(logits, n), with
// one pass for the log-sum-exp that both need.
func Logprobs(logits []float32, id int32, n int) (float32, []Candidate) {
	lse := logSumExp(logits)
	return logprob(logits, id, lse), topLogprobs(logits, n, lse)
}

// topLogprobs is TopLogprobs with the logits' log-sum-exp.
func topLogprobs(logits []float32, n int, lse float32) []Candidate {
	n = min(n, len(logits))
	if n <= 0 {
		return nil
	}
	var c []cand
	if _, _, special := quant.MaxMin(logits); !special && 8*n <= len(logits) {
		// n of a vocabulary: a heap of n, without a candidate for every
		// token (−Inf logits take part as they are).
		c = make([]cand, n)
		for i := range c {
			c[i] = cand{id: int32(i), logit: logits[i]}
		}
		for j := n/2 - 1; j >= 0; j-- {
			siftDown(c, j)
		}
		c = heapTop(c, logits, n)
	} else {
		c = make([]cand, len(logits))
		for i, l := range logits {
			if math.IsNaN(float64(l)) {
				l = float32(math.Inf(-1))
			}
			c[i] = cand{id: int32(i), logit: l}
		}
		partialSortDesc(c, n)
	}
	out := make([]Candidate, n)
	for i := range out {
		out[i] = Candidate{ID: c[i].id, Logprob: c[i].logit - lse}
	}
	return out
}

// Logprob returns log-softmax(logits)[id], the chosen token's logprob; -Inf
// for an id outside the vocabulary.
func Logprob(logits []float32, id int32) float32 {
	if id < 0 || int(id) >= len(logits) {
		return float32(math.Inf(-1))
	}
	return logits[id] - logSumExp(logits)
}

// logprob is Logprob with the logits' log-sum-exp.
func logprob(logits []float32, id int32, lse float32) float32 {
	if id < 0 || int(id) >= len(logits) {
		return float32(math.Inf(-1))
	}
	return logits[id] - lse
}

// logSumExp is log(sum(exp(logits))) computed stably; NaNs are skipped.
// The exponentials are float32(math.Exp(·)) summed in float64 (in
// quant.ExpShift's lanes where no logit is NaN or +Inf).
func logSumExp(logits []float32) float32 {
	if maxL, _, special := quant.MaxMin(logits); !special {
		if math.IsInf(float64(maxL), -1) {
			return maxL
		}
		return maxL + float32(math.Log(quant.ExpShiftSum(logits, 1, maxL)))
	}
	maxL := float32(math.Inf(-1))
	for _, l := range logits {
		if l > maxL {
			maxL = l
		}
	}
	if math.IsInf(float64(maxL), -1) {
		return maxL
	}
	var sum float64
	for _, l := range logits {
		if l == l { // not NaN
			sum += float64(float32(math.Exp(float64(l - maxL))))
		}
	}
	return maxL + float32(math.Log(sum))
}
