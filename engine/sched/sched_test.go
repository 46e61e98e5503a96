package sched

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/prefix"
)

const vocab = 50

// tokenKV is a KV store that holds the token id at each position: enough
// to detect any block-table mistake, since the runner derives its logits
// only from what it reads back.
type tokenKV struct {
	bs   int
	data [][]int32
}

// newTokenKV returns a tokenKV of blocks blocks of bs positions.
func newTokenKV(blocks, bs int) *tokenKV {
	s := &tokenKV{bs: bs, data: make([][]int32, blocks)}
	for i := range s.data {
		s.data[i] = make([]int32, bs)
	}
	return s
}

func (s *tokenKV) Config() compute.KVConfig {
	return compute.KVConfig{BlockSize: s.bs, Blocks: len(s.data)}
}
func (s *tokenKV) CopyBlock(dst, src int32)       { copy(s.data[dst], s.data[src]) }
func (s *tokenKV) ReadBlock(int32, []byte) error  { return errors.New("unused") }
func (s *tokenKV) WriteBlock(int32, []byte) error { return errors.New("unused") }
func (s *tokenKV) BlockBytes() int                { return 0 }
func (s *tokenKV) MoveRows(blocks []int32, dst, src []int) {
	for i := range dst {
		s.data[blocks[dst[i]/s.bs]][dst[i]%s.bs] = s.data[blocks[src[i]/s.bs]][src[i]%s.bs]
	}
}

// hashRunner computes logits from the whole stored history of each span,
// read through the block table after writing the batch's tokens.
type hashRunner struct {
	kv    *tokenKV
	gate  chan struct{} // when set, steps wait until it is closed
	mu    sync.Mutex
	steps int
	maxSp int
	// noTree makes the runner refuse tree spans (as a backend without
	// compute.TreeAttender); noise, when positive, makes it a poor draft
	// model: one prediction in noise is off by one.
	noTree bool
	noise  uint64
	// clock, when set, advances by cost(tokens) every step (the
	// scheduler's clock in speculation tests).
	clock *fakeClock
	cost  func(tokens int) time.Duration
	trees int // steps with a tree span
}

func (r *hashRunner) Vocab() int          { return vocab }
func (r *hashRunner) KV() compute.KVStore { return r.kv }
func (r *hashRunner) TreeSpans() bool     { return !r.noTree }

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// Since is the time the clock has moved since the Unix epoch it starts
// at (a sched.Options.CostClock).
func (c *fakeClock) Since() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now.Sub(time.Unix(0, 0))
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (r *hashRunner) Step(b *model.Batch, rows []int32, out [][]float32) error {
	return r.stepHashes(b, rows, func(i int, h uint64) {
		clear(out[i])
		next := h % vocab
		if r.noise > 0 && (h>>17)%r.noise == 0 {
			next = (next + 1) % vocab
		}
		out[i][next] = 1
	})
}

// stepHashes stores the batch's tokens and calls emit with the hash of
// what each of rows sees.
func (r *hashRunner) stepHashes(b *model.Batch, rows []int32, emit func(i int, h uint64)) error {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.steps++
	r.maxSp = max(r.maxSp, len(b.Spans))
	r.mu.Unlock()
	if r.clock != nil {
		r.clock.advance(r.cost(len(b.Tokens)))
	}
	bs := r.kv.bs
	hashes := make([]uint64, len(b.Tokens))
	for _, sp := range b.Spans {
		if sp.Tree != nil {
			if r.noTree || !compute.ValidTree(sp.Tree, sp.N) {
				return fmt.Errorf("tree span %v given to a runner that cannot take it", sp.Tree)
			}
			r.mu.Lock()
			r.trees++
			r.mu.Unlock()
		}
		for i := 0; i < sp.N; i++ {
			p := sp.Pos + i
			r.kv.data[sp.Blocks[p/bs]][p%bs] = b.Tokens[sp.Row+i]
		}
		for i := 0; i < sp.N; i++ {
			// Visible: the positions before the span, then (for a tree)
			// the token's ancestors and itself, else the span up to i.
			var h uint64 = 1469598103934665603
			for p := 0; p < sp.Pos; p++ {
				h = (h ^ uint64(r.kv.data[sp.Blocks[p/bs]][p%bs])) * 1099511628211
			}
			var path []int
			for k := i; k >= 0; k-- {
				path = append(path, k)
				if sp.Tree != nil {
					if k = int(sp.Tree[k]); k < 0 {
						break
					}
					k++ // the loop's k-- lands on the parent
				}
			}
			for x := len(path) - 1; x >= 0; x-- {
				p := sp.Pos + path[x]
				h = (h ^ uint64(r.kv.data[sp.Blocks[p/bs]][p%bs])) * 1099511628211
			}
			hashes[sp.Row+i] = h
		}
	}
	for i, row := range rows {
		emit(i, hashes[row])
	}
	return nil
}

