package sample

import (
	"math"
	"slices"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// The chain's steps over a whole vocabulary, from the logits themselves:
// each makes candidates of its survivors alone, or (drawAll) draws without
// any. They choose what truncate and draw choose over every candidate, bit
// for bit: their exponentials are quant.ExpShift's, summed in the lanes
// softmax sums in, and equal to softmax's float32(math.Exp(·)) but where
// the exact value lies within a few float64 ulps of a float32 rounding
// boundary (quant.Exp; its test found no such value in millions).

// untruncated reports whether no step of the chain drops a token, so that
// a token is drawn from the whole (temperature-scaled) distribution.
func (s *Sampler) untruncated() bool {
	p := s.p
	return p.TopK <= 0 && !(p.TypicalP > 0 && p.TypicalP < 1) && !(p.TopP > 0 && p.TopP < 1) && p.MinP <= 0
}

// expLogits writes into the sampler's scratch e^(x−m) for every logit
// scaled by scale (x = l·scale; m the largest x), as softmax computes
// them over the candidates: 0 for a token never drawn (−Inf, NaN), +Inf
// taken as the largest float32 (as allCands does). It returns the
// exponentials, their sum as softmax adds them (quant.ExpShift's lanes:
// a token never drawn adds a zero, which changes no sum) and the largest
// and smallest logit of a token that may be drawn; ok is false when there
// is none.
func (s *Sampler) expLogits(logits []float32, scale float32) (x []float32, sum float64, maxL, minL float32, ok bool) {
	if cap(s.xs) < len(logits) {
		s.xs = make([]float32, len(logits))
	}
	x = s.xs[:len(logits)]
	maxL, minL, special := quant.MaxMin(logits) // −Inf is no special value: its exponential is 0
	src, shiftScale := logits, scale
	if special {
		maxL, minL = finiteLogits(x, logits, scale)
		src, shiftScale = x, 1 // scaled already
	}
	if math.IsInf(float64(maxL), -1) {
		return nil, 0, maxL, minL, false
	}
	m := maxL // the largest scaled logit: scaling by a positive number keeps the order
	if scale != 1 {
		m *= scale
	}
	return x, quant.ExpShift(x, src, shiftScale, m), maxL, minL, true
}

// finiteLogits is expLogits' first step where some logits are NaN or
// infinite: it writes into x every logit, −Inf for a token never drawn
// (−Inf, NaN), +Inf taken as the largest float32, each multiplied by
// scale unless it is 1, and returns the largest and smallest logit
// (unscaled) of the others (−Inf and +Inf when there is none).
func finiteLogits(x, logits []float32, scale float32) (maxL, minL float32) {
	ninf := float32(math.Inf(-1))
	maxL, minL = ninf, float32(math.Inf(1))
	for i, l := range logits {
		switch {
		case l != l || l == ninf: // NaN or −Inf
			x[i] = ninf
			continue
		case l > math.MaxFloat32:
			l = math.MaxFloat32
		}
		maxL, minL = max(maxL, l), min(minL, l)
		if scale != 1 {
			l *= scale
		}
		x[i] = l
	}
	return maxL, minL
}

// drawAll draws a token from the temperature-scaled softmax of all the
// finite logits, as draw does over every candidate: the first token, in id
// order, at which the probabilities' running sum passes the random number.
func (s *Sampler) drawAll(logits []float32) int32 {
	x, sum, _, _, ok := s.expLogits(logits, 1/s.p.Temperature)
	if !ok {
		return -1
	}
	inv := 1 / sum
	r := s.rng.Float64()
	var cum float64
	last := -1
	for i, e := range x {
		p := float32(float64(e) * inv)
		if p > 0 {
			last = i
		}
		cum += float64(p)
		if r < cum {
			return int32(i)
		}
	}
	if last < 0 { // no probability is positive: draw's answer, the first candidate
		last = slices.IndexFunc(logits, func(l float32) bool { return l == l && l != float32(math.Inf(-1)) })
	}
	return int32(last) // rounding left the sum a hair below 1
}

// topK returns the k best candidates (by better: higher logit, then lower
// id), best first, as partialSortDesc leaves them; ok is false when there
// are no more than k finite logits, where top-k drops nothing and the
// chain goes on over every candidate in id order.
func (s *Sampler) topK(logits []float32, k int) (c []cand, ok bool) {
	if k >= len(logits) { // nothing to drop; and k is a client's number: size nothing by it
		return nil, false
	}
	if cap(s.cands) < k {
		s.cands = make([]cand, 0, k)
	}
	h := s.cands[:0]
	ninf := float32(math.Inf(-1))
	i := 0
	for ; i < len(logits) && len(h) < k; i++ {
		l := logits[i]
		if l != l || l == ninf {
			continue
		}
		h = append(h, cand{id: int32(i), logit: finite(l)})
	}
	s.cands = h
	if len(h) < k {
		return nil, false
	}
	for j := k/2 - 1; j >= 0; j-- {
		siftDown(h, j)
	}
	// The ids rise, so a logit equal to the worst kept one loses its tie:
	// only a larger one enters (+Inf as the largest float32, as it is
	// kept). NaN compares false, and −Inf is never larger than a kept
	// logit.
	thr := h[0].logit
	if hi, _, special := quant.MaxMin(logits[i:]); !special {
		// No logit left is NaN or +Inf: a vector search skips to the next
		// one above the worst kept, and there are more than k finite ones
		// unless all that are left are −Inf.
		if math.IsInf(float64(hi), -1) {
			return nil, false
		}
		return heapTop(h, logits, i), true
	} else {
		more := false
		for ; i < len(logits); i++ {
			l := logits[i]
			if finite(l) > thr {
				h[0] = cand{id: int32(i), logit: finite(l)}
				siftDown(h, 0)
				thr, more = h[0].logit, true
			} else if !more && l > ninf {
				more = true
			}
		}
		if !more {
			return nil, false
		}
	}
	for end := k - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		siftDown(h[:end], 0)
	}
	return h, true
}

