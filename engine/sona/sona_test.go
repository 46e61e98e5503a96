package sona

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/engine/train"
)

func tinyLearner(t testing.TB, c Config) (*Learner, *train.Trainer) {
	t.Helper()
	o := testmodel.Options{Arch: "llama", Layers: 2, Dim: 32, Heads: 4, KVHeads: 2, FF: 64, ContextLength: 128, Type: quant.F16, Seed: 3}
	w, err := testmodel.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	b, err := train.NewBase(f, train.BaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := train.NewTrainer(b, train.Options{Threads: 2})
	rng := rand.New(rand.NewPCG(9, 9))
	general := make([]int32, 256)
	for i := range general {
		general[i] = int32(rng.IntN(b.Config().Vocab))
	}
	c.Seed = 1
	return NewLearner(tr, Options{Config: c, General: GeneralExamples(general, 32)}), tr
}

// feedback makes a correction: a prompt, the model's answer, and the
// user's answer, which always ends with the same three tokens.
func feedback(rng *rand.Rand, vocab int) Feedback {
	tok := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(rng.IntN(vocab))
		}
		return out
	}
	answer := tok(6)
	corr := append(slices.Clone(answer[:3]), 7, 8, 9)
	return Feedback{Signal: Correction, Prompt: tok(8), Answer: answer, Correction: corr, Embedding: []float32{rng.Float32(), rng.Float32(), 1}}
}

func nllOf(t *testing.T, tr *train.Trainer, as []train.Applied, fbs []Feedback) float64 {
	t.Helper()
	var ex []train.Example
	for _, fb := range fbs {
		ex = append(ex, train.Example{Tokens: append(slices.Clone(fb.Prompt), fb.Correction...), Start: len(fb.Prompt)})
	}
	l, err := tr.Evaluate(context.Background(), as, ex)
	if err != nil {
		t.Fatal(err)
	}
	return l.NLL
}