// expected is what the hash model generates for prompt, computed directly.
func expected(prompt []int32, n int) []int32 {
	toks := append([]int32(nil), prompt...)
	var out []int32
	for len(out) < n {
		var h uint64 = 1469598103934665603
		for _, t := range toks {
			h = (h ^ uint64(t)) * 1099511628211
		}
		next := int32(h % vocab)
		out = append(out, next)
		toks = append(toks, next)
	}
	return out
}

func greedyJob(prompt []int32, n int, out *[]int32) *Job {
	return &Job{
		Prompt:    prompt,
		Namespace: "m",
		Next: func(logits []float32) (int32, bool) {
			best := int32(0)
			for i, v := range logits {
				if v > logits[best] {
					best = int32(i)
				}
			}
			*out = append(*out, best)
			return best, len(*out) >= n
		},
	}
}

func newTestScheduler(blocks, bs int, o Options) (*Scheduler, *kv.Pool, *hashRunner) {
	pool := kv.NewPool(blocks, bs)
	store := newTokenKV(blocks, bs)
	r := &hashRunner{kv: store}
	return New(r, pool, prefix.New(pool), o), pool, r
}

// TestRandomWorkloadMatchesIsolatedRuns runs many concurrent requests with
// shared prefixes, cancellations and a pool small enough to force eviction
// and preemption, and checks every finished request produced exactly what
// it would alone, and that no block leaks.
func TestRandomWorkloadMatchesIsolatedRuns(t *testing.T) {
	s, pool, runner := newTestScheduler(48, 4, Options{MaxBatchTokens: 24, MaxRunning: 6, MaxSeqLen: 120})
	defer s.Close()
	// Hold the first forward pass until requests have queued up, so they
	// overlap however fast this machine runs them.
	runner.gate = make(chan struct{})
	go func() {
		for {
			s.mu.Lock()
			n := len(s.queue)
			s.mu.Unlock()
			if n >= 20 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(runner.gate)
	}()
	r := rand.New(rand.NewPCG(3, 4))
	shared := [][]int32{make([]int32, 30), make([]int32, 13)}
	for _, p := range shared {
		for i := range p {
			p[i] = int32(r.IntN(vocab))
		}
	}
	type reqCase struct {
		prompt []int32
		n      int
		cancel bool
		prio   int
		delay  time.Duration // before cancelling, when cancel
	}
	var cases []reqCase
	for i := 0; i < 40; i++ {
		base := shared[r.IntN(len(shared))]
		prompt := append(append([]int32(nil), base[:1+r.IntN(len(base))]...), int32(r.IntN(vocab)), int32(r.IntN(vocab)))
		cases = append(cases, reqCase{prompt: prompt, n: 1 + r.IntN(25), cancel: r.IntN(6) == 0, prio: r.IntN(3),
			delay: time.Duration(r.IntN(3)) * time.Millisecond})
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(cases))
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				go func() { time.Sleep(c.delay); cancel() }()
			}
			var got []int32
			j := greedyJob(c.prompt, c.n, &got)
			j.Priority = c.prio
			err := s.Run(ctx, j)
			if c.cancel && errors.Is(err, context.Canceled) {
				return
			}
			if err != nil {
				errs <- fmt.Errorf("request %d: %v", i, err)
				return
			}
			if want := expected(c.prompt, c.n); fmt.Sprint(got) != fmt.Sprint(want) {
				errs <- fmt.Errorf("request %d (cached %d): got %v, want %v", i, j.CachedTokens, got, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := s.Cache().Stats()
	if st.HitTokens == 0 {
		t.Errorf("no prefix-cache hits in a workload of shared prefixes: %+v", st)
	}
	if runner.maxSp < 2 {
		t.Errorf("never batched more than one sequence per step (max %d spans)", runner.maxSp)
	}
	s.Cache().Clear()
	waitFree(t, pool)
}

func waitFree(t *testing.T, pool *kv.Pool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for pool.Free() != pool.Blocks() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if pool.Free() != pool.Blocks() {
		t.Fatalf("leak: %d of %d blocks free when idle", pool.Free(), pool.Blocks())
	}
}

func TestTooLargeForPool(t *testing.T) {
	s, pool, _ := newTestScheduler(4, 4, Options{MaxBatchTokens: 8})
	defer s.Close()
	var got []int32
	err := s.Run(context.Background(), greedyJob(make([]int32, 20), 3, &got))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	s.Cache().Clear()
	waitFree(t, pool)
}

// TestRunAgain: a job that finished runs again with a new prompt (a
// context shift), generating what that prompt gives, its cached head from
// the prefix cache.
func TestRunAgain(t *testing.T) {
	s, pool, _ := newTestScheduler(64, 4, Options{MaxBatchTokens: 8})
	defer s.Close()
	var got []int32
	j := greedyJob([]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5, &got)
	if err := s.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if want := expected(j.Prompt, 5); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first run: %v, want %v", got, want)
	}
	shifted := append([]int32{1, 2, 3, 4, 5, 6, 7, 8}, got...)
	j.Prompt, got = shifted, nil
	if err := s.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if want := expected(shifted, 5); fmt.Sprint(got) != fmt.Sprint(want) || j.CachedTokens != 8 {
		t.Fatalf("second run: %v (%d cached), want %v (8 cached)", got, j.CachedTokens, want)
	}
	s.Cache().Clear()
	waitFree(t, pool)
}

func TestCancelFreesBlocks(t *testing.T) {
	s, pool, _ := newTestScheduler(256, 4, Options{})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once sync.Once
	j := &Job{Prompt: []int32{1, 2, 3}, Next: func([]float32) (int32, bool) {
		once.Do(func() { close(started) })
		// Never ends by itself; slow enough that cancellation, not the
		// pool filling up, ends it even on a loaded machine.
		time.Sleep(time.Millisecond)
		return 1, false
	}}
	go func() { <-started; cancel() }()
	if err := s.Run(ctx, j); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	s.Cache().Clear()
	waitFree(t, pool)
}

func TestPriorityRunsFirst(t *testing.T) {
	s, _, _ := newTestScheduler(64, 4, Options{MaxRunning: 1})
	defer s.Close()
	// Occupy the single running slot, then queue low before high.
	block := make(chan struct{})
	var order []string
	var mu sync.Mutex
	mark := func(name string) func([]float32) (int32, bool) {
		return func([]float32) (int32, bool) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return 0, true
		}
	}
	first := &Job{Prompt: []int32{1}, Next: func([]float32) (int32, bool) { <-block; return 0, true }}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.Run(context.Background(), first) }()
	time.Sleep(20 * time.Millisecond)
	go func() {
		defer wg.Done()
		s.Run(context.Background(), &Job{Prompt: []int32{2}, Priority: 0, Next: mark("low")})
	}()
	time.Sleep(20 * time.Millisecond)
	go func() {
		defer wg.Done()
		s.Run(context.Background(), &Job{Prompt: []int32{3}, Priority: 5, Next: mark("high")})
	}()
	time.Sleep(20 * time.Millisecond)
	close(block)
	wg.Wait()
	if fmt.Sprint(order) != "[high low]" {
		t.Fatalf("order = %v, want [high low]", order)
	}
}

