package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sampleReference is Sample with every step of the chain over a candidate
// for every finite logit, as Sample computed before its whole-vocabulary
// steps (the chain's definition).
func sampleReference(s *Sampler, logits []float32) int32 {
	if s.p.Temperature <= 0 {
		return argmax(logits)
	}
	c := s.truncate(s.allCands(logits))
	if len(c) == 0 {
		return -1
	}
	return s.draw(c)
}

// TestWholeVocabularyStepsMatchChain checks that Sample's steps over the
// logits themselves (drawAll, topK, nucleus, minPCands) draw the token the
// chain over every candidate draws, for the same seed: on random logits
// with ties, banned (−Inf), broken (NaN) and forced (+Inf) tokens, for
// every truncation and a temperature, through many draws of one sampler.
func TestWholeVocabularyStepsMatchChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 43))
	params := []Params{
		{Temperature: 1},
		{Temperature: 0.7},
		{Temperature: 1.5, TopK: 40},
		{Temperature: 0.8, TopK: 1},
		{Temperature: 0.8, TopK: 5000}, // more than the finite logits: no cut
		{Temperature: 1, TopP: 0.9},
		{Temperature: 0.6, TopP: 0.3},
		{Temperature: 1, MinP: 0.05},
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05},
		{Temperature: 0.8, TopP: 0.95, MinP: 0.1},
	}
	for trial := range 300 {
		n := 1 + rng.IntN(3000)
		logits := make([]float32, n)
		ties := rng.IntN(2) == 0
		for i := range logits {
			if ties {
				logits[i] = float32(rng.IntN(60)) / 4
			} else {
				logits[i] = float32(rng.NormFloat64() * 3)
			}
			switch r := rng.IntN(1000); { // trials by 4: none, −Inf, also NaN, also +Inf
			case r < 20 && trial%4 >= 1:
				logits[i] = negInf
			case r >= 20 && r < 22 && trial%4 >= 2:
				logits[i] = float32(math.NaN())
			case r == 22 && trial%4 == 3:
				logits[i] = float32(math.Inf(1))
			}
		}
		if trial%50 == 0 { // every token banned or broken
			for i := range logits {
				logits[i] = negInf
			}
			logits[0] = float32(math.NaN())
		}
		for _, p := range params {
			p.Seed = uint64(trial + 1)
			fast, ref := New(p), New(p)
			for draw := range 20 {
				got := fast.Sample(slices.Clone(logits), nil)
				want := sampleReference(ref, slices.Clone(logits))
				if got != want {
					t.Fatalf("trial %d (%d logits) %+v draw %d: %d, the chain over every candidate draws %d", trial, n, p, draw, got, want)
				}
			}
		}
	}
}

// TestTopKMatchesPartialSort checks topK against partialSortDesc over the
// candidates, ties and a forced token included.
func TestTopKMatchesPartialSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 53))
	for trial := range 200 {
		n := 2 + rng.IntN(500)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(rng.IntN(20))
			if rng.IntN(50) == 0 {
				logits[i] = float32(math.Inf(1))
			}
		}
		k := 1 + rng.IntN(n-1)
		var s Sampler
		got, ok := s.topK(logits, k)
		if !ok {
			t.Fatalf("trial %d: no cut of %d logits to %d", trial, n, k)
		}
		got = slices.Clone(got)
		var r Sampler
		want := r.allCands(logits)
		partialSortDesc(want, k)
		if !slices.Equal(got, want[:k]) {
			t.Fatalf("trial %d: top %d of %d: %v, want %v", trial, k, n, got, want[:k])
		}
	}
}

// TestNucleusMatchesTopP checks nucleus against topP over every
// candidate on logits that are not all equal: it takes no fallback there,
// and keeps the same tokens in the same order with the same
// probabilities.
func TestNucleusMatchesTopP(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 61))
	for trial := range 200 {
		n := 2 + rng.IntN(2000)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * 2)
			if rng.IntN(100) == 0 {
				logits[i] = negInf
			}
		}
		logits[0], logits[1] = 0, 1 // not all equal
		p := float32(0.05 + 0.9*rng.Float64())
		var s Sampler
		got, ok := s.nucleus(logits, p)
		if !ok {
			t.Fatalf("trial %d: nucleus of %d logits at p=%v took the fallback", trial, n, p)
		}
		got = slices.Clone(got)
		var r Sampler
		want := topP(r.allCands(logits), p, false)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: nucleus at p=%v: %d tokens, topP %d (or they differ)", trial, p, len(got), len(want))
		}
	}
}

// TestHugeTopK checks that a top-k far beyond the vocabulary (a client's
// number) drops nothing and allocates nothing by it.
func TestHugeTopK(t *testing.T) {
	logits := []float32{1, 3, 2, 0}
	for _, k := range []int{4, 5, 1 << 40, math.MaxInt} {
		p := Params{Temperature: 0.8, TopK: k, TopP: 0.9, Seed: 9}
		a, b := New(p), New(p)
		if got, want := a.Sample(slices.Clone(logits), nil), sampleReference(b, slices.Clone(logits)); got != want {
			t.Fatalf("top-k %d: %d, the chain draws %d", k, got, want)
		}
	}
}

