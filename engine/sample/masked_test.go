package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func randomParams(r *rand.Rand) Params {
	p := Params{Temperature: []float32{0, 0.3, 0.8, 1, 1.5}[r.IntN(5)], Seed: r.Uint64() | 1}
	if r.IntN(2) == 0 {
		p.TopK = 1 + r.IntN(40)
	}
	if r.IntN(2) == 0 {
		p.TopP = 0.5 + 0.5*r.Float32()
	}
	if r.IntN(3) == 0 {
		p.MinP = 0.1 * r.Float32()
	}
	if r.IntN(3) == 0 {
		p.TypicalP = 0.5 + 0.4*r.Float32()
	}
	if r.IntN(3) == 0 {
		p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty = 1.3, 0.2, 0.1
	}
	if r.IntN(3) == 0 {
		p.LogitBias = map[int32]float32{int32(r.IntN(100)): 5, int32(r.IntN(100)): float32(math.Inf(-1))}
	}
	return p
}

func TestSampleMaskedAllAllowedEqualsSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		n := 1 + r.IntN(200)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(r.NormFloat64() * 3)
		}
		history := []int32{int32(r.IntN(n)), int32(r.IntN(n))}
		all := make([]uint64, (n+63)/64)
		for i := range all {
			all[i] = ^uint64(0)
		}
		p := randomParams(r)
		a, b := New(p), New(p)
		for step := 0; step < 5; step++ {
			got := a.SampleMasked(slices.Clone(logits), history, all)
			want := b.Sample(slices.Clone(logits), history)
			if got != want {
				t.Fatalf("iter %d step %d params %+v: masked %d, plain %d", iter, step, p, got, want)
			}
		}
	}
}

func TestSampleMaskedNeverLeavesMask(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 300; iter++ {
		n := 1 + r.IntN(300)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(r.NormFloat64() * 3)
		}
		mask := make([]uint64, (n+63)/64)
		var allowed []int32
		for k := 0; k < 1+r.IntN(5); k++ {
			id := int32(r.IntN(n))
			mask[id>>6] |= 1 << (id & 63)
			allowed = append(allowed, id)
		}
		p := randomParams(r)
		// A huge bias on a token outside the mask must not bring it back.
		if p.LogitBias == nil {
			p.LogitBias = map[int32]float32{}
		}
		for id := int32(0); id < int32(n); id++ {
			if mask[id>>6]&(1<<(id&63)) == 0 {
				p.LogitBias[id] = float32(math.Inf(1))
				break
			}
		}
		s := New(p)
		got := s.SampleMasked(slices.Clone(logits), nil, mask)
		if got >= 0 && !slices.Contains(allowed, got) {
			t.Fatalf("drew %d outside the mask %v (params %+v)", got, allowed, p)
		}
		if got < 0 {
			// Only when every allowed token is banned by a -Inf bias.
			for _, id := range allowed {
				if b, ok := p.LogitBias[id]; !ok || !math.IsInf(float64(b), -1) {
					t.Fatalf("no token drawn though %d is allowed (params %+v)", id, p)
				}
			}
		}
	}
}

func TestSkipKeepsDrawsAligned(t *testing.T) {
	// A forced token sampled from a one-token mask, or skipped, leaves the
	// same generator state behind.
	r := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 50)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	one := make([]uint64, 1)
	one[0] = 1 << 7
	all := []uint64{^uint64(0)}
	for _, temp := range []float32{0, 0.7} {
		p := Params{Temperature: temp, Seed: 42}
		a, b := New(p), New(p)
		if got := a.SampleMasked(slices.Clone(logits), nil, one); got != 7 {
			t.Fatalf("forced draw %d", got)
		}
		b.Skip()
		for k := 0; k < 10; k++ {
			if x, y := a.SampleMasked(slices.Clone(logits), nil, all), b.SampleMasked(slices.Clone(logits), nil, all); x != y {
				t.Fatalf("temperature %v: draws diverge after a skip (%d vs %d)", temp, x, y)
			}
		}
	}
}

func TestMaskLogits(t *testing.T) {
	l := []float32{1, 2, 3}
	MaskLogits(l, []uint64{0b101})
	if l[0] != 1 || !math.IsInf(float64(l[1]), -1) || l[2] != 3 {
		t.Errorf("masked %v", l)
	}
}