// spanRunner records, for each step, whether it held tokens of the
// background job (whose prompt starts with an id from bgToken up) and of
// other jobs.
type spanRunner struct {
	*hashRunner
	mu          sync.Mutex
	mixed, bgOn int
	maxBg       int // the most background tokens in one step
	// lastFg is when the last step with request tokens ended; gap the
	// shortest time from such an end to a step with background tokens.
	lastFg time.Time
	gap    time.Duration
	delay  time.Duration // each step sleeps this long
}

const bgToken = 40

func (r *spanRunner) Step(b *model.Batch, rows []int32, out [][]float32) error {
	bg, fg, bgTokens := false, false, 0
	for _, sp := range b.Spans {
		first := b.Tokens[sp.Row] // the sequence's first token
		if sp.Pos > 0 {
			first = r.kv.data[sp.Blocks[0]][0]
		}
		if first >= bgToken {
			bg = true
			bgTokens += sp.N
		} else {
			fg = true
		}
	}
	r.mu.Lock()
	r.maxBg = max(r.maxBg, bgTokens)
	if bg && fg {
		r.mixed++
	}
	if bg {
		r.bgOn++
		if gap := time.Since(r.lastFg); !r.lastFg.IsZero() && (r.gap == 0 || gap < r.gap) {
			r.gap = gap
		}
	}
	r.mu.Unlock()
	time.Sleep(r.delay)
	err := r.hashRunner.Step(b, rows, out)
	if fg {
		r.mu.Lock()
		r.lastFg = time.Now()
		r.mu.Unlock()
	}
	return err
}