// TestLoops drives one scope through the instant, background and deep
// loops, undo, reset and a serialisation round trip, checking at each
// step what the scope's requests would apply.
func TestLoops(t *testing.T) {
	l, tr := tinyLearner(t, Config{MicroSteps: 4, ConsolidateSteps: 20, DeepMin: 6, DeepEpochs: 6, ValidationEvery: -1})
	ctx := context.Background()
	s := NewScope("user")
	vocab := tr.Base().Config().Vocab
	rng := rand.New(rand.NewPCG(4, 4))
	var fbs []Feedback
	for range 8 {
		fbs = append(fbs, feedback(rng, vocab))
	}
	base := nllOf(t, tr, nil, fbs[:1])
	updates := 0
	upd, err := l.Feedback(ctx, s, fbs[0], func(uint64) { updates++ })
	if err != nil {
		t.Fatal(err)
	}
	if updates != 4 || upd.Steps != 4 || upd.FirstApplied <= 0 || upd.FirstApplied > upd.Elapsed {
		t.Fatalf("update %+v with %d callbacks, want 4 steps", upd, updates)
	}
	v, as := s.Adapters()
	if v != upd.Version || len(as) != 1 {
		t.Fatalf("version %d with %d adapters, want %d and the MicroLoRA", v, len(as), upd.Version)
	}
	if after := nllOf(t, tr, as, fbs[:1]); !(after < base) {
		t.Fatalf("correction NLL %v -> %v", base, after)
	}

	// Undo brings the empty scope back: no adapters, base outputs.
	beforeUndo, _ := s.MarshalBinary()
	if err := s.Undo(); err != nil {
		t.Fatal(err)
	}
	if _, as := s.Adapters(); len(as) != 0 {
		t.Fatalf("undo of the first update left %d adapters", len(as))
	}
	if err := s.Undo(); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("second undo: %v", err)
	}
	restored, err := UnmarshalScope(beforeUndo)
	if err != nil {
		t.Fatal(err)
	}
	s = restored

	for _, fb := range fbs[1:] {
		if _, err := l.Feedback(ctx, s, fb, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, asMicro := s.Adapters()
	micro := nllOf(t, tr, asMicro, fbs)
	cres, err := l.Consolidate(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	_, asCons := s.Adapters()
	consNLL := nllOf(t, tr, asCons, fbs)
	t.Logf("NLL base %.3f, MicroLoRA %.3f, consolidated %.3f (%+v)", nllOf(t, tr, nil, fbs), micro, consNLL, cres)
	if st.Queued != 0 || st.Consolidations != 1 || len(asCons) != 1 || cres.Examples != 8 {
		t.Fatalf("after consolidation: stats %+v, %d adapters, %+v", st, len(asCons), cres)
	}
	if !(consNLL < nllOf(t, tr, nil, fbs)) {
		t.Fatalf("consolidated NLL %v is not below the base's", consNLL)
	}

	// Export: the consolidated adapter as a GGUF LoRA file that
	// engine/lora loads back with the same values.
	w, err := l.Export(s, "learned")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	ef, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	la, err := lora.LoadGGUF(ef, tr.Base().File(), nil)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := train.FromLoRA(la, tr.Base())
	if err != nil {
		t.Fatal(err)
	}
	if !equalAdapters(loaded, asCons[0].Adapter) || la.Name != "learned" {
		t.Fatal("exported adapter loads back with other values")
	}
	if _, err := l.Export(NewScope("empty"), "x"); !errors.Is(err, ErrNothingLearned) {
		t.Fatalf("export of an empty scope: %v", err)
	}

	// Exact undo: the consolidation undone gives the MicroLoRA's values back.
	if err := s.Undo(); err != nil {
		t.Fatal(err)
	}
	_, back := s.Adapters()
	if len(back) != 1 || !equalAdapters(back[0].Adapter, asMicro[0].Adapter) {
		t.Fatal("undo of the consolidation did not restore the MicroLoRA exactly")
	}
	if _, err := l.Consolidate(ctx, s); err != nil {
		t.Fatal(err)
	}

	// Serialisation round trip: same bytes, same adapters.
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := UnmarshalScope(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Fits(s2); err != nil {
		t.Fatal(err)
	}
	data2, _ := s2.MarshalBinary()
	if !bytes.Equal(data, data2) {
		t.Fatal("a decoded state serialises differently")
	}
	_, a1 := s.Adapters()
	_, a2 := s2.Adapters()
	if len(a1) != len(a2) || !equalAdapters(a1[0].Adapter, a2[0].Adapter) || s2.Bank().Len() != 8 {
		t.Fatal("decoded scope applies different adapters or lost trajectories")
	}

	// Deep loop: a candidate with figures, accepted or kept as rejected.
	// Two more corrections are reserved for its validation.
	l.cfg.ValidationEvery = 1
	for range 2 {
		upd, err := l.Feedback(ctx, s, feedback(rng, vocab), nil)
		if err != nil || !upd.Reserved {
			t.Fatalf("reserved feedback: %+v, %v", upd, err)
		}
	}
	cand, err := l.Deep(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deep candidate: %+v", cand)
	if cand.HoldoutNLL == 0 || cand.CurrentHoldoutNLL == 0 || cand.GeneralPPL == 0 || cand.Train != 8 || cand.Holdout != 2 {
		t.Fatalf("candidate figures missing: %+v", cand)
	}
	if cs := s.Candidates(); len(cs) != 1 || cs[0].Accepted != cand.Accepted || (!cand.Accepted && cs[0].Adapter == nil) {
		t.Fatalf("candidates %+v", cs)
	}

	// Reset: base exactly; undo of the reset: the adapters exactly.
	_, beforeReset := s.Adapters()
	s.Reset()
	if _, as := s.Adapters(); len(as) != 0 {
		t.Fatal("reset left adapters")
	}
	if err := s.Undo(); err != nil {
		t.Fatal(err)
	}
	_, afterUndo := s.Adapters()
	if len(afterUndo) != len(beforeReset) || !equalAdapters(afterUndo[0].Adapter, beforeReset[0].Adapter) {
		t.Fatal("undo of the reset did not restore the adapters exactly")
	}
}

func equalAdapters(a, b *train.Adapter) bool {
	if !a.SameShape(b) {
		return false
	}
	av, bv := a.Vectors(), b.Vectors()
	for i := range av {
		if !slices.Equal(av[i], bv[i]) {
			return false
		}
	}
	return true
}

// TestPauseResume: a paused scope queues feedback; resuming learns it.
func TestPauseResume(t *testing.T) {
	l, tr := tinyLearner(t, Config{MicroSteps: 2})
	s := NewScope("app")
	s.Pause()
	fb := feedback(rand.New(rand.NewPCG(1, 1)), tr.Base().Config().Vocab)
	upd, err := l.Feedback(context.Background(), s, fb, nil)
	if err != nil || !upd.Queued || s.Stats().Pending != 1 {
		t.Fatalf("paused feedback: %+v, %v, stats %+v", upd, err, s.Stats())
	}
	if _, as := s.Adapters(); len(as) != 0 {
		t.Fatal("a paused scope learned")
	}
	if err := l.Resume(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Pending != 0 || st.Applied != 1 || s.Paused() {
		t.Fatalf("after resume: %+v", st)
	}
}

// TestSignals: each signal's example has the documented objective.
func TestSignals(t *testing.T) {
	l, _ := tinyLearner(t, Config{})
	fb := Feedback{Prompt: []int32{1, 2}, Answer: []int32{3, 4, 5}, Correction: []int32{3, 6}}
	for _, tc := range []struct {
		sig    Signal
		weight float32
		tokens []int32
		avoid  []train.Avoid
	}{
		{Correction, 1, []int32{1, 2, 3, 6}, []train.Avoid{{Pos: 3, Token: 4, Weight: 0.5}}},
		{ThumbsUp, 0.5, []int32{1, 2, 3, 4, 5}, nil},
		{ThumbsDown, -1, []int32{1, 2, 3, 4, 5}, nil},
		{Regenerate, -0.3, []int32{1, 2, 3, 4, 5}, nil},
	} {
		fb.Signal = tc.sig
		ex, err := l.example(&fb)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Weight != tc.weight || ex.Start != 2 || !slices.Equal(ex.Tokens, tc.tokens) || !slices.Equal(ex.Avoid, tc.avoid) {
			t.Errorf("%v: %+v", tc.sig, ex)
		}
	}
	for _, bad := range []Feedback{{Signal: Correction, Prompt: []int32{1}, Answer: []int32{2}}, {Signal: ThumbsUp, Answer: []int32{2}}, {Signal: 9, Prompt: []int32{1}, Answer: []int32{2}}} {
		if _, err := l.example(&bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
		s := NewScope("bad")
		if _, err := l.Feedback(context.Background(), s, bad, nil); !errors.Is(err, ErrUnlearnable) || s.Stats().Received != 0 {
			t.Errorf("%+v: Feedback gave %v, %d received; want ErrUnlearnable and nothing recorded", bad, err, s.Stats().Received)
		}
	}
}

// FuzzUnmarshalScope: damaged state is an error, never a panic, and what
// decodes serialises back to the same bytes.
func FuzzUnmarshalScope(f *testing.F) {
	l, tr := tinyLearner(f, Config{MicroSteps: 1, MicroRank: 1})
	s := NewScope("f")
	if _, err := l.Feedback(context.Background(), s, feedback(rand.New(rand.NewPCG(2, 2)), tr.Base().Config().Vocab), nil); err != nil {
		f.Fatal(err)
	}
	data, _ := s.MarshalBinary()
	f.Add(data)
	f.Add(data[:len(data)/2])
	empty, _ := NewScope("e").MarshalBinary()
	f.Add(empty)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := UnmarshalScope(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, _ := s.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatal("decoded state serialises differently")
		}
	})
}

// TestFeedbackDuringConsolidation: feedback learned while a consolidation
// trains stays learned (queued over the new consolidated adapter).
func TestFeedbackDuringConsolidation(t *testing.T) {
	l, tr := tinyLearner(t, Config{MicroSteps: 1, ConsolidateSteps: 40, ValidationEvery: -1})
	ctx := context.Background()
	s := NewScope("u")
	rng := rand.New(rand.NewPCG(8, 8))
	vocab := tr.Base().Config().Vocab
	for range 3 {
		if _, err := l.Feedback(ctx, s, feedback(rng, vocab), nil); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Consolidate(ctx, s)
		done <- err
	}()
	late := feedback(rng, vocab)
	if _, err := l.Feedback(ctx, s, late, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Consolidations != 1 || st.Applied < 4 {
		t.Fatalf("stats %+v", st)
	}
	// The late feedback is either consolidated (it came before the run
	// took the queue) or queued and learned by a MicroLoRA again.
	_, as := s.Adapters()
	if st.Queued == 1 && len(as) != 2 {
		t.Fatalf("late feedback queued but %d adapters applied", len(as))
	}
	if st.Queued > 1 {
		t.Fatalf("%d queued", st.Queued)
	}
}

// TestDistillationHoldsGeneralText: distillation towards the base on
// general text keeps the adapted model's distribution there closer to
// the base's than the same learning without it, in the instant loop and
// after a consolidation, while the feedback is still learned.
func TestDistillationHoldsGeneralText(t *testing.T) {
	ctx := context.Background()
	off := Config{MicroSteps: 4, ConsolidateSteps: 20, ValidationEvery: -1, EWCLambda: -1, GeneralFisherRows: -1, DistillWeight: -1}
	on := off
	on.DistillWeight, on.DistillRows = 10, 2
	type result struct{ instantKL, consKL, nll float64 }
	var res [2]result
	var baseNLL float64
	for i, c := range []Config{off, on} {
		l, tr := tinyLearner(t, c)
		// The base's divergence from itself on general text is the
		// measure: the distillation set scored at weight 1.
		probe := on
		probe.DistillWeight, probe.DistillRows = 1, 1
		measure := NewLearner(tr, Options{Config: probe, General: l.general})
		set, err := measure.distillSet(ctx)
		if err != nil || len(set) != len(l.trainingGeneral()) {
			t.Fatalf("distillation set: %d examples, %v", len(set), err)
		}
		kl := func(s *Scope) float64 {
			_, as := s.Adapters()
			r, err := tr.Evaluate(ctx, as, set)
			if err != nil {
				t.Fatal(err)
			}
			return r.Objective
		}
		s := NewScope("u")
		rng := rand.New(rand.NewPCG(6, 6))
		var fbs []Feedback
		for range 4 {
			fb := feedback(rng, tr.Base().Config().Vocab)
			fbs = append(fbs, fb)
			if _, err := l.Feedback(ctx, s, fb, nil); err != nil {
				t.Fatal(err)
			}
		}
		res[i].instantKL = kl(s)
		if _, err := l.Consolidate(ctx, s); err != nil {
			t.Fatal(err)
		}
		res[i].consKL = kl(s)
		_, as := s.Adapters()
		res[i].nll = nllOf(t, tr, as, fbs)
		baseNLL = nllOf(t, tr, nil, fbs)
	}
	t.Logf("KL to the base on general text, instant and consolidated: without distillation %.4g, %.4g; with %.4g, %.4g; feedback NLL base %.3f, without %.3f, with %.3f",
		res[0].instantKL, res[0].consKL, res[1].instantKL, res[1].consKL, baseNLL, res[0].nll, res[1].nll)
	if !(res[1].instantKL < 0.7*res[0].instantKL) || !(res[1].consKL < 0.5*res[0].consKL) {
		t.Fatal("distillation did not hold general text nearer the base")
	}
	if !(baseNLL-res[1].nll > 0.5*(baseNLL-res[0].nll)) || !(res[0].nll < baseNLL) {
		t.Fatal("with distillation the feedback was learned much less")
	}
}

// TestConsolidateTransfer: the background loop's transfer examples are
// the queued positive feedback's answers taught by what the scope
// applies (their divergence from it is zero, from the base not), at the
// transfer weight times the signal's; negative signals bring none.
func TestConsolidateTransfer(t *testing.T) {
	ctx := context.Background()
	l, tr := tinyLearner(t, Config{MicroSteps: 4, MicroLR: 1e-2, ValidationEvery: -1, ConsolidateTransfer: 2})
	s := NewScope("u")
	rng := rand.New(rand.NewPCG(7, 7))
	for _, sig := range []Signal{Correction, ThumbsUp, ThumbsDown, Correction} {
		fb := feedback(rng, tr.Base().Config().Vocab)
		fb.Signal = sig
		if _, err := l.Feedback(ctx, s, fb, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, current := s.Adapters()
	ex, err := l.transferExamples(ctx, current, s.queue)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 3 || ex[0].Weight != 2 || ex[1].Weight != 1 || ex[2].Weight != 2 {
		t.Fatalf("%d transfer examples (weights %v), want the three positive signals at 2, 1, 2", len(ex), func() (w []float32) {
			for _, e := range ex {
				w = append(w, e.Weight)
			}
			return
		}())
	}
	for i, e := range ex {
		q := s.queue[[]int{0, 1, 3}[i]].ex
		if !slices.Equal(e.Tokens, q.Tokens) || e.Start != q.Start || e.Teacher == nil || e.Teacher.Positions() != len(q.Tokens)-q.Start {
			t.Fatalf("transfer example %d does not teach queued answer", i)
		}
	}
	self, err := tr.Evaluate(ctx, current, ex)
	if err != nil {
		t.Fatal(err)
	}
	base, err := tr.Evaluate(ctx, nil, ex)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(self.Objective) > 1e-5 || !(base.Objective > 100*math.Abs(self.Objective)) {
		t.Fatalf("divergence from the teacher: %g under the scope's adapters, %g under the base", self.Objective, base.Objective)
	}

	// End to end: the same feedback consolidated with and without the
	// transfer term (without EWC++ or distillation, to see it alone);
	// with it, the consolidated adapter alone is nearer the model that
	// applied the MicroLoRA before.
	var after [2]float64
	for i, w := range []float64{-1, 2} {
		l, tr := tinyLearner(t, Config{MicroSteps: 4, MicroLR: 1e-2, ConsolidateSteps: 20, ConsolidateLR: 1e-2, EWCLambda: -1, DistillWeight: -1, ValidationEvery: -1, ConsolidateTransfer: w})
		probe := NewLearner(tr, Options{Config: Config{ConsolidateTransfer: 1}})
		s := NewScope("u")
		rng := rand.New(rand.NewPCG(7, 7))
		for range 4 {
			if _, err := l.Feedback(ctx, s, feedback(rng, tr.Base().Config().Vocab), nil); err != nil {
				t.Fatal(err)
			}
		}
		_, current := s.Adapters()
		ex, err := probe.transferExamples(ctx, current, s.queue)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Consolidate(ctx, s); err != nil {
			t.Fatal(err)
		}
		_, cons := s.Adapters()
		if len(cons) != 1 {
			t.Fatalf("%d adapters applied after the consolidation, want the consolidated one", len(cons))
		}
		r, err := tr.Evaluate(ctx, cons, ex)
		if err != nil {
			t.Fatal(err)
		}
		after[i] = r.Objective
	}
	t.Logf("KL from the model before the consolidation to the consolidated adapter: without transfer %.4g, with %.4g", after[0], after[1])
	if !(after[1] < 0.7*after[0]) {
		t.Fatal("the transfer term did not bring the consolidated adapter nearer what the scope applied")
	}
}

// TestAdaptersInCallback: the update callback runs under the scope's lock
// and may read what it is told about (the daemon serves it from there).
func TestAdaptersInCallback(t *testing.T) {
	l, tr := tinyLearner(t, Config{MicroSteps: 2, ValidationEvery: -1})
	s := NewScope("user")
	rng := rand.New(rand.NewPCG(5, 5))
	var seen []uint64
	_, err := l.Feedback(context.Background(), s, feedback(rng, tr.Base().Config().Vocab), func(v uint64) {
		got, as := s.Adapters()
		if got != v || len(as) != 1 {
			t.Errorf("callback for version %d: Adapters gave version %d with %d adapters", v, got, len(as))
		}
		seen = append(seen, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] >= seen[1] {
		t.Fatalf("callbacks for versions %v", seen)
	}
	restored, err := func() (*Scope, error) {
		b, err := s.MarshalBinary()
		if err != nil {
			return nil, err
		}
		return UnmarshalScope(b)
	}()
	if err != nil {
		t.Fatal(err)
	}
	if v, as := restored.Adapters(); v != seen[1] || len(as) != 1 {
		t.Fatalf("restored scope serves version %d with %d adapters, want %d with 1", v, len(as), seen[1])
	}
}

// TestRatingAgainSupersedes: a reply rated again (thumbs-up, then
// thumbs-down: the same key) leaves only the second rating in what
// consolidation, replay and deep runs learn from, paused or not; another
// reply's rating is kept. After a consolidation the replayed records hold
// the second rating alone too. A state written in format 1 (records
// without keys) still reads.
func TestRatingAgainSupersedes(t *testing.T) {
	l, tr := tinyLearner(t, Config{MicroSteps: 1, ValidationEvery: -1})
	vocab := tr.Base().Config().Vocab
	rng := rand.New(rand.NewPCG(4, 4))
	ctx := context.Background()
	signals := func(rs []record) (out []string) {
		for _, r := range rs {
			out = append(out, r.key+":"+r.signal.String())
		}
		return out
	}
	for _, paused := range []bool{false, true} {
		s := NewScope("user")
		if paused {
			s.Pause()
		}
		fb := feedback(rng, vocab)
		other := feedback(rng, vocab)
		for _, f := range []Feedback{
			{Signal: ThumbsUp, Prompt: fb.Prompt, Answer: fb.Answer, Key: "r1"},
			{Signal: ThumbsUp, Prompt: other.Prompt, Answer: other.Answer, Key: "r2"},
			{Signal: ThumbsDown, Prompt: fb.Prompt, Answer: fb.Answer, Key: "r1"},
		} {
			if _, err := l.Feedback(ctx, s, f, nil); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"r2:" + ThumbsUp.String(), "r1:" + ThumbsDown.String()}
		s.mu.Lock()
		got, queued := signals(s.exchanges), signals(s.queue)
		if paused {
			queued = signals(s.pending)
		}
		s.mu.Unlock()
		if !slices.Equal(got, want) || !slices.Equal(queued, want) {
			t.Fatalf("paused %v: stored %v, queued %v; want %v", paused, got, queued, want)
		}
		if paused {
			continue
		}
		if _, err := l.Consolidate(ctx, s); err != nil {
			t.Fatal(err)
		}
		// Rated a third time after the consolidation: the replayed
		// thumbs-down goes too.
		if _, err := l.Feedback(ctx, s, Feedback{Signal: ThumbsUp, Prompt: fb.Prompt, Answer: fb.Answer, Key: "r1"}, nil); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		replay, stored := signals(s.replay), signals(s.exchanges)
		state1 := s.marshalVersion(1, true)
		s.mu.Unlock()
		if !slices.Equal(replay, []string{"r2:" + ThumbsUp.String()}) || !slices.Equal(stored, []string{"r2:" + ThumbsUp.String(), "r1:" + ThumbsUp.String()}) {
			t.Fatalf("after a consolidation and a third rating: replayed %v, stored %v", replay, stored)
		}
		old, err := UnmarshalScope(state1)
		if err != nil {
			t.Fatalf("a format-1 state: %v", err)
		}
		if got := signals(old.exchanges); !slices.Equal(got, []string{":" + ThumbsUp.String(), ":" + ThumbsUp.String()}) {
			t.Fatalf("format-1 records read as %v", got)
		}
	}
}

// TestUndoForgetsTheUndoneSignal: undo goes back to the scope before the
// last signal: the undone rating leaves the exchanges and the queue that
// deep runs and consolidation learn from, and a rating it superseded comes
// back. The undo point was taken after the signal was stored, so a deep
// run still learned the rating the user had undone.
func TestUndoForgetsTheUndoneSignal(t *testing.T) {
	l, tr := tinyLearner(t, Config{MicroSteps: 1, ValidationEvery: -1})
	vocab := tr.Base().Config().Vocab
	rng := rand.New(rand.NewPCG(5, 5))
	ctx := context.Background()
	fb, other := feedback(rng, vocab), feedback(rng, vocab)
	signals := func(rs []record) (out []string) {
		for _, r := range rs {
			out = append(out, r.key+":"+r.signal.String())
		}
		return out
	}
	up := func(f Feedback, key string) Feedback {
		return Feedback{Signal: ThumbsUp, Prompt: f.Prompt, Answer: f.Answer, Key: key}
	}
	down := func(f Feedback, key string) Feedback {
		return Feedback{Signal: ThumbsDown, Prompt: f.Prompt, Answer: f.Answer, Key: key}
	}
	for _, tc := range []struct {
		name    string
		signals []Feedback // the last one is undone
		want    []string
	}{
		{"a new rating", []Feedback{up(fb, "r1"), up(other, "r2")}, []string{"r1:" + ThumbsUp.String()}},
		{"a rating again", []Feedback{up(fb, "r1"), down(fb, "r1")}, []string{"r1:" + ThumbsUp.String()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScope("user")
			for _, f := range tc.signals {
				if _, err := l.Feedback(ctx, s, f, nil); err != nil {
					t.Fatal(err)
				}
			}
			received := s.Stats().Received
			if err := s.Undo(); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			stored, queued := signals(s.exchanges), signals(s.queue)
			s.mu.Unlock()
			if !slices.Equal(stored, tc.want) || !slices.Equal(queued, tc.want) {
				t.Fatalf("after undo: stored %v, queued %v; want %v", stored, queued, tc.want)
			}
			if got := s.Stats().Received; got != received {
				t.Fatalf("received %d after undo, want %d: the signal was received", got, received)
			}
		})
	}
}
