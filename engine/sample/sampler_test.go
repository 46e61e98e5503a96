package sample

import (
	"math"
	"slices"
	"testing"
)

var negInf = float32(math.Inf(-1))

// lnProbs returns logits whose softmax is exactly probs (up to rounding).
func lnProbs(probs ...float64) []float32 {
	out := make([]float32, len(probs))
	for i, p := range probs {
		out[i] = float32(math.Log(p))
	}
	return out
}

// survivors runs the truncation chain and returns the surviving ids in
// ascending order with their final probabilities (after temperature).
func survivors(t *testing.T, p Params, logits []float32) (ids []int32, probs map[int32]float64) {
	t.Helper()
	s := New(p)
	c := s.filter(slices.Clone(logits))
	probs = map[int32]float64{}
	if len(c) == 0 {
		return nil, probs
	}
	softmax(c)
	for _, x := range c {
		ids = append(ids, x.id)
		probs[x.id] = float64(x.p)
	}
	slices.Sort(ids)
	return ids, probs
}

func TestTransforms(t *testing.T) {
	tests := []struct {
		name   string
		p      Params
		logits []float32
		want   []int32
		probs  map[int32]float64 // checked when non-nil
	}{
		{"no truncation", Params{Temperature: 1}, lnProbs(0.5, 0.3, 0.2), []int32{0, 1, 2},
			map[int32]float64{0: 0.5, 1: 0.3, 2: 0.2}},
		{"top-k 2", Params{Temperature: 1, TopK: 2}, []float32{1, 5, 3, 5, 2}, []int32{1, 3}, nil},
		{"top-k 3", Params{Temperature: 1, TopK: 3}, []float32{1, 5, 3, 5, 2}, []int32{1, 2, 3}, nil},
		{"top-k ties keep lowest ids", Params{Temperature: 1, TopK: 2}, []float32{1, 2, 2, 2}, []int32{1, 2}, nil},
		{"top-k >= vocab keeps all", Params{Temperature: 1, TopK: 10}, []float32{1, 2, 3}, []int32{0, 1, 2}, nil},
		{"top-k renormalises", Params{Temperature: 1, TopK: 2}, lnProbs(0.4, 0.3, 0.2, 0.1), []int32{0, 1},
			map[int32]float64{0: 4.0 / 7, 1: 3.0 / 7}},
		{"top-p 0.4", Params{Temperature: 1, TopP: 0.4}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0}, nil},
		{"top-p 0.79", Params{Temperature: 1, TopP: 0.79}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0, 1},
			map[int32]float64{0: 0.625, 1: 0.375}},
		{"top-p 0.85", Params{Temperature: 1, TopP: 0.85}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0, 1, 2}, nil},
		{"top-p 1 disabled", Params{Temperature: 1, TopP: 1}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0, 1, 2, 3}, nil},
		{"top-k before top-p", Params{Temperature: 1, TopK: 2, TopP: 0.5}, lnProbs(0.4, 0.3, 0.2, 0.1), []int32{0}, nil},
		{"top-p alone", Params{Temperature: 1, TopP: 0.5}, lnProbs(0.4, 0.3, 0.2, 0.1), []int32{0, 1}, nil},
		{"min-p 0.2", Params{Temperature: 1, MinP: 0.2}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0, 1, 2}, nil},
		{"min-p 0.5", Params{Temperature: 1, MinP: 0.5}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0, 1}, nil},
		{"min-p 0.7", Params{Temperature: 1, MinP: 0.7}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0}, nil},
		// Entropy 1.1421; |surprisal-H| = 0.449, 0.062, 0.755, 1.853: token 1
		// is the most typical, so typical-p can drop the most likely token.
		{"typical 0.25", Params{Temperature: 1, TypicalP: 0.25}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{1}, nil},
		{"typical 0.7", Params{Temperature: 1, TypicalP: 0.7}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0, 1}, nil},
		{"typical 0.9", Params{Temperature: 1, TypicalP: 0.9}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0, 1, 2}, nil},
		{"temperature 0.5 sharpens", Params{Temperature: 0.5}, []float32{0, float32(math.Ln2)}, []int32{0, 1},
			map[int32]float64{0: 0.2, 1: 0.8}},
		{"temperature 2 flattens", Params{Temperature: 2}, []float32{0, float32(2 * math.Ln2)}, []int32{0, 1},
			map[int32]float64{0: 1.0 / 3, 1: 2.0 / 3}},
		{"min-p before temperature", Params{Temperature: 4, MinP: 0.5}, lnProbs(0.5, 0.3, 0.15, 0.05), []int32{0, 1}, nil},
		{"banned tokens never survive", Params{Temperature: 1}, []float32{negInf, 1, negInf}, []int32{1},
			map[int32]float64{1: 1}},
		{"NaN logits dropped", Params{Temperature: 1}, []float32{float32(math.NaN()), 0, 0}, []int32{1, 2},
			map[int32]float64{1: 0.5, 2: 0.5}},
		{"+Inf forces the token", Params{Temperature: 1}, []float32{float32(math.Inf(1)), 3, 2}, []int32{0, 1, 2},
			map[int32]float64{0: 1, 1: 0, 2: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, probs := survivors(t, tt.p, tt.logits)
			if !slices.Equal(ids, tt.want) {
				t.Fatalf("survivors = %v, want %v", ids, tt.want)
			}
			for id, want := range tt.probs {
				if got := probs[id]; math.Abs(got-want) > 1e-5 {
					t.Errorf("p(%d) = %.6f, want %.6f", id, got, want)
				}
			}
		})
	}
}