// TestBackgroundWaitsForRequests submits a background job together with
// requests and checks that no forward pass holds both, that the
// background job still finishes (and its blocks reach the cache), and
// that a cancelled background job leaves nothing in the cache.
func TestBackgroundWaitsForRequests(t *testing.T) {
	pool := kv.NewPool(128, 4)
	store := newTokenKV(128, 4)
	r := &spanRunner{hashRunner: &hashRunner{kv: store, gate: make(chan struct{})}}
	s := New(r, pool, prefix.New(pool), Options{MaxBatchTokens: 8, BackgroundChunk: 3, BackgroundDelay: 30 * time.Millisecond})
	defer s.Close()
	background := func(first int32) (*Job, []int32) {
		p := make([]int32, 30)
		for i := range p {
			p[i] = bgToken + (first+int32(i))%(vocab-bgToken)
		}
		return &Job{Prompt: p, Namespace: "m", Background: true, Priority: -1,
			Next: func([]float32) (int32, bool) { return 0, true }}, p
	}
	bg, bgPrompt := background(0)
	r.maxBg = 0
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.Run(context.Background(), bg); err != nil {
			t.Error(err)
		}
	}()
	outs := make([][]int32, 3)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := []int32{int32(i + 1), 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
			if err := s.Run(context.Background(), greedyJob(prompt, 12, &outs[i])); err != nil {
				t.Error(err)
			}
			if want := expected(prompt, 12); fmt.Sprint(outs[i]) != fmt.Sprint(want) {
				t.Errorf("request %d: %v, want %v", i, outs[i], want)
			}
		}()
	}
	for { // all four submitted, the first step waiting on the gate
		s.mu.Lock()
		n := s.counter
		s.mu.Unlock()
		if n == 4 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(r.gate)
	wg.Wait()
	if r.gap < 30*time.Millisecond {
		t.Errorf("a background step ran %v after a request's step; the delay is 30ms", r.gap)
	}
	if r.mixed != 0 || r.bgOn == 0 || r.maxBg > 3 {
		t.Errorf("%d steps mixed background and request tokens; the background job ran in %d, up to %d tokens at once (chunk 3)", r.mixed, r.bgOn, r.maxBg)
	}
	m := s.Cache().Lookup("m", bgPrompt)
	s.Cache().Done(m)
	if m.Tokens != 29 {
		t.Errorf("background job left %d of its tokens in the cache, want 29 (all of the 30 but the last, which a lookup leaves)", m.Tokens)
	}

	// A cancelled background job gives the cache nothing.
	s.Cache().Clear()
	ctx, cancel := context.WithCancel(context.Background())
	bg, bgPrompt = background(5)
	started := false
	bg.Next = func([]float32) (int32, bool) { started = true; return 0, true }
	hold, held := make(chan struct{}), make(chan struct{})
	go func() { // keep a request decoding so the background job waits
		defer close(held)
		var out []int32
		j := greedyJob([]int32{1, 2, 3}, 1000, &out)
		next := j.Next
		j.Next = func(l []float32) (int32, bool) {
			select {
			case <-hold:
				return 0, true
			default:
			}
			time.Sleep(time.Millisecond) // far from filling the pool
			return next(l)
		}
		s.Run(context.Background(), j)
	}()
	time.Sleep(5 * time.Millisecond)
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := s.Run(ctx, bg); !errors.Is(err, context.Canceled) || started {
		t.Errorf("cancelled background job: err %v, reached its logits %v", err, started)
	}
	close(hold)
	<-held
	m = s.Cache().Lookup("m", bgPrompt)
	s.Cache().Done(m)
	if m.Tokens != 0 {
		t.Errorf("cancelled background job left %d tokens in the cache", m.Tokens)
	}
	s.Cache().Clear()
	waitFree(t, pool)
}