// TestTopKNoCutWithKFinite checks that topK leaves the chain to every
// candidate when no more than k logits are finite, the rest −Inf or NaN
// (top-k then drops nothing, and the order stays the ids').
func TestTopKNoCutWithKFinite(t *testing.T) {
	for _, tail := range []float32{negInf, float32(math.NaN())} {
		logits := []float32{3, 1, 2}
		for range 40 {
			logits = append(logits, tail)
		}
		var s Sampler
		if _, ok := s.topK(logits, 3); ok {
			t.Errorf("three finite logits of %d (the rest %v), k = 3: cut", len(logits), tail)
		}
		if _, ok := s.topK(logits, 2); !ok {
			t.Errorf("three finite logits of %d (the rest %v), k = 2: no cut", len(logits), tail)
		}
	}
}

func BenchmarkSampleVocab(b *testing.B) {
	base := vocab150k()
	for _, p := range []Params{{Temperature: 1}, {Temperature: 0.8, TopP: 0.9}, {Temperature: 0.8, TopK: 40}, {Temperature: 0.8, MinP: 0.05}} {
		b.Run(fmt.Sprintf("%+v", p), func(b *testing.B) {
			p.Seed = 1
			s := New(p)
			logits := slices.Clone(base)
			for b.Loop() {
				copy(logits, base)
				s.Sample(logits, nil)
			}
		})
	}
}

// sampleMaskedReference is SampleMasked with the allowed tokens gathered
// as candidates whatever the mask (the chain's definition).
func sampleMaskedReference(s *Sampler, logits []float32, history []int32, allowed []uint64) int32 {
	s.biasAndPenalizeMasked(logits, history, allowed)
	if s.p.Temperature <= 0 {
		return argmaxMasked(logits, allowed)
	}
	c := s.filterMasked(logits, allowed)
	if len(c) == 0 {
		return -1
	}
	return s.draw(c)
}

// TestDenseMaskMatchesCandidates checks that SampleMasked with a mask that
// lets most tokens through (over a masked copy of the logits) draws what
// the allowed tokens' candidates draw and leaves the logits as they do,
// for masks of every density over vocabularies past denseMask's floor.
func TestDenseMaskMatchesCandidates(t *testing.T) {
	r := rand.New(rand.NewPCG(67, 71))
	for iter := range 150 {
		n := 1024 + r.IntN(4000)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(r.NormFloat64() * 3)
		}
		density := []float64{0.05, 0.2, 0.6, 0.95, 1}[iter%5]
		mask := make([]uint64, (n+63)/64+r.IntN(2))
		for id := range n {
			if r.Float64() < density {
				mask[id>>6] |= 1 << (id & 63)
			}
		}
		history := []int32{int32(r.IntN(n)), int32(r.IntN(n)), int32(r.IntN(n))}
		p := randomParams(r)
		a, b := New(p), New(p)
		for step := range 5 {
			la, lb := slices.Clone(logits), slices.Clone(logits)
			got := a.SampleMasked(la, history, mask)
			want := sampleMaskedReference(b, lb, history, mask)
			if got != want {
				t.Fatalf("iter %d (n %d, density %v) step %d params %+v: %d, the candidates draw %d", iter, n, density, step, p, got, want)
			}
			if !slices.EqualFunc(la, lb, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
				t.Fatalf("iter %d step %d: the logits left differ", iter, step)
			}
		}
	}
}

// BenchmarkSampleMasked150k samples at temperature 1 under a mask letting
// nine tokens in ten through (free text inside a constraint): SampleMasked
// and the allowed tokens gathered as candidates.
func BenchmarkSampleMasked150k(b *testing.B) {
	base := vocab150k()
	r := rand.New(rand.NewPCG(73, 79))
	mask := make([]uint64, (len(base)+63)/64)
	for id := range base {
		if r.IntN(10) != 0 {
			mask[id>>6] |= 1 << (id & 63)
		}
	}
	for _, bc := range []struct {
		name string
		fn   func(*Sampler, []float32) int32
	}{
		{"SampleMasked", func(s *Sampler, l []float32) int32 { return s.SampleMasked(l, nil, mask) }},
		{"candidates", func(s *Sampler, l []float32) int32 { return sampleMaskedReference(s, l, nil, mask) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(Params{Temperature: 1, Seed: 1})
			logits := slices.Clone(base)
			for b.Loop() {
				copy(logits, base)
				bc.fn(s, logits)
			}
		})
	}
}