// TestTopPLargeVocab exercises the growing partial selection of top-p: the
// nucleus (500 tokens) is larger than the first selection window.
func TestTopPLargeVocab(t *testing.T) {
	logits := make([]float32, 1000)
	ids, _ := survivors(t, Params{Temperature: 1, TopP: 0.4995}, logits)
	if len(ids) != 500 {
		t.Fatalf("nucleus size = %d, want 500", len(ids))
	}
	for i, id := range ids {
		if id != int32(i) {
			t.Fatalf("survivor %d = %d, want lowest ids first on ties", i, id)
		}
	}
}

func TestPartialSortMatchesFullSort(t *testing.T) {
	s := New(Params{Seed: 7})
	for _, k := range []int{1, 2, 5, 37, 100, 999, 1000} {
		c := make([]cand, 1000)
		for i := range c {
			// Few distinct values so ties are common.
			c[i] = cand{id: int32(i), logit: float32(s.rng.IntN(50))}
		}
		want := slices.Clone(c)
		slices.SortFunc(want, cmpDesc)
		partialSortDesc(c, k)
		if !slices.Equal(c[:k], want[:k]) {
			t.Fatalf("k=%d: partial sort prefix differs from full sort", k)
		}
	}
}

func TestPenalties(t *testing.T) {
	base := []float32{2, -2, 1, 0.5}
	tests := []struct {
		name    string
		p       Params
		history []int32
		want    []float32
	}{
		{"off", Params{}, []int32{0, 1, 0, 3}, []float32{2, -2, 1, 0.5}},
		{"repeat divides positive, multiplies negative", Params{RepeatPenalty: 2}, []int32{0, 1, 0, 3},
			[]float32{1, -4, 1, 0.25}},
		{"presence once per token", Params{PresencePenalty: 0.5}, []int32{0, 1, 0, 3},
			[]float32{1.5, -2.5, 1, 0}},
		{"frequency per occurrence", Params{FrequencyPenalty: 0.25}, []int32{0, 1, 0, 3},
			[]float32{1.5, -2.25, 1, 0.25}},
		{"all three, default window", Params{RepeatPenalty: 2, PresencePenalty: 0.5, FrequencyPenalty: 0.25},
			[]int32{0, 1, 0, 3}, []float32{0, -4.75, 1, -0.5}},
		{"window of last 2", Params{RepeatPenalty: 2, PresencePenalty: 0.5, FrequencyPenalty: 0.25, RepeatLastN: 2},
			[]int32{0, 1, 0, 3}, []float32{0.25, -2, 1, -0.5}},
		{"whole history", Params{FrequencyPenalty: 1, RepeatLastN: -1},
			append(slices.Repeat([]int32{2}, 100), 0), []float32{1, -2, -99, 0.5}},
		{"default window is 64", Params{FrequencyPenalty: 1},
			append(slices.Repeat([]int32{2}, 100), 0), []float32{1, -2, -62, 0.5}},
		{"out-of-vocab history ignored", Params{PresencePenalty: 1}, []int32{-1, 9, 2}, []float32{2, -2, 0, 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.p)
			got := slices.Clone(base)
			s.applyPenalties(got, tt.history)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("penalised logits = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTinyTemperatureIsGreedy: a positive temperature too small to scale
// logits by (1/t times a logit overflows float32) samples the arg-max,
// as 0 does; it drew nothing, which ended a reply at once, empty.
func TestTinyTemperatureIsGreedy(t *testing.T) {
	for _, temp := range []float32{1e-38, 1e-40, 1.4e-45, 1e-31} {
		for _, p := range []Params{{Temperature: temp}, {Temperature: temp, TopK: 2}, {Temperature: temp, TopP: 0.9, MinP: 0.05}} {
			p.Seeded = true
			s := New(p)
			if got := s.Sample([]float32{-5, 12.5, 3, 12.25}, nil); got != 1 {
				t.Fatalf("temperature %g (%+v): sampled %d, want the arg-max 1", temp, p, got)
			}
		}
	}
	// A small temperature that still scales is sampling, not greedy.
	if s := New(Params{Temperature: 1e-20, Seeded: true}); s.Params().Temperature != 1e-20 {
		t.Fatalf("temperature 1e-20 became %g", s.Params().Temperature)
	}
}

func TestGreedyAndBias(t *testing.T) {
	tests := []struct {
		name    string
		p       Params
		logits  []float32
		history []int32
		want    int32
	}{
		{"argmax", Params{}, []float32{1, 3, 2}, nil, 1},
		{"tie goes to lowest id", Params{}, []float32{1, 3, 3}, nil, 1},
		{"negative temperature is greedy", Params{Temperature: -1}, []float32{1, 3, 2}, nil, 1},
		{"bias lifts a token", Params{LogitBias: map[int32]float32{2: 10}}, []float32{1, 3, 2}, nil, 2},
		{"-inf bans the best", Params{LogitBias: map[int32]float32{1: negInf}}, []float32{1, 3, 2}, nil, 2},
		{"out-of-vocab bias ignored", Params{LogitBias: map[int32]float32{-4: 9, 99: 9}}, []float32{1, 3, 2}, nil, 1},
		{"penalty changes the argmax", Params{RepeatPenalty: 4}, []float32{1, 3, 2}, []int32{1}, 2},
		{"all banned greedy", Params{LogitBias: map[int32]float32{0: negInf, 1: negInf}}, []float32{1, 2}, nil, -1},
		{"all banned sampled", Params{Temperature: 1, LogitBias: map[int32]float32{0: negInf, 1: negInf}},
			[]float32{1, 2}, nil, -1},
		{"empty logits", Params{Temperature: 1}, nil, nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.p).Sample(slices.Clone(tt.logits), tt.history); got != tt.want {
				t.Fatalf("Sample = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestBanUnderSampling bans every token but one and checks that no seed ever
// draws a banned token even when they are far more likely.
func TestBanUnderSampling(t *testing.T) {
	bias := map[int32]float32{}
	for i := int32(0); i < 10; i++ {
		if i != 7 {
			bias[i] = negInf
		}
	}
	for seed := uint64(1); seed <= 50; seed++ {
		s := New(Params{Temperature: 1.5, Seed: seed, LogitBias: bias})
		logits := []float32{9, 9, 9, 9, 9, 9, 9, -5, 9, 9}
		if got := s.Sample(logits, nil); got != 7 {
			t.Fatalf("seed %d drew %d, want the only unbanned token 7", seed, got)
		}
		if !math.IsInf(float64(logits[0]), -1) {
			t.Fatalf("Sample should leave the bias applied in logits, got %v", logits[0])
		}
	}
}

// TestTemperatureDistribution draws many tokens with a fixed seed and checks
// the empirical frequencies against softmax(logits/T) with a chi-squared test.
func TestTemperatureDistribution(t *testing.T) {
	logits := []float32{1, 2, 0.5, 3, -1}
	const temp = 0.7
	const n = 20000
	var want [5]float64
	var sum float64
	for i, l := range logits {
		want[i] = math.Exp(float64(l) / temp)
		sum += want[i]
	}
	s := New(Params{Temperature: temp, Seed: 42})
	var got [5]int
	buf := make([]float32, len(logits))
	for range n {
		copy(buf, logits)
		got[s.Sample(buf, nil)]++
	}
	var chi2 float64
	for i := range want {
		exp := want[i] / sum * n
		d := float64(got[i]) - exp
		chi2 += d * d / exp
	}
	// Critical value of chi-squared with 4 degrees of freedom at p = 0.001.
	if chi2 > 18.47 {
		t.Fatalf("chi2 = %.2f > 18.47: counts %v do not follow softmax(l/T)", chi2, got)
	}
	// The same test must reject a sampler that ignores temperature.
	var chi2T1 float64
	for i, l := range logits {
		exp := math.Exp(float64(l)) / sumExp(logits) * n
		d := float64(got[i]) - exp
		chi2T1 += d * d / exp
	}
	if chi2T1 < 100 {
		t.Fatalf("chi2 against T=1 is only %.2f: test has no power", chi2T1)
	}
}

func sumExp(l []float32) float64 {
	var s float64
	for _, x := range l {
		s += math.Exp(float64(x))
	}
	return s
}

func drawSeq(seed uint64, n int) []int32 {
	s := New(Params{Temperature: 1, Seed: seed})
	logits := make([]float32, 100)
	out := make([]int32, n)
	for i := range out {
		clear(logits)
		out[i] = s.Sample(logits, nil)
	}
	return out
}

func TestSeeds(t *testing.T) {
	a, b := drawSeq(1, 300), drawSeq(1, 300)
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different tokens")
	}
	c := drawSeq(2, 300)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	// Uniform over 100 tokens: about 3 of 300 positions agree by chance.
	if same > 20 {
		t.Fatalf("seeds 1 and 2 agree on %d/300 positions; expected about 3", same)
	}
	r := New(Params{Temperature: 1})
	if r.Seed() == 0 {
		t.Fatal("Seed 0 must be replaced by a random seed")
	}
	if !slices.Equal(drawSeq(r.Seed(), 50), drawSeq(r.Seed(), 50)) {
		t.Fatal("a reported random seed does not reproduce")
	}
	// A chosen seed of 0 (Seeded) is a seed like any other.
	zero := func() []int32 {
		s := New(Params{Temperature: 1, Seeded: true})
		if s.Seed() != 0 {
			t.Fatalf("Seeded 0 became seed %d", s.Seed())
		}
		logits := make([]float32, 100)
		out := make([]int32, 300)
		for i := range out {
			clear(logits)
			out[i] = s.Sample(logits, nil)
		}
		return out
	}
	z := zero()
	if !slices.Equal(z, zero()) {
		t.Fatal("seed 0, chosen, gave different tokens")
	}
	if slices.Equal(z, a) {
		t.Fatal("seed 0 drew seed 1's tokens")
	}
}

func TestTopLogprobs(t *testing.T) {
	logits := []float32{0, float32(math.Log(3)), negInf, float32(math.Log(3))}
	got := TopLogprobs(logits, 3)
	want := []Candidate{{1, float32(math.Log(3.0 / 7))}, {3, float32(math.Log(3.0 / 7))}, {0, float32(math.Log(1.0 / 7))}}
	if len(got) != len(want) {
		t.Fatalf("got %d candidates, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || math.Abs(float64(got[i].Logprob-want[i].Logprob)) > 1e-6 {
			t.Errorf("candidate %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := len(TopLogprobs(logits, 10)); n != 4 {
		t.Errorf("n beyond vocab gave %d candidates, want 4", n)
	}
	if TopLogprobs(logits, 0) != nil {
		t.Error("n=0 should give nil")
	}
	if lp := Logprob(logits, 0); math.Abs(float64(lp)-math.Log(1.0/7)) > 1e-6 {
		t.Errorf("Logprob(0) = %v, want ln(1/7)", lp)
	}
	if lp, top := Logprobs(logits, 1, 3); lp != Logprob(logits, 1) || !slices.Equal(top, got) {
		t.Errorf("Logprobs(1, 3) = %v %v, want Logprob's %v and TopLogprobs' %v", lp, top, Logprob(logits, 1), got)
	}
	if lp, top := Logprobs(logits, 9, 0); !math.IsInf(float64(lp), -1) || top != nil {
		t.Errorf("Logprobs(9, 0) = %v %v, want -Inf and none", lp, top)
	}
	if lp := Logprob(logits, 2); !math.IsInf(float64(lp), -1) {
		t.Errorf("Logprob of banned token = %v, want -Inf", lp)
	}
	if lp := Logprob(logits, 9); !math.IsInf(float64(lp), -1) {
		t.Errorf("Logprob out of range = %v, want -Inf", lp)
	}
}

func vocab150k() []float32 {
	s := New(Params{Seed: 3})
	l := make([]float32, 150_000)
	for i := range l {
		l[i] = float32(s.rng.NormFloat64() * 3)
	}
	return l
}

func TestNoAllocsAfterWarmup(t *testing.T) {
	base := vocab150k()
	hist := make([]int32, 200)
	for i := range hist {
		hist[i] = int32(i * 7)
	}
	for _, p := range []Params{
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, Seed: 1},
		{Temperature: 0.8, TopP: 0.9, PresencePenalty: 0.2, FrequencyPenalty: 0.1, Seed: 1},
		{Temperature: 1, TypicalP: 0.9, Seed: 1, LogitBias: map[int32]float32{5: -1}},
		{Seed: 1, RepeatPenalty: 1.3},
		{Temperature: 1, Seed: 1},
		{Temperature: 0.7, MinP: 0.1, Seed: 1},
	} {
		s := New(p)
		logits := slices.Clone(base)
		s.Sample(logits, hist) // warm-up grows the buffers
		allocs := testing.AllocsPerRun(3, func() {
			copy(logits, base)
			s.Sample(logits, hist)
		})
		if allocs != 0 {
			t.Errorf("%+v: %.0f allocations per Sample, want 0", p, allocs)
		}
	}
}

func BenchmarkSample150k(b *testing.B) {
	base := vocab150k()
	for _, bc := range []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"topk40-topp0.95-minp0.05", Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 1}},
		{"topp0.9", Params{Temperature: 0.8, TopP: 0.9, Seed: 1}},
		{"temp-only", Params{Temperature: 0.8, Seed: 1}},
		{"typical0.9", Params{Temperature: 0.8, TypicalP: 0.9, Seed: 1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(bc.p)
			logits := slices.Clone(base)
			for b.Loop() {
				copy(logits, base)
				s.Sample(logits, nil)
			}
		})
	}
}

// TestTopPMatchesReference compares the bucketed nucleus with a plain full
// sort on random logits with many ties.
func TestTopPMatchesReference(t *testing.T) {
	r := New(Params{Seed: 11})
	for trial := range 20 {
		c := make([]cand, 3000)
		for i := range c {
			c[i] = cand{id: int32(i), logit: float32(r.rng.IntN(400)) / 40}
		}
		p := float32(0.05 + 0.9*r.rng.Float64())
		ref := slices.Clone(c)
		softmax(ref)
		slices.SortFunc(ref, cmpDesc)
		want, _ := cumCut(ref, p)
		got := topP(c, p, false)
		if len(got) != len(want) {
			t.Fatalf("trial %d p=%.3f: nucleus %d tokens, want %d", trial, p, len(got), len(want))
		}
		for i := range got {
			if got[i].id != want[i].id {
				t.Fatalf("trial %d: survivor %d = %d, want %d", trial, i, got[i].id, want[i].id)
			}
		}
	}
}
