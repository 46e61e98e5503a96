package sched

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/prefix"
	"github.com/ruvllm/ruvllm/engine/spec"
)

// newDrafter returns a draft model over a hash runner that is wrong once
// in noise predictions (0: never), with its own pool and cache.
func newDrafter(noise uint64, bs int) (*spec.ModelDrafter, *kv.Pool) {
	pool := kv.NewPool(256, bs)
	store := newTokenKV(256, bs)
	d := spec.NewModelDrafter(&hashRunner{kv: store, noise: noise}, pool, prefix.New(pool), "draft")
	d.AltBelow = 0.5
	return d, pool
}

// TestSpeculationMatchesPlain runs a random workload of greedy requests
// with every speculation kind at a fixed draft length (so drafts are
// verified whatever their odds), with a draft model that is wrong one time
// in three, prompt lookup that proposes from single-token matches (mostly
// wrong), shared prefixes, cancellations and a pool small enough to force
// eviction and preemption: every request must produce exactly its
// isolated greedy tokens, rejected drafts must have happened, and no block
// may leak. The hash model derives each token from what it reads back
// through the block table, so a rejected token left in a sequence or in
// the prefix cache changes the output.
func TestSpeculationMatchesPlain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noTree bool
	}{{"tree", false}, {"chains only", true}} {
		t.Run(tc.name, func(t *testing.T) {
			drafter, draftPool := newDrafter(3, 4)
			pool := kv.NewPool(64, 4)
			store := newTokenKV(64, 4)
			runner := &hashRunner{kv: store, noTree: tc.noTree}
			s := New(runner, pool, prefix.New(pool), Options{MaxBatchTokens: 40, MaxRunning: 6, MaxSeqLen: 120,
				Speculation: &Speculation{Lookup: &spec.Lookup{MinNgram: 1, Branches: 3}, Drafter: drafter,
					Control: spec.Options{Fixed: 4}}})
			r := rand.New(rand.NewPCG(5, 6))
			shared := [][]int32{make([]int32, 30), make([]int32, 13)}
			for _, p := range shared {
				for i := range p {
					p[i] = int32(r.IntN(vocab))
				}
			}
			kinds := []spec.Kinds{spec.KindsAll, spec.KindLookup, spec.KindDraft, spec.KindDraft | spec.KindTree, 0}
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for i := range 40 {
				base := shared[r.IntN(len(shared))]
				prompt := append(append([]int32(nil), base[:1+r.IntN(len(base))]...), int32(r.IntN(vocab)))
				n, cancel, kind := 1+r.IntN(40), r.IntN(8) == 0, kinds[r.IntN(len(kinds))]
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, stop := context.WithCancel(context.Background())
					defer stop()
					if cancel {
						go func() { time.Sleep(time.Millisecond); stop() }()
					}
					var got []int32
					j := greedyJob(prompt, n, &got)
					j.Speculate = kind
					err := s.Run(ctx, j)
					if cancel && errors.Is(err, context.Canceled) {
						return
					}
					if err != nil {
						errs <- fmt.Errorf("request %d: %v", i, err)
						return
					}
					if want := expected(prompt, n); fmt.Sprint(got) != fmt.Sprint(want) {
						errs <- fmt.Errorf("request %d (%v, cached %d): got %v, want %v", i, kind, j.CachedTokens, got, want)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			st := s.SpecStats()
			drafted := st.Drafted["lookup"] + st.Drafted["draft"]
			accepted := st.Accepted["lookup"] + st.Accepted["draft"]
			if st.Verifications == 0 || accepted == 0 || accepted == drafted {
				t.Errorf("speculation did not both accept and reject drafts: %+v", st)
			}
			if tc.noTree && runner.trees > 0 || !tc.noTree && runner.trees == 0 {
				t.Errorf("%d steps verified trees (runner takes trees: %v)", runner.trees, !tc.noTree)
			}
			s.Close()
			s.Cache().Clear()
			waitFree(t, pool)
			drafter.Close()
			if draftPool.Free() == draftPool.Blocks() {
				t.Errorf("the draft cache kept no prefixes")
			}
		})
	}
}

// TestSpeculationNeverCachesRejected checks the prefix cache after
// speculative requests whose drafts were mostly rejected: a second
// request whose prompt is the first's whole history reuses its blocks
// and must still compute its isolated tokens, and the cache must not
// hold one block more than the accepted history fills.
func TestSpeculationNeverCachesRejected(t *testing.T) {
	drafter, _ := newDrafter(2, 4)
	defer drafter.Close()
	pool := kv.NewPool(64, 4)
	store := newTokenKV(64, 4)
	s := New(&hashRunner{kv: store}, pool, prefix.New(pool), Options{MaxSeqLen: 200,
		Speculation: &Speculation{Drafter: drafter, Control: spec.Options{Fixed: 6}}})
	defer s.Close()
	prompt := []int32{3, 1, 4, 1, 5}
	var first []int32
	j := greedyJob(prompt, 37, &first)
	j.Speculate = spec.KindDraft
	if err := s.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if j.Spec.Accepted == 0 || j.Spec.Accepted == j.Spec.Drafted {
		t.Fatalf("drafts were not both accepted and rejected: %+v", j.Spec)
	}
	history := append(append([]int32(nil), prompt...), first...)
	// The last generated token was never fed, so the cache holds
	// everything before it, to the token (the last block partly).
	fed := len(history) - 1
	if got := s.Cache().Cached("m", history); got != fed {
		t.Fatalf("cache holds %d tokens of the history, want the %d fed", got, fed)
	}
	// A wrong token after the whole blocks of the fed history: no block,
	// whole or partial, may continue with it.
	wrong := append(append([]int32(nil), history[:fed/4*4]...), (history[fed/4*4]+1)%vocab, 0, 0, 0)
	if got := s.Cache().Cached("m", wrong); got != fed/4*4 {
		t.Fatalf("cache holds %d tokens of a diverging history, want %d", got, fed/4*4)
	}
	var second []int32
	j2 := greedyJob(history, 9, &second)
	j2.Speculate = spec.KindDraft
	if err := s.Run(context.Background(), j2); err != nil {
		t.Fatal(err)
	}
	if j2.CachedTokens == 0 {
		t.Fatal("the second request reused nothing")
	}
	if want := expected(history, 9); fmt.Sprint(second) != fmt.Sprint(want) {
		t.Fatalf("after reusing the cache: %v, want %v", second, want)
	}
}

// TestSpeculationAdapts runs the adaptive controller against a clock
// that charges each forward pass a fixed cost plus a cost per token:
// with drafts that are always right and cheap tokens, most steps must
// verify drafts and the request must take far fewer passes than tokens;
// with drafts that are never right and costly tokens, speculation must
// switch itself off but for rare probes.
func TestSpeculationAdapts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		noise         uint64 // draft model error rate 1/noise (1: always wrong)
		fixed, perTok time.Duration
		maxSteps      int // passes for 200 tokens
		maxVerify     int
	}{
		{"good drafts", 0, 10 * time.Millisecond, time.Millisecond, 100, 200},
		{"bad drafts", 1, time.Millisecond, time.Millisecond, 260, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drafter, _ := newDrafter(tc.noise, 16)
			defer drafter.Close()
			drafter.AltBelow = 0
			pool := kv.NewPool(64, 16)
			store := newTokenKV(64, 16)
			clock := &fakeClock{now: time.Unix(0, 0)}
			runner := &hashRunner{kv: store, clock: clock, cost: func(n int) time.Duration { return tc.fixed + time.Duration(n)*tc.perTok }}
			s := New(runner, pool, nil, Options{MaxSeqLen: 400, CostClock: clock.Since,
				Speculation: &Speculation{Drafter: drafter}})
			defer s.Close()
			var got []int32
			j := greedyJob([]int32{1, 2, 3}, 200, &got)
			j.Speculate = spec.KindDraft
			if err := s.Run(context.Background(), j); err != nil {
				t.Fatal(err)
			}
			if want := expected([]int32{1, 2, 3}, 200); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("tokens differ from greedy without speculation")
			}
			t.Logf("%d passes, %d verifications, %d of %d draft tokens accepted", runner.steps, j.Spec.Verifications, j.Spec.Accepted, j.Spec.Drafted)
			if runner.steps > tc.maxSteps || j.Spec.Verifications > tc.maxVerify {
				t.Fatalf("%d passes (at most %d wanted), %d verifications (at most %d)", runner.steps, tc.maxSteps, j.Spec.Verifications, tc.maxVerify)
			}
		})
	}
}