// TestBackgroundLeavesRequestsRoom checks that queued background jobs never
// keep a request from starting: with more background jobs than MaxRunning
// slots, a request that arrives runs after at most the background pass in
// flight, and no pass carries more background tokens than the chunk.
func TestBackgroundLeavesRequestsRoom(t *testing.T) {
	pool := kv.NewPool(256, 4)
	store := newTokenKV(256, 4)
	r := &spanRunner{hashRunner: &hashRunner{kv: store}, delay: 2 * time.Millisecond}
	s := New(r, pool, prefix.New(pool), Options{MaxBatchTokens: 16, MaxRunning: 2, BackgroundChunk: 3, BackgroundDelay: time.Millisecond})
	defer s.Close()
	var wg sync.WaitGroup
	for k := range 6 {
		p := make([]int32, 30)
		for i := range p {
			p[i] = bgToken + (int32(k*7)+int32(i))%(vocab-bgToken)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := &Job{Prompt: p, Namespace: "m", Background: true, Priority: -1, Next: func([]float32) (int32, bool) { return 0, true }}
			if err := s.Run(context.Background(), j); err != nil {
				t.Error(err)
			}
		}()
	}
	for { // background passes under way
		r.mu.Lock()
		n := r.bgOn
		r.mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	r.mu.Lock()
	before := r.bgOn
	r.mu.Unlock()
	var out []int32
	prompt := []int32{1, 2, 3, 4, 5}
	j := greedyJob(prompt, 4, &out)
	next, passes := j.Next, -1
	j.Next = func(l []float32) (int32, bool) {
		if passes < 0 {
			r.mu.Lock()
			passes = r.bgOn - before
			r.mu.Unlock()
		}
		return next(l)
	}
	if err := s.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if want := expected(prompt, 4); fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("request: %v, want %v", out, want)
	}
	if passes > 1 {
		t.Errorf("the request waited for %d background passes, want at most the one in flight", passes)
	}
	wg.Wait()
	if r.maxBg > 3 {
		t.Errorf("a pass carried %d background tokens, chunk 3", r.maxBg)
	}
	if r.mixed != 0 {
		t.Errorf("%d passes mixed background and request tokens", r.mixed)
	}
	s.Cache().Clear()
	waitFree(t, pool)
}

