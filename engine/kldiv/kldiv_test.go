package kldiv

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func randLogits(r *rand.Rand, n int, spread float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * spread)
	}
	return l
}

func TestStatsIdenticalAndKnown(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var same Stats
	base := make([]float64, 50)
	for range 20 {
		l := randLogits(r, 50, 3)
		LogSoftmax(base, l)
		same.Add(base, l, int32(r.IntN(50)), nil)
	}
	s := same.Summary()
	if s.Positions != 20 || math.Abs(s.MeanKLD) > 1e-12 || s.SameTop != 1 || math.Abs(s.PPLRatio-1) > 1e-12 || s.MaxPDiff > 1e-12 {
		t.Fatalf("identical distributions: %+v", s)
	}

	// Two tokens: base (0.75, 0.25), compared (0.5, 0.5):
	// KL = 0.75 ln 1.5 + 0.25 ln 0.5; the top token differs only by a tie,
	// which argmax breaks towards the first, so it is the same.
	var two Stats
	base2 := []float64{math.Log(0.75), math.Log(0.25)}
	two.Add(base2, []float32{0, 0}, 1, nil)
	got := two.Summary()
	want := 0.75*math.Log(1.5) + 0.25*math.Log(0.5)
	if math.Abs(got.MeanKLD-want) > 1e-12 || got.SameTop != 1 {
		t.Fatalf("two tokens: KLD %v (want %v), same top %v", got.MeanKLD, want, got.SameTop)
	}
	if math.Abs(got.PPLRatio-2.0/4) > 1e-12 || math.Abs(got.PPL-2) > 1e-12 || math.Abs(got.BasePPL-4) > 1e-12 {
		t.Fatalf("two tokens: ppl %v, base %v, ratio %v", got.PPL, got.BasePPL, got.PPLRatio)
	}
	// A different top token.
	var flip Stats
	flip.Add(base2, []float32{0, 1}, 0, nil)
	if flip.Summary().SameTop != 0 {
		t.Fatal("a flipped top token counted as the same")
	}
	var merged Stats
	merged.Merge(&two)
	merged.Merge(&flip)
	if m := merged.Summary(); m.Positions != 2 || m.SameTop != 0.5 {
		t.Fatalf("merged: %+v", m)
	}
}

// TestFileRoundTrip writes logits as llama-perplexity would and reads them
// back: every log-probability within the compression's half step, and a
// base read from the file scores the same logits at a divergence near 0.
func TestFileRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const vocab, ctx, chunks = 301, 16, 2
	h := &Header{Ctx: ctx, Vocab: vocab, Chunks: chunks}
	for range ctx * chunks {
		h.Tokens = append(h.Tokens, int32(r.IntN(vocab)))
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]float32
	for range chunks * h.Scored() {
		l := randLogits(r, vocab, 2) // within 16 nats of the top: stored exactly
		all = append(all, l)
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if g := rd.Header(); g.Ctx != ctx || g.Vocab != vocab || g.Chunks != chunks || len(g.Tokens) != ctx*chunks || g.Tokens[5] != h.Tokens[5] {
		t.Fatalf("header %+v", g)
	}
	got := make([]float64, vocab)
	want := make([]float64, vocab)
	var st Stats
	for i, l := range all {
		if err := rd.Next(got); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		LogSoftmax(want, l)
		top := want[0]
		for _, v := range want {
			top = max(top, v)
		}
		step := 16.0 / 65535
		for k := range want {
			if want[k] < top-16 {
				continue // stored as the lowest step
			}
			if d := math.Abs(got[k] - want[k]); d > step/2+1e-5 {
				t.Fatalf("record %d token %d: %v, want %v", i, k, got[k], want[k])
			}
		}
		st.Add(got, l, int32(i%vocab), nil)
	}
	if err := rd.Next(got); err != io.EOF {
		t.Fatalf("after the last record: %v, want EOF", err)
	}
	// The compression's half step (up to 1.2e-4 nats per token) makes the
	// divergence noisy at the 1e-6 level, in llama-perplexity as here.
	if s := st.Summary(); math.Abs(s.MeanKLD) > 2e-5 || s.SameTop != 1 || math.Abs(s.PPLRatio-1) > 1e-4 {
		t.Fatalf("a base read back scores its own logits as %+v", s)
	}
}

func TestReaderRejects(t *testing.T) {
	head := func(ctx uint32, vocab, chunks int32) []byte {
		b := append([]byte(nil), magic[:]...)
		b = binary.LittleEndian.AppendUint32(b, ctx)
		b = binary.LittleEndian.AppendUint32(b, uint32(vocab))
		b = binary.LittleEndian.AppendUint32(b, uint32(chunks))
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "header"},
		{"magic", append([]byte("_logitz_"), make([]byte, 12)...), "magic"},
		{"ctx", head(2, 10, 1), "context"},
		{"vocab", head(16, 1<<30, 1), "vocabulary"},
		{"chunks", head(1<<20, 10, 1<<20), "chunks"},
		{"short tokens", head(16, 10, 1), "tokens"},
		{"token range", append(head(4, 10, 1), 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0), "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one about %q", err, tc.want)
			}
		})
	}
}

func FuzzReader(f *testing.F) {
	h := &Header{Ctx: 4, Vocab: 5, Chunks: 1, Tokens: []int32{0, 1, 2, 3}}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, h)
	w.Write([]float32{1, 2, 3, 4, 5})
	w.Flush()
	f.Add(buf.Bytes())
	f.Add([]byte("_logits_"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		dst := make([]float64, r.Header().Vocab)
		for range 8 {
			if r.Next(dst) != nil {
				return
			}
		}
	})
}

// TestMaxKLDNegative: the maximum divergence is the largest of those seen,
// negative ones included (the base's log-probabilities are rounded, so a
// divergence can fall a hair below 0); it started at 0, and a summary of
// negative divergences showed a maximum above their mean ("-0.000009 ±
// 0.000000 (max 0.000000)"). Merging into empty Stats keeps it.
func TestMaxKLDNegative(t *testing.T) {
	// base probabilities (0.5, 0.4) sum to 0.9: against (0.5, 0.5) the
	// divergence is 0.4 ln 0.8 < 0
	base := []float64{math.Log(0.5), math.Log(0.4)}
	var s Stats
	s.Add(base, []float32{0, 0}, 0, nil)
	want := 0.4 * math.Log(0.8)
	if got := s.Summary(); math.Abs(got.MaxKLD-want) > 1e-12 || math.Abs(got.MeanKLD-want) > 1e-12 {
		t.Errorf("one position: max %v, mean %v, want both %v", got.MaxKLD, got.MeanKLD, want)
	}
	var merged Stats
	merged.Merge(&Stats{})
	merged.Merge(&s)
	if got := merged.Summary(); math.Abs(got.MaxKLD-want) > 1e-12 {
		t.Errorf("merged: max %v, want %v", got.MaxKLD, want)
	}
}