// heapTop finishes a selection of the len(h) best logits (by better),
// best first: h holds a min-heap of candidates for ids below i, and
// logits[i:] has no NaN or +Inf. A vector search skips to the next logit
// above the worst kept; as the ids rise, an equal one loses its tie.
func heapTop(h []cand, logits []float32, i int) []cand {
	thr := h[0].logit
	for {
		i += quant.IndexAbove(logits[i:], thr)
		if i == len(logits) {
			break
		}
		h[0] = cand{id: int32(i), logit: logits[i]}
		siftDown(h, 0)
		thr = h[0].logit
		i++
	}
	for end := len(h) - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		siftDown(h[:end], 0)
	}
	return h
}

// nucleus is topP over every finite logit, without candidates for the
// rest. topP keeps the shortest prefix of the candidates sorted best first
// whose probabilities reach p; any set of candidates that holds that prefix
// gives the same answer, so this takes the tokens of the highest logits:
// a histogram of the exponentials by logit (nucleusBuckets buckets) finds
// the buckets that hold mass p, and with one bucket more for rounding's
// sake, a vector search (quant.IndexAbove) collects the tokens above that
// logit. They are sorted and cut; ok is false where topP would take its
// fallback (all logits equal) or the cut finds too little mass.
func (s *Sampler) nucleus(logits []float32, p float32) (c []cand, ok bool) {
	x, sum, maxL, minL, ok := s.expLogits(logits, 1)
	if !ok || maxL == minL {
		return nil, false
	}
	maxL, minL = finite(maxL), finite(minL)
	scale := float32(nucleusBuckets-1) / (maxL - minL)
	var mass [nucleusBuckets]float64
	for i, l := range logits {
		if l >= minL { // not NaN or −Inf
			mass[bucketOf((maxL-finite(l))*scale)] += float64(x[i])
		}
	}
	last, cum := nucleusBuckets-1, 0.0
	for b := range mass {
		cum += mass[b]
		if cum >= float64(p)*sum {
			last = b
			break
		}
	}
	thr := maxL - float32(last+2)/scale // one bucket below the last counted
	inv := 1 / sum
	c = s.cands[:0]
	for i := 0; ; i++ {
		i += quant.IndexAbove(logits[i:], thr)
		if i >= len(logits) {
			break
		}
		c = append(c, cand{id: int32(i), logit: finite(logits[i]), p: float32(float64(x[i]) * inv)})
	}
	s.cands = c
	slices.SortFunc(c, cmpDesc)
	return cumCut(c, p)
}

// finite is l with +Inf taken as the largest float32.
func finite(l float32) float32 { return min(l, math.MaxFloat32) }

// minPCands is minP over every finite logit: the tokens whose logit is at
// least the largest plus ln p, in id order.
func (s *Sampler) minPCands(logits []float32, p float32) []cand {
	maxL := float32(math.Inf(-1))
	for _, l := range logits {
		if l == l {
			maxL = max(maxL, finite(l))
		}
	}
	thr := maxL + float32(math.Log(float64(p)))
	c := s.cands[:0]
	for i, l := range logits {
		if l == l && l != float32(math.Inf(-1)) && finite(l) >= thr {
			c = append(c, cand{id: int32(i), logit: finite(l)})
		}
	}
	s.cands = c
	return c
}
