// Package kldiv compares a model's next-token distributions with a base
// model's, by the measures llama-perplexity's --kl-divergence reports: the
// mean KL divergence from the base distribution, how often both put the same
// token on top, and the perplexity of each on the text. It also reads and
// writes the files of base log-probabilities that llama-perplexity
// --kl-divergence-base saves, so that ruvllm can be scored against
// llama.cpp on exactly the tokens and positions llama.cpp saw.
package kldiv

import "math"

// minLogProb is the log-probability below which a base token's term is left
// out of the divergence (llama-perplexity's cut-off: its compressed files
// cannot represent smaller ones, and such a term weighs under 1e-7).
const minLogProb = -16

// Stats accumulates the comparison over positions. The zero value is ready
// to use.
type Stats struct {
	n                   int
	sumNLL, sumNLL2     float64 // the compared model's negative log-likelihoods
	sumBase, sumBase2   float64 // the base's
	sumNLLBase          float64 // Σ nll·nll_base
	sumKLD, sumKLD2     float64
	maxKLD              float64
	sameTop             int
	sumPDiff2, maxPDiff float64 // p(next) differences
}

// LogSoftmax writes the log-probabilities of logits into dst (len(logits)),
// computed in float64.
func LogSoftmax(dst []float64, logits []float32) {
	dst = dst[:len(logits)]
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	lse := m + math.Log(sum)
	for i, v := range logits {
		dst[i] = float64(v) - lse
	}
}

// Add compares one position: base holds the base model's log-probabilities
// of every token, logits the compared model's raw logits (same length), and
// next is the token that followed in the text. scratch, if long enough, is
// used for the compared model's log-probabilities (nil allocates).
func (s *Stats) Add(base []float64, logits []float32, next int32, scratch []float64) []float64 {
	if cap(scratch) < len(logits) {
		scratch = make([]float64, len(logits))
	}
	lp := scratch[:len(logits)]
	LogSoftmax(lp, logits)
	base = base[:len(lp)]
	var kld float64
	for i, b := range base {
		if b > minLogProb {
			kld += math.Exp(b) * (b - lp[i])
		}
	}
	nll, nllBase := -lp[next], -base[next]
	s.n++
	s.sumNLL += nll
	s.sumNLL2 += nll * nll
	s.sumBase += nllBase
	s.sumBase2 += nllBase * nllBase
	s.sumNLLBase += nll * nllBase
	s.sumKLD += kld
	s.sumKLD2 += kld * kld
	// the first position sets it: a divergence can be slightly negative
	// (the base's log-probabilities are rounded to 16 bits), and a
	// maximum that started at 0 was above a mean of all-negative ones
	if s.n == 1 {
		s.maxKLD = kld
	}
	s.maxKLD = max(s.maxKLD, kld)
	if argmax(lp) == argmax(base) {
		s.sameTop++
	}
	d := math.Exp(-nll) - math.Exp(-nllBase)
	s.sumPDiff2 += d * d
	s.maxPDiff = max(s.maxPDiff, math.Abs(d))
	return scratch
}

// argmax returns the index of the first largest value.
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// Merge adds the positions of o to s.
func (s *Stats) Merge(o *Stats) {
	s.n += o.n
	s.sumNLL += o.sumNLL
	s.sumNLL2 += o.sumNLL2
	s.sumBase += o.sumBase
	s.sumBase2 += o.sumBase2
	s.sumNLLBase += o.sumNLLBase
	s.sumKLD += o.sumKLD
	s.sumKLD2 += o.sumKLD2
	switch {
	case o.n == 0:
	case s.n == o.n: // s had none
		s.maxKLD = o.maxKLD
	default:
		s.maxKLD = max(s.maxKLD, o.maxKLD)
	}
	s.sameTop += o.sameTop
	s.sumPDiff2 += o.sumPDiff2
	s.maxPDiff = max(s.maxPDiff, o.maxPDiff)
}

// Summary is the result of a comparison.
type Summary struct {
	Positions int     `json:"positions"`
	PPL       float64 `json:"ppl"`      // the compared model's perplexity
	BasePPL   float64 `json:"ppl_base"` // the base's, on the same positions
	// PPLRatio is PPL/BasePPL; |PPLRatio−1| is the perplexity difference.
	PPLRatio float64 `json:"ppl_ratio"`
	MeanKLD  float64 `json:"kld_mean"`
	// KLDUncertainty is the standard error of MeanKLD.
	KLDUncertainty float64 `json:"kld_uncertainty"`
	MaxKLD         float64 `json:"kld_max"`
	// SameTop is the fraction of positions where both models' most likely
	// token is the same.
	SameTop  float64 `json:"same_top"`
	RMSPDiff float64 `json:"p_diff_rms"` // RMS of p(next) differences
	MaxPDiff float64 `json:"p_diff_max"`
}

// Summary returns the comparison so far.
func (s *Stats) Summary() Summary {
	if s.n == 0 {
		return Summary{}
	}
	n := float64(s.n)
	out := Summary{
		Positions: s.n,
		PPL:       math.Exp(s.sumNLL / n),
		BasePPL:   math.Exp(s.sumBase / n),
		PPLRatio:  math.Exp((s.sumNLL - s.sumBase) / n),
		MeanKLD:   s.sumKLD / n,
		MaxKLD:    s.maxKLD,
		SameTop:   float64(s.sameTop) / n,
		RMSPDiff:  math.Sqrt(s.sumPDiff2 / n),
		MaxPDiff:  s.maxPDiff,
	}
	if s.n > 1 {
		if v := s.sumKLD2/n - out.MeanKLD*out.MeanKLD; v > 0 {
			out.KLDUncertainty = math.Sqrt(v / (n - 1))
		}
	}
	return out
}