// TestTopLogprobsMatchesSort checks TopLogprobs' heap over a vocabulary
// against every token sorted, on logits with ties and −Inf: the same ids
// in the same order, and log-probabilities within float32 rounding of
// float64 ones.
func TestTopLogprobsMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(137, 139))
	for trial := range 200 {
		n := 160 + rng.IntN(5000)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(rng.IntN(80)) / 8
			if rng.IntN(20) == 0 {
				logits[i] = negInf
			}
		}
		k := 1 + rng.IntN(20)
		got := TopLogprobs(logits, k)
		c := make([]cand, n)
		var lse float64
		for i, l := range logits {
			c[i] = cand{id: int32(i), logit: l}
			lse += math.Exp(float64(l))
		}
		lse = math.Log(lse)
		partialSortDesc(c, k)
		for i := range k {
			if got[i].ID != c[i].id || math.Abs(float64(got[i].Logprob)-(float64(c[i].logit)-lse)) > 1e-5 {
				t.Fatalf("trial %d (n %d, k %d): %d-th %+v, want id %d logprob %v", trial, n, k, i, got[i], c[i].id, float64(c[i].logit)-lse)
			}
		}
	}
}

// BenchmarkLogprobs150k is what a token costs that reports its
// log-probability and its 5 most likely alternatives.
func BenchmarkLogprobs150k(b *testing.B) {
	base := vocab150k()
	for b.Loop() {
		Logprobs(base, 7, 5)
	}
}

// typicalReference is typical with a full sort of every candidate.
func typicalReference(c []cand, p float32) []cand {
	scoreTypicality(c)
	slices.SortFunc(c, cmpTypical)
	out, _ := cumCut(c, p)
	return out
}

// TestTypicalMatchesFullSort checks typical's histogram prefix against a
// full sort by typicality: the same tokens in the same order, on logits
// with ties and tokens far below the rest (probability 0).
func TestTypicalMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(149, 151))
	fallbacks := 0
	for trial := range 300 {
		n := 2 + rng.IntN(3000)
		c := make([]cand, n)
		for i := range c {
			c[i] = cand{id: int32(i), logit: float32(rng.IntN(60)) / 6}
			if rng.IntN(50) == 0 {
				c[i].logit = -200 // e^-200 rounds to 0 in float32
			}
		}
		p := float32(0.05 + 0.9*rng.Float64())
		got := slices.Clone(typical(slices.Clone(c), p))
		want := typicalReference(slices.Clone(c), p)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d, p %v): %d tokens, the full sort keeps %d (or they differ)", trial, n, p, len(got), len(want))
		}
		// The prefix alone holds the answer (no fallback to the full sort)
		// but where rounding at a bucket's edge says otherwise.
		cc := slices.Clone(c)
		scoreTypicality(cc)
		m := massPrefix(cc, float64(p), byTypicality)
		slices.SortFunc(cc[:m], cmpTypical)
		if _, ok := cumCut(cc[:m], p); m == 0 || !ok {
			fallbacks++
		}
	}
	if fallbacks > 15 {
		t.Errorf("%d of 300 trials fell back to the full sort", fallbacks)
	}
}

// FuzzWholeVocabularySteps checks, on logits and parameters made from the
// fuzzer's bytes (any float32 bits: NaN, ±Inf, subnormals, ties), that
// Sample and SampleMasked draw what the chain over every candidate draws.
func FuzzWholeVocabularySteps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, uint8(3), uint8(40), uint8(200), uint8(10), uint64(1))
	f.Add([]byte{0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff, 0, 0, 0xc0, 0x7f, 1, 0, 0, 0}, uint8(1), uint8(0), uint8(255), uint8(0), uint64(7))
	f.Fuzz(func(t *testing.T, data []byte, temp, topK, topP, minP uint8, seed uint64) {
		n := len(data) / 4
		if n == 0 || n > 4096 {
			return
		}
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
		}
		p := Params{Temperature: float32(temp) / 64, TopK: int(topK % 64), TopP: float32(topP) / 255, MinP: float32(minP) / 1024, Seed: seed | 1}
		a, b := New(p), New(p)
		if got, want := a.Sample(slices.Clone(logits), nil), sampleReference(b, slices.Clone(logits)); got != want {
			t.Fatalf("%+v on %v: %d, the chain draws %d", p, logits, got, want)
		}
		mask := make([]uint64, (n+63)/64)
		for i := range mask {
			mask[i] = seed * 0x9e3779b97f4a7c15 >> (i % 7)
		}
		a, b = New(p), New(p)
		if got, want := a.SampleMasked(slices.Clone(logits), nil, mask), sampleMaskedReference(b, slices.Clone(logits), nil, mask); got != want {
			t.Fatalf("masked %+v on %v: %d, the chain draws %d", p, logits, got, want)
		}
	})
}

// FuzzLogprobs checks that Logprob and TopLogprobs take logits of any
// float32 bits without a panic, and that TopLogprobs' ids are distinct
// tokens of the vocabulary, best first.
func FuzzLogprobs(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff, 0, 0, 0xc0, 0x7f, 1, 0, 0, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		v := len(data) / 4
		if v > 4096 {
			return
		}
		logits := make([]float32, v)
		for i := range logits {
			logits[i] = math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
		}
		_ = Logprob(logits, int32(n))
		top := TopLogprobs(logits, int(n%24))
		seen := map[int32]bool{}
		for _, c := range top {
			if c.ID < 0 || int(c.ID) >= v || seen[c.ID] {
				t.Fatalf("top %v of %d logits", top, v)
			}
			seen[c.ID] = true
		}
	})
}