// TestNextNForcedTokens feeds tokens a job knows without sampling together
// with the sampled one: the logits after them are the ones a token-by-token
// run computes, and they cost no forward pass of their own.
func TestNextNForcedTokens(t *testing.T) {
	prompt := []int32{3, 1, 4, 1, 5}
	// Token by token: the hash model's continuation, where every third
	// token is replaced by a "forced" 7.
	run := func(forcedTogether bool) ([]int32, int) {
		s, _, r := newTestScheduler(64, 4, Options{})
		defer s.Close()
		var got []int32
		j := &Job{Prompt: prompt, Namespace: "m"}
		j.NextN = func(logits []float32, tokens []int32) ([]int32, bool) {
			best := int32(0)
			for i, v := range logits {
				if v > logits[best] {
					best = int32(i)
				}
			}
			got = append(got, best)
			tokens = append(tokens, best)
			if len(got) >= 12 {
				return tokens, true
			}
			if len(got)%3 == 2 { // a forced token follows
				if forcedTogether {
					got = append(got, 7)
					tokens = append(tokens, 7)
				} else {
					// Token by token: the forced token is what the next
					// Next returns, whatever the logits say.
					j.NextN = forceOnce(j.NextN, &got)
				}
			}
			return tokens, false
		}
		if err := s.Run(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		return got, r.steps
	}
	slow, slowSteps := run(false)
	fast, fastSteps := run(true)
	if fmt.Sprint(slow) != fmt.Sprint(fast) {
		t.Fatalf("forced tokens fed together changed the output:\n%v\n%v", slow, fast)
	}
	if fastSteps >= slowSteps {
		t.Errorf("forced tokens took %d forward passes, token by token %d", fastSteps, slowSteps)
	}
}

// forceOnce makes next return 7 once (without looking at the logits), then
// go back to next.
func forceOnce(next func([]float32, []int32) ([]int32, bool), got *[]int32) func([]float32, []int32) ([]int32, bool) {
	used := false
	var self func([]float32, []int32) ([]int32, bool)
	self = func(l []float32, tokens []int32) ([]int32, bool) {
		if !used {
			used = true
			*got = append(*got, 7)
			return append(tokens, 7), false
		}
		return next(l, tokens)
	}
	return self
}

// TestYieldWaitsForRequests: Yield returns at once on an idle scheduler,
// blocks while a request runs and for BackgroundDelay after it, and
// returns the context's error or ErrClosed when those end first.
func TestYieldWaitsForRequests(t *testing.T) {
	const delay = 40 * time.Millisecond
	s, pool, r := newTestScheduler(64, 4, Options{BackgroundDelay: delay})
	ctx := context.Background()
	if err := s.Yield(ctx); err != nil {
		t.Fatalf("idle scheduler: %v", err)
	}
	r.gate = make(chan struct{})
	var out []int32
	done := make(chan time.Time, 1)
	go func() {
		if err := s.Run(ctx, greedyJob([]int32{1, 2, 3}, 4, &out)); err != nil {
			t.Error(err)
		}
		done <- time.Now()
	}()
	for { // the request is queued or running
		s.mu.Lock()
		n := s.counter
		s.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	if err := s.Yield(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Yield while a request waits: %v, want the deadline", err)
	}
	cancel()
	yielded := make(chan time.Time, 1)
	go func() {
		if err := s.Yield(ctx); err != nil {
			t.Error(err)
		}
		yielded <- time.Now()
	}()
	time.Sleep(10 * time.Millisecond)
	close(r.gate)
	finished := <-done
	at := <-yielded
	if gap := at.Sub(finished); gap < delay-5*time.Millisecond {
		t.Errorf("Yield returned %v after the request ended, want ≥ %v", gap, delay)
	}
	s.Cache().Clear()
	waitFree(t, pool)
	go func() { time.Sleep(10 * time.Millisecond); s.Close() }()
	r.gate = nil
	// Closing wakes a Yield that waits for the delay.
	s.mu.Lock()
	s.foregroundAt = time.Now().Add(time.Hour)
	s.mu.Unlock()
	if err := s.Yield(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Yield on a closed scheduler: %v", err)
	}
}

// TestPanickingJobFailsAlone: a job whose Next (or NextN) panics ends with
// an error naming the panic, while a job running beside it finishes with
// the tokens it would alone, the blocks come back, and the scheduler runs
// the next job.
func TestPanickingJobFailsAlone(t *testing.T) {
	for _, viaNextN := range []bool{false, true} {
		s, pool, _ := newTestScheduler(256, 4, Options{})
		var good []int32
		steady := greedyJob([]int32{5, 6, 7, 8}, 12, &good)
		calls := 0
		bad := &Job{Prompt: []int32{1, 2, 3}, Namespace: "m"}
		boom := func() {
			if calls++; calls == 3 {
				var m map[string]int
				m["x"]++ // a nil map write: a runtime panic like a real bug's
			}
		}
		if viaNextN {
			bad.NextN = func(_ []float32, tokens []int32) ([]int32, bool) { boom(); return append(tokens, 1), false }
		} else {
			bad.Next = func([]float32) (int32, bool) { boom(); return 1, false }
		}
		errs := make(chan error, 2)
		go func() { errs <- s.Run(context.Background(), bad) }()
		go func() { errs <- s.Run(context.Background(), steady) }()
		var badErr error
		for range 2 {
			if err := <-errs; err != nil {
				badErr = err
			}
		}
		if badErr == nil || !strings.Contains(badErr.Error(), "nil map") {
			t.Fatalf("NextN %v: the panicking job's error is %v, want the panic's", viaNextN, badErr)
		}
		if want := expected(steady.Prompt, 12); fmt.Sprint(good) != fmt.Sprint(want) {
			t.Fatalf("NextN %v: the job beside it made %v, want %v", viaNextN, good, want)
		}
		var again []int32
		if err := s.Run(context.Background(), greedyJob([]int32{9, 9}, 3, &again)); err != nil || len(again) != 3 {
			t.Fatalf("NextN %v: the next job: %v, %v", viaNextN, again, err)
		}
		s.Cache().Clear()
		waitFree(t, pool)
		s.Close()
	}
}

// TestTenantsShareSlots: while one tenant's streams hold every running
// slot, another tenant's request gets one (a stream of the first is
// preempted and resumes from the prefix cache), and every job still
// generates exactly what it would alone. Without it the second tenant's
// request waited until the streams ended.
func TestTenantsShareSlots(t *testing.T) {
	// Room for the streams to run on while the other tenant waits (a
	// stream that outgrew the pool would end and free its slot).
	s, _, _ := newTestScheduler(1<<14, 4, Options{MaxRunning: 2})
	defer s.Close()
	release := make(chan struct{})
	type result struct {
		out  []int32
		want []int32
		err  error
	}
	results := make(chan result, 3)
	started := make(chan struct{}, 2)
	stream := func(prompt []int32) {
		var out []int32
		j := &Job{Prompt: prompt, Namespace: "m", Tenant: "editor", Next: func(logits []float32) (int32, bool) {
			if len(out) == 0 {
				started <- struct{}{}
			}
			best := int32(0)
			for i, v := range logits {
				if v > logits[best] {
					best = int32(i)
				}
			}
			out = append(out, best)
			if len(out) < 8 {
				return best, false
			}
			select {
			case <-release: // endless until the other tenant was served
				return best, true
			default:
				return best, false
			}
		}}
		err := s.Run(context.Background(), j)
		results <- result{out, expected(prompt, len(out)), err}
	}
	go stream([]int32{1, 2, 3, 4, 5})
	go stream([]int32{6, 7, 8, 9, 10, 11})
	// Both streams hold the two slots once they produce tokens.
	<-started
	<-started
	var out []int32
	done := make(chan error, 1)
	go func() {
		j := greedyJob([]int32{20, 21, 22}, 3, &out)
		j.Tenant = "mail"
		done <- s.Run(context.Background(), j)
	}()
	select {
	case err := <-done:
		if err != nil || !slices.Equal(out, expected([]int32{20, 21, 22}, 3)) {
			t.Fatalf("the other tenant's request: %v %v", out, err)
		}
	case <-time.After(60 * time.Second):
		close(release)
		t.Fatal("the other tenant's request waited for the streams to end")
	}
	close(release)
	for range 2 {
		r := <-results
		if r.err != nil || !slices.Equal(r.out, r.want) {
			t.Fatalf("a preempted stream: %v, want %v (%v)", r.out, r.want, r.err)
		}
	}
}

// feed is what one span of a step fed: its first token and its length.
type feed struct{ first, n int32 }

// steppedRunner is a hashRunner whose every step logs what each span fed
// and then waits for a permit, so that a test can queue requests between
// two given steps.
type steppedRunner struct {
	*hashRunner
	mu      sync.Mutex
	log     [][]feed
	stepped chan struct{} // one value per logged step
	permit  chan struct{} // closed: no more waiting
}

func (r *steppedRunner) Step(b *model.Batch, rows []int32, out [][]float32) error {
	var fs []feed
	for _, sp := range b.Spans {
		fs = append(fs, feed{first: b.Tokens[sp.Row], n: int32(sp.N)})
	}
	r.mu.Lock()
	r.log = append(r.log, fs)
	r.mu.Unlock()
	r.stepped <- struct{}{}
	<-r.permit
	return r.hashRunner.Step(b, rows, out)
}

func (r *steppedRunner) lastStep() []feed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log[len(r.log)-1]
}

// TestShortPromptsDoNotWaitForLongPrefill: a short prompt that arrives
// while a long one prefills is fed whole in the next step (it waited for
// the long prompt's whole prefill, chunk after chunk: seconds to tens of
// seconds of a first token behind a pasted document), and the long
// prompt, the oldest, keeps at least half of every step's budget however
// many short prompts arrive.
func TestShortPromptsDoNotWaitForLongPrefill(t *testing.T) {
	const budget = 64
	tests := []struct {
		name   string
		shorts []int // prompt lengths queued during the long prompt's first step
		want   []feed
	}{
		{name: "one short prompt", shorts: []int{10}, want: []feed{{2, 10}, {1, budget - 10}}},
		{name: "shorts beyond the budget", shorts: []int{30, 31, 33}, want: []feed{{2, 30}, {3, 2}, {1, budget / 2}}},
		{name: "shortest first", shorts: []int{20, 6}, want: []feed{{3, 6}, {2, 20}, {1, budget - 26}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := kv.NewPool(512, 4)
			r := &steppedRunner{hashRunner: &hashRunner{kv: newTokenKV(512, 4)},
				stepped: make(chan struct{}, 1024), permit: make(chan struct{})}
			s := New(r, pool, prefix.New(pool), Options{MaxBatchTokens: budget, MaxRunning: 8})
			defer s.Close()
			var wg sync.WaitGroup
			run := func(first int32, n int) {
				prompt := make([]int32, n)
				for i := range prompt {
					prompt[i] = first
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s.Run(context.Background(), &Job{Prompt: prompt, Next: func([]float32) (int32, bool) { return 0, true }}); err != nil {
						t.Error(err)
					}
				}()
			}
			run(1, 640)
			<-r.stepped // the long prompt's first chunk, held
			if got := r.lastStep(); len(got) != 1 || got[0] != (feed{1, budget}) {
				t.Fatalf("first step fed %v, want the long prompt's first %d tokens", got, budget)
			}
			for i, n := range tt.shorts {
				run(int32(2+i), n)
			}
			for {
				s.mu.Lock()
				queued := len(s.queue)
				s.mu.Unlock()
				if queued == len(tt.shorts) {
					break
				}
				runtime.Gosched()
			}
			r.permit <- struct{}{}
			<-r.stepped
			if got := r.lastStep(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("the step after the short prompts arrived fed %v, want %v", got, tt.want)
			}
			close(r.permit)
			wg.Wait()
		})
	}
}

// TestMaxQueueRefusesWhenFull: with MaxQueue requests waiting, one more
// is refused with ErrBusy at once (1,500 concurrent requests were all
// queued, without bound); a background job is not, and once the queue
// drains requests are taken again.
func TestMaxQueueRefusesWhenFull(t *testing.T) {
	pool := kv.NewPool(256, 4)
	r := &hashRunner{kv: newTokenKV(256, 4), gate: make(chan struct{})}
	s := New(r, pool, prefix.New(pool), Options{MaxRunning: 1, MaxQueue: 2})
	defer s.Close()
	job := func(tok int32, bg bool) *Job {
		return &Job{Prompt: []int32{tok, tok}, Background: bg, Next: func([]float32) (int32, bool) { return 0, true }}
	}
	errs := make(chan error, 4)
	run := func(j *Job) { go func() { errs <- s.Run(context.Background(), j) }() }
	waitQueued := func(n int) {
		for {
			s.mu.Lock()
			q := len(s.queue)
			s.mu.Unlock()
			if q == n {
				return
			}
			runtime.Gosched()
		}
	}
	run(job(1, false)) // runs, held at the gate
	for {
		s.mu.Lock()
		running := s.foreground // as Run sees it
		s.mu.Unlock()
		if running == 1 {
			break
		}
		runtime.Gosched()
	}
	run(job(2, false))
	run(job(3, false))
	waitQueued(2)
	if err := s.Run(context.Background(), job(4, false)); !errors.Is(err, ErrBusy) {
		t.Fatalf("a request past the queue: %v, want ErrBusy", err)
	}
	run(job(5, true)) // background work is not refused
	waitQueued(3)
	close(r.gate)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(context.Background(), job(6, false)); err != nil {
		t.Fatalf("after the queue drained: %v", err)
	}
}

// TestMaxQueueCountsOnlyRequestsBeyondFreeSlots: requests that arrive
// together wait in the queue for the loop's next admission; those that
// free MaxRunning slots will take are not the "waiting" MaxQueue bounds.
// With 3 slots free and MaxQueue 1, a burst of 4 is taken and a fifth is
// refused; the burst's second request was refused with ErrBusy, though
// the model would have run it at once.
func TestMaxQueueCountsOnlyRequestsBeyondFreeSlots(t *testing.T) {
	pool := kv.NewPool(256, 4)
	r := &hashRunner{kv: newTokenKV(256, 4), gate: make(chan struct{})}
	s := New(r, pool, prefix.New(pool), Options{MaxRunning: 4, MaxQueue: 1})
	defer s.Close()
	job := func(tok int32) *Job {
		return &Job{Prompt: []int32{tok, tok}, Next: func([]float32) (int32, bool) { return 0, true }}
	}
	errs := make(chan error, 6)
	run := func(j *Job) { go func() { errs <- s.Run(context.Background(), j) }() }
	// One request runs, holding the loop inside its step at the gate: the
	// burst's requests stay queued until the gate opens.
	run(job(1))
	for {
		s.mu.Lock()
		fg := s.foreground
		s.mu.Unlock()
		if fg == 1 {
			break
		}
		runtime.Gosched()
	}
	for tok := int32(2); tok <= 5; tok++ {
		run(job(tok))
	}
	for { // each of the burst is queued or has its answer
		s.mu.Lock()
		q := len(s.queue)
		s.mu.Unlock()
		if q+len(errs) == 4 {
			break
		}
		runtime.Gosched()
	}
	if len(errs) > 0 {
		t.Fatalf("a burst of 4 with 3 slots free and MaxQueue 1: %v; want all taken", <-errs)
	}
	if err := s.Run(context.Background(), job(6)); !errors.Is(err, ErrBusy) {
		t.Fatalf("a fifth request (3 to be admitted, 1 waiting): %v, want ErrBusy", err)
	}
	close(r.gate)
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