// softRunner is a model with a small vocabulary and soft logits: a fixed
// pseudo-random function of the visible history, so the exact probability
// of any continuation is computable (softProbs).
type softRunner struct {
	hashRunner
	greedy bool // a draft model: all mass on the arg-max
}

const softVocab = 4

func softLogits(h uint64, out []float32) {
	for v := range out {
		x := (h ^ uint64(v+1)*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
		out[v] = float32(x>>40) / float32(1<<24) * 2.5
	}
}

func softProbs(history []int32) []float64 {
	var h uint64 = 1469598103934665603
	for _, t := range history {
		h = (h ^ uint64(t)) * 1099511628211
	}
	l := make([]float32, softVocab)
	softLogits(h, l)
	p := make([]float64, softVocab)
	var sum float64
	for v, x := range l {
		p[v] = math.Exp(float64(x))
		sum += p[v]
	}
	for v := range p {
		p[v] /= sum
	}
	return p
}

func (r *softRunner) Vocab() int { return softVocab }

func (r *softRunner) Step(b *model.Batch, rows []int32, out [][]float32) error {
	return r.hashRunner.stepHashes(b, rows, func(i int, h uint64) {
		softLogits(h, out[i])
		if r.greedy {
			best := 0
			for v := range out[i] {
				if out[i][v] > out[i][best] {
					best = v
				}
			}
			clear(out[i])
			out[i][best] = 1
		}
	})
}

// TestSpeculationKeepsDistribution samples three tokens from a model with
// soft logits thousands of times, with a greedy draft model and prompt
// lookup drafting trees at a fixed length, and compares how often each
// continuation came out with its exact probability (a chi-square test
// at the 0.1 % level): speculation must not change the distribution.
// The same seeds without speculation must give the same tokens, run by
// run, since acceptance only ever keeps the token the sampler drew.
func TestSpeculationKeepsDistribution(t *testing.T) {
	const runs, gen = 3000, 3
	newSoft := func(greedy bool) (*softRunner, *kv.Pool) {
		pool := kv.NewPool(512, 4)
		store := newTokenKV(512, 4)
		return &softRunner{hashRunner: hashRunner{kv: store}, greedy: greedy}, pool
	}
	target, pool := newSoft(false)
	draftRunner, draftPool := newSoft(true)
	drafter := spec.NewModelDrafter(draftRunner, draftPool, nil, "")
	drafter.AltBelow = 0.9
	defer drafter.Close()
	withSpec := New(target, pool, nil, Options{MaxRunning: 16, Speculation: &Speculation{
		Lookup: &spec.Lookup{MinNgram: 1, Branches: 2}, Drafter: drafter, Control: spec.Options{Fixed: 3}}})
	defer withSpec.Close()
	plainRunner, plainPool := newSoft(false)
	plain := New(plainRunner, plainPool, nil, Options{MaxRunning: 16})
	defer plain.Close()
	prompt := []int32{1, 2, 1, 2, 1}
	sampleJob := func(seed uint64, out *[]int32) *Job {
		r := rand.New(rand.NewPCG(seed, 99))
		return &Job{Prompt: prompt, Speculate: spec.KindsAll, Next: func(logits []float32) (int32, bool) {
			var sum float64
			for _, l := range logits {
				sum += math.Exp(float64(l))
			}
			u, tok := r.Float64()*sum, int32(len(logits)-1)
			for v, l := range logits {
				if u -= math.Exp(float64(l)); u < 0 {
					tok = int32(v)
					break
				}
			}
			*out = append(*out, tok)
			return tok, len(*out) >= gen
		}}
	}
	outcomes := make([][]int32, runs)
	var mu sync.Mutex
	var verified, accepted int
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make(chan error, runs)
	for i := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var a, b []int32
			j := sampleJob(uint64(i+1), &a)
			if err := withSpec.Run(context.Background(), j); err != nil {
				errs <- err
				return
			}
			if err := plain.Run(context.Background(), sampleJob(uint64(i+1), &b)); err != nil {
				errs <- err
				return
			}
			if fmt.Sprint(a) != fmt.Sprint(b) {
				errs <- fmt.Errorf("seed %d: %v with speculation, %v without", i+1, a, b)
			}
			mu.Lock()
			outcomes[i] = a
			verified += j.Spec.Drafted
			accepted += j.Spec.Accepted
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if accepted == 0 || accepted == verified {
		t.Fatalf("%d of %d draft tokens accepted: the test needs both", accepted, verified)
	}
	counts := map[string]int{}
	for _, o := range outcomes {
		counts[fmt.Sprint(o)]++
	}
	// Exact probabilities of every continuation; those expected fewer
	// than 5 times are pooled.
	var chi2, pooledObs, pooledExp float64
	bins := 0
	for c := range softVocab * softVocab * softVocab {
		seq := []int32{int32(c / 16), int32(c / 4 % 4), int32(c % 4)}
		p, hist := 1.0, append([]int32(nil), prompt...)
		for _, tok := range seq {
			p *= softProbs(hist)[tok]
			hist = append(hist, tok)
		}
		exp, obs := p*runs, float64(counts[fmt.Sprint(seq)])
		if exp < 5 {
			pooledObs += obs
			pooledExp += exp
			continue
		}
		chi2 += (obs - exp) * (obs - exp) / exp
		bins++
	}
	if pooledExp > 0 {
		chi2 += (pooledObs - pooledExp) * (pooledObs - pooledExp) / pooledExp
		bins++
	}
	// The 0.999 quantile of chi-square with k degrees of freedom
	// (Wilson–Hilferty).
	k := float64(bins - 1)
	z := 3.0902
	crit := k * math.Pow(1-2/(9*k)+z*math.Sqrt(2/(9*k)), 3)
	t.Logf("chi-square %.1f over %d bins (0.1%% critical value %.1f); %d of %d draft tokens accepted", chi2, bins, crit, accepted, verified)
	if chi2 > crit {
		t.Fatalf("continuations are not distributed as the model says: chi-square %.1f > %.1f", chi2, crit)
	}
}

// demotingKV is tokenKV with a cold tier: demoting copies the tokens (a
// lossless "quantization"), so outputs must stay exact while blocks move.
type demotingKV struct {
	*tokenKV
	demoted int
}

func (d *demotingKV) DemoteBlock(dst, src int32) {
	copy(d.data[dst], d.data[src])
	d.demoted++
}

// TestColdTierWorkload runs greedy requests with shared prefixes and
// speculation over a pool with a small cold tier and a short hot window:
// blocks must move to the cold tier (and cold prefixes be evicted to make
// room), every request must produce its isolated tokens, and no block of
// either tier may leak.
func TestColdTierWorkload(t *testing.T) {
	const bs = 4
	pool := kv.NewTieredPool(40, 24, bs)
	store := &demotingKV{tokenKV: newTokenKV(pool.Blocks(), bs)}
	runner := &hashRunner{kv: store.tokenKV}
	s := New(&tieredRunner{runner, store}, pool, prefix.New(pool), Options{MaxBatchTokens: 24, MaxRunning: 4, MaxSeqLen: 120, HotWindow: 8,
		Speculation: &Speculation{Lookup: &spec.Lookup{MinNgram: 1}, Control: spec.Options{Fixed: 3}}})
	r := rand.New(rand.NewPCG(11, 12))
	shared := make([]int32, 40)
	for i := range shared {
		shared[i] = int32(r.IntN(vocab))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		prompt := append(append([]int32(nil), shared[:8+r.IntN(32)]...), int32(r.IntN(vocab)))
		n := 5 + r.IntN(40)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []int32
			j := greedyJob(prompt, n, &got)
			j.Speculate = spec.KindLookup
			if err := s.Run(context.Background(), j); err != nil {
				errs <- fmt.Errorf("request %d: %v", i, err)
				return
			}
			if want := expected(prompt, n); fmt.Sprint(got) != fmt.Sprint(want) {
				errs <- fmt.Errorf("request %d: got %v, want %v", i, got, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := s.Cache().Stats()
	if store.demoted == 0 || st.ColdBlocks == 0 || st.Evictions == 0 {
		t.Errorf("demoted %d blocks, cache %+v: the cold tier was not exercised", store.demoted, st)
	}
	s.Close()
	s.Cache().Clear()
	if pool.Free() != pool.HotBlocks() || pool.FreeCold() != pool.ColdBlocks() {
		t.Fatalf("leak: %d/%d hot and %d/%d cold blocks free", pool.Free(), pool.HotBlocks(), pool.FreeCold(), pool.ColdBlocks())
	}
}

// tieredRunner is a hash runner whose KV store has a cold tier.
type tieredRunner struct {
	*hashRunner
	store *demotingKV
}

func (r *tieredRunner) KV() compute.KVStore { return r.store }

// feedRecorder is a runner that records how many tokens each pass feeds.
type feedRecorder struct {
	*hashRunner
	fed []int
}

func (r *feedRecorder) Step(b *model.Batch, rows []int32, out [][]float32) error {
	r.fed = append(r.fed, len(b.Tokens))
	return r.hashRunner.Step(b, rows, out)
}

// TestDrafterBoundsCatchUp checks what a draft model is fed: a prompt read
// during prefill (CatchUp) in full, a decode step right after it one token,
// and a sequence that decoded far past its draft context (the draft model
// was off meanwhile) at most MaxGap tokens, with a draft still made; with
// MaxGap 0 the whole gap.
func TestDrafterBoundsCatchUp(t *testing.T) {
	for _, tc := range []struct {
		maxGap, wantGapPass int
	}{{32, 32}, {16, 16}, {0, 150}} {
		t.Run(fmt.Sprint("MaxGap=", tc.maxGap), func(t *testing.T) {
			pool := kv.NewPool(128, 4)
			store := newTokenKV(128, 4)
			rec := &feedRecorder{hashRunner: &hashRunner{kv: store}}
			d := spec.NewModelDrafter(rec, pool, nil, "")
			d.MaxGap = tc.maxGap
			defer d.Close()
			r := rand.New(rand.NewPCG(1, 2))
			toks := make([]int32, 300)
			for i := range toks {
				toks[i] = int32(r.IntN(vocab))
			}
			var draft spec.Draft
			req := func(n int) []spec.Request {
				draft.Reset()
				return []spec.Request{{ID: 7, Tokens: toks[:n], Draft: &draft, MaxNodes: 2}}
			}
			if err := d.CatchUp(req(100)); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rec.fed) != "[100]" {
				t.Fatalf("the prompt's catch-up fed %v tokens, want [100]", rec.fed)
			}
			rec.fed = nil
			if err := d.Draft(req(101), 2); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rec.fed) != "[1 1]" || draft.Len() != 2 {
				t.Fatalf("a step after the catch-up fed %v and drafted %d tokens, want [1 1] and 2", rec.fed, draft.Len())
			}
			rec.fed = nil
			if err := d.Draft(req(251), 2); err != nil {
				t.Fatal(err)
			}
			if len(rec.fed) != 2 || rec.fed[0] != tc.wantGapPass || rec.fed[1] != 1 || draft.Len() != 2 {
				t.Fatalf("after 150 tokens without drafts: fed %v and drafted %d tokens, want [%d 1] and 2", rec.fed, draft.Len(), tc.wantGapPass)
			}
		})
	}
}

// periodRunner is a model whose next token repeats the one period
// positions back (0 before the sequence has that many): its output
// loops, so prompt lookup predicts it perfectly. It takes no trees.
type periodRunner struct {
	hashRunner
	period int
}

func (r *periodRunner) TreeSpans() bool { return false }

func (r *periodRunner) Step(b *model.Batch, rows []int32, out [][]float32) error {
	// stepHashes stores the batch's tokens (and keeps the counters and the
	// clock) before it emits; the hashes are not needed.
	return r.stepHashes(b, rows, func(i int, _ uint64) {
		bs := r.kv.bs
		for _, sp := range b.Spans {
			if int(rows[i]) < sp.Row || int(rows[i]) >= sp.Row+sp.N {
				continue
			}
			tok := int32(0)
			if p := sp.Pos + int(rows[i]) - sp.Row + 1 - r.period; p >= 0 {
				tok = r.kv.data[sp.Blocks[p/bs]][p%bs]
			}
			clear(out[i])
			out[i][tok] = 1
		}
	})
}

// TestLookupWithoutPayingDraftModel runs a looping model with prompt
// lookup and a draft model that is always wrong, adaptively: the guard
// keeps the draft model off, and lookup must go on verifying its
// (always right) drafts meanwhile instead of being switched off with it.
func TestLookupWithoutPayingDraftModel(t *testing.T) {
	const period, gen = 8, 200
	drafter, _ := newDrafter(1, 16)
	defer drafter.Close()
	drafter.AltBelow = 0
	pool := kv.NewPool(64, 16)
	store := newTokenKV(64, 16)
	clock := &fakeClock{now: time.Unix(0, 0)}
	runner := &periodRunner{hashRunner: hashRunner{kv: store, clock: clock, cost: func(n int) time.Duration {
		return 10*time.Millisecond + time.Duration(n)*time.Millisecond
	}}, period: period}
	s := New(runner, pool, nil, Options{MaxSeqLen: 400, CostClock: clock.Since,
		Speculation: &Speculation{Lookup: &spec.Lookup{MinNgram: 2}, Drafter: drafter}})
	defer s.Close()
	prompt := []int32{5, 9, 2, 7, 1, 3, 8, 6, 5, 9, 2, 7}
	want := append([]int32(nil), prompt...)
	for range gen {
		want = append(want, want[len(want)-period])
	}
	want = want[len(prompt):]
	var got []int32
	j := greedyJob(prompt, gen, &got)
	j.Speculate = spec.KindLookup | spec.KindDraft
	if err := s.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tokens differ from the model's: got %v", got)
	}
	st := s.SpecStats()
	t.Logf("%d passes for %d tokens; lookup %d of %d accepted, draft model %d of %d", runner.steps, gen,
		st.Accepted["lookup"], st.Drafted["lookup"], st.Accepted["draft"], st.Drafted["draft"])
	if runner.steps > gen/3 {
		t.Fatalf("%d passes for %d tokens: lookup did not carry on while the draft model was off", runner.steps, gen)
	}
}

// TestPrefillTimesWithDraftedLastToken checks the prefill's bookkeeping
// when the prompt's last token is verified together with a draft (a
// prompt cached but for its last token, which prompt lookup drafts
// after): Prefilled must be set before the first Next, the pass counted
// and OnPrefilled called, as without speculation. The drafted pass was
// skipped, so Prefilled came a step after the first token and the
// daemon's TTFT breakdown showed a prefill longer than the TTFT and a
// negative sample time.
func TestPrefillTimesWithDraftedLastToken(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds spec.Kinds
	}{
		{"plain", 0},
		{"lookup", spec.KindLookup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, pool, _ := newTestScheduler(64, 4, Options{MaxSeqLen: 200,
				Speculation: &Speculation{Lookup: &spec.Lookup{MinNgram: 1}, Control: spec.Options{Fixed: 4}}})
			prompt := []int32{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1}
			var warm []int32
			if err := s.Run(context.Background(), greedyJob(prompt, 1, &warm)); err != nil {
				t.Fatal(err)
			}
			var got []int32
			j := greedyJob(prompt, 8, &got)
			j.Speculate = tc.kinds
			prefilled := false
			j.OnPrefilled = func() { prefilled = true }
			next := j.Next
			var atFirst *time.Time
			j.Next = func(logits []float32) (int32, bool) {
				if atFirst == nil {
					p := j.Prefilled
					atFirst = &p
				}
				return next(logits)
			}
			if err := s.Run(context.Background(), j); err != nil {
				t.Fatal(err)
			}
			if j.CachedTokens != len(prompt)-1 {
				t.Fatalf("cached %d of %d prompt tokens, want all but the last", j.CachedTokens, len(prompt))
			}
			if tc.kinds != 0 && j.Spec.Verifications == 0 {
				t.Fatal("no draft was verified")
			}
			if atFirst == nil || atFirst.IsZero() {
				t.Fatal("Prefilled was not set at the first Next")
			}
			if j.PrefillSteps != 1 || !prefilled {
				t.Fatalf("PrefillSteps %d (want 1), OnPrefilled called: %v", j.PrefillSteps, prefilled)
			}
			if want := expected(prompt, 8); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			s.Close()
			s.Cache().Clear()
			waitFree(t, pool)
		})
	}
}
