// Package sched is continuous batching: one goroutine owns the forward
// pass and, step after step, runs every admitted sequence in one batch —
// one token for each sequence that is decoding, and a chunk of prompt for
// those still prefilling — so new requests join between decode steps and
// long prompts never stall running streams. It takes cached prefixes from
// engine/prefix on admission, gives finished sequences' blocks back to it,
// honours priorities and cancellation, and when the KV pool runs short it
// evicts cached prefixes and then preempts the lowest-priority sequence,
// which is recomputed later: it never fails a request for lack of memory
// while another could give way.
package sched

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/kv"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/model"
	"github.com/ruvllm/ruvllm/engine/prefix"
	"github.com/ruvllm/ruvllm/engine/spec"
)

// ErrClosed is returned for jobs submitted to, or running in, a closed
// scheduler.
var ErrClosed = errors.New("scheduler closed")

// ErrBusy is returned for a request submitted while Options.MaxQueue
// requests already wait (Ollama's "server busy" past OLLAMA_MAX_QUEUE).
var ErrBusy = errors.New("too many requests are waiting: the server is busy, try again")

// ErrTooLarge is returned for a job that could not fit the KV pool even
// if it ran alone.
var ErrTooLarge = errors.New("sequence does not fit the KV cache")

// Runner is the forward pass the scheduler drives.
type Runner interface {
	// Step runs batch and copies the logits of the given batch rows into
	// out (one slice of Vocab floats per row).
	Step(batch *model.Batch, rows []int32, out [][]float32) error
	// Vocab is the number of logits per row.
	Vocab() int
	// KV is the device memory the pool's blocks index.
	KV() compute.KVStore
}

// Job is one sequence to run. The scheduler calls Next from its own
// goroutine after the prompt and after every generated token; Next returns
// the token to feed next, or done.
type Job struct {
	// Prompt is the sequence's token ids; it must not be empty.
	Prompt []int32
	// Namespace partitions the prefix cache (model + adapters + scales);
	// empty disables the cache for this job.
	Namespace string
	// Priority: higher runs first and is preempted last.
	Priority int
	// Tenant is who the job runs for (an app): while a request of a tenant
	// that runs nothing waits for a slot, a tenant holding several slots
	// gives one up (shareSlots), so that one app's streams cannot keep
	// every other app waiting. Empty: not counted.
	Tenant string
	// Background jobs run only once no other job has had tokens to run
	// for Options.BackgroundDelay, one at a time, in short chunks
	// (Options.BackgroundChunk): work done ahead (warming a chat's next
	// turn) delays a request by one short pass at most, never holds a
	// request out of a MaxRunning slot, and pauses, keeping its blocks,
	// while requests run.
	Background bool
	// Adapters are the LoRA adapters (with scales) applied to this
	// sequence's tokens; the Namespace must distinguish them.
	Adapters []lora.Applied
	// Next receives the logits for the last fed token.
	Next func(logits []float32) (token int32, done bool)
	// OnPrefilled, when set, is called (from the scheduler's goroutine)
	// once the whole prompt has been computed, right after its full blocks
	// were offered to the prefix cache: sequences forked from this prompt
	// (n > 1 choices) started then find it cached.
	OnPrefilled func()
	// NextN, when set, is used instead of Next: it appends to tokens the
	// tokens to feed next — the one it sampled and any that are known to
	// follow it without sampling (a grammar allows only one token) — and
	// returns them. The next forward pass computes them together, like a
	// chunk of prompt, with logits for the last one only: a forced token
	// costs no pass of its own.
	NextN func(logits []float32, tokens []int32) ([]int32, bool)

	// CachedTokens is set before the first Next: prompt tokens reused
	// from the prefix cache.
	CachedTokens int
	// Admitted is when the job left the queue for the running set, and
	// Prefilled when the forward pass that computed its last prompt token
	// ended, after PrefillSteps passes with its prompt in them (set before
	// the first Next; read them once Run returned).
	Admitted, Prefilled time.Time
	PrefillSteps        int
	// Speculate selects the speculation kinds the job may use (zero:
	// none) where the scheduler has Options.Speculation.
	Speculate spec.Kinds
	// Spec is the job's speculation state; its counters (verified draft
	// tokens, accepted ones, verifications) may be read after Run.
	Spec spec.Seq
	// Prediction is the output the client expects, or most of it (OpenAI's
	// predicted outputs: a file to edit, a reply to regenerate): prompt
	// lookup drafts from it first (spec.SrcPrediction). It changes how
	// fast the output comes, never what it is.
	Prediction []int32

	ctx      context.Context
	err      error
	done     chan struct{}
	seq      *kv.Sequence
	tokens   []int32 // everything fed or to feed: prompt, then generated
	fed      int     // tokens whose keys and values are stored
	order    uint64  // admission order, for FIFO among equal priorities
	finished bool
	// prefilled: OnPrefilled was called.
	prefilled bool

	// speculation (spec.go)
	draft            spec.Draft
	predBuf          []int32    // the prediction and the sequence's tail (spec.Lookup.ProposePrediction)
	predAlt          spec.Draft // the prediction's draft, weighed against the sequence's own
	tree             []int32    // the verification span's tree
	path             []int32
	moveDst, moveSrc []int
}

// Options configures a Scheduler.
type Options struct {
	// MaxBatchTokens bounds the tokens of one forward pass (prefill chunk
	// size plus decode tokens). Default 512.
	MaxBatchTokens int
	// MaxRunning bounds the requests decoding together (a background
	// job takes a free slot only when no request waits). Default 16.
	MaxRunning int
	// BackgroundChunk bounds the background tokens of one forward pass
	// (default 16), so that a request arriving meanwhile waits for at
	// most that short a pass.
	BackgroundChunk int
	// BackgroundDelay is how long the scheduler must have had no other
	// work before background jobs run (default 50ms): requests that come
	// back to back (benchmarks, an app's burst) never share the machine
	// with work done ahead.
	BackgroundDelay time.Duration
	// MaxSeqLen is the longest sequence (context length).
	MaxSeqLen int
	// MaxQueue bounds the requests waiting to run (0: no bound), beyond
	// those the next admission takes into free MaxRunning slots; one more
	// fails with ErrBusy. Background jobs are not counted nor refused.
	MaxQueue int
	// Speculation, when set, enables speculative decoding for jobs that
	// ask for it (Job.Speculate).
	Speculation *Speculation
	// HotWindow is how many of a sequence's latest positions stay in the
	// hot tier where the pool has a cold one (default 256): after each
	// step, the full blocks before them move to the cold tier
	// (kv.Sequence.Demote), and a finished sequence's blocks move there
	// before the prefix cache takes them.
	HotWindow int
	Logger    *slog.Logger
	// CostClock measures what speculation's cost model and guard weigh
	// (nil: wall time). The engine passes the process's CPU time: on a
	// machine whose cores other processes keep busy, wall times swing
	// several-fold from step to step while the work done does not.
	CostClock func() time.Duration
}

// Scheduler runs jobs with continuous batching.
type Scheduler struct {
	run   Runner
	pool  *kv.Pool
	cache *prefix.Cache
	o     Options
	log   *slog.Logger

	mu      sync.Mutex
	queue   []*Job // waiting for admission
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
	counter uint64
	// foreground is how many requests (not background jobs) were running
	// when the loop last looked, foregroundAt when one last was, and
	// idle is closed (and replaced) each time their number drops to 0:
	// Yield waits on them.
	foreground   int
	foregroundAt time.Time
	idle         chan struct{}

	// owned by the loop goroutine
	running []*Job
	// draftFailing is set while draft model passes fail (logged once).
	draftFailing bool
	busyAt       time.Time // when a step last ran tokens of a job not in the background
	logits       [][]float32
	sb           stepBuffers

	// speculation (spec.go): the controller and drafters are the loop's
	spec       *Speculation
	ctl        *spec.Controller
	tree       bool // the runner verifies trees
	specSeqs   []*spec.Seq
	specDrafts []*spec.Draft
	specReqs   []spec.Request
	specStats  specCounters
	now        func() time.Duration // the clock steps are timed with (Options.CostClock)
}

// stepBuffers is what step builds a batch in, kept between steps so a
// decode step allocates nothing.
type stepBuffers struct {
	batch    model.Batch
	rows     []int32
	jobs     []*Job // the running jobs when the step began
	owners   []owner
	spanJobs []*Job
	adapters [][]lora.Applied
	inBatch  map[*Job]bool
}

// owner is a job that gets logits in a step: rows [first, first+n) of
// the step's logits, n > 1 when it verifies a draft in span span.
type owner struct {
	j              *Job
	first, n, span int
}

// reset empties the buffers, keeping their storage but dropping the
// references they hold.
func (b *stepBuffers) reset() {
	clear(b.jobs)
	clear(b.owners)
	clear(b.spanJobs)
	clear(b.adapters)
	clear(b.batch.Spans)
	b.batch = model.Batch{Tokens: b.batch.Tokens[:0], Spans: b.batch.Spans[:0]}
	b.rows, b.jobs, b.owners, b.spanJobs, b.adapters = b.rows[:0], b.jobs[:0], b.owners[:0], b.spanJobs[:0], b.adapters[:0]
	if b.inBatch == nil {
		b.inBatch = map[*Job]bool{}
	}
	clear(b.inBatch)
}

// New starts a scheduler over r, drawing KV blocks from pool and sharing
// prefixes through cache (nil disables prefix caching).
func New(r Runner, pool *kv.Pool, cache *prefix.Cache, o Options) *Scheduler {
	if o.MaxBatchTokens <= 0 {
		o.MaxBatchTokens = 512
	}
	if o.MaxRunning <= 0 {
		o.MaxRunning = 16
	}
	if o.BackgroundChunk <= 0 {
		o.BackgroundChunk = 16
	}
	if o.BackgroundDelay <= 0 {
		o.BackgroundDelay = 50 * time.Millisecond
	}
	if o.HotWindow <= 0 {
		o.HotWindow = 256
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{run: r, pool: pool, cache: cache, o: o, log: o.Logger,
		wake: make(chan struct{}, 1), stopped: make(chan struct{}), idle: make(chan struct{}), now: o.CostClock}
	if s.now == nil {
		base := time.Now()
		s.now = func() time.Duration { return time.Since(base) }
	}
	if o.Speculation != nil {
		s.spec = o.Speculation
		s.ctl = spec.NewController(o.Speculation.Control)
		s.tree = s.treeCapable()
		if d := s.spec.Drafter; d != nil && d.Timing == nil {
			d.Timing, d.Clock = s.ctl.DraftTime, s.now
		}
	}
	go s.loop()
	return s
}

// Run submits j and waits until it finishes, fails, or ctx is cancelled;
// cancellation frees the job's blocks before the next forward pass. Once
// Run has returned, j may run again, with a new Prompt (a context shift
// goes on from the shifted context).
func (s *Scheduler) Run(ctx context.Context, j *Job) error {
	if len(j.Prompt) == 0 {
		return errors.New("empty prompt")
	}
	if s.o.MaxSeqLen > 0 && len(j.Prompt) > s.o.MaxSeqLen {
		return fmt.Errorf("%w: prompt of %d tokens, context is %d", ErrTooLarge, len(j.Prompt), s.o.MaxSeqLen)
	}
	j.ctx = ctx
	j.done = make(chan struct{})
	j.finished, j.prefilled, j.err = false, false, nil
	j.tokens = append([]int32(nil), j.Prompt...)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.o.MaxQueue > 0 && !j.Background && s.waiting() >= s.o.MaxQueue+s.freeSlots() {
		s.mu.Unlock()
		return ErrBusy
	}
	s.counter++
	j.order = s.counter
	s.queue = append(s.queue, j)
	s.mu.Unlock()
	s.poke()
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
		s.poke() // let the loop notice and free the job at once
		<-j.done
		return ctx.Err()
	}
}

// freeSlots is how many queued requests the loop's next admission takes
// without any waiting for a slot: MaxRunning less the requests running
// when it last looked. Requests of a burst are queued until that step,
// and MaxQueue bounds those that wait beyond them: counted alone, a burst
// of MaxQueue+1 requests to an idle model was refused though all would
// have run at once. The caller holds s.mu.
func (s *Scheduler) freeSlots() int { return max(s.o.MaxRunning-s.foreground, 0) }

// waiting counts the queued requests (not background jobs); the caller
// holds s.mu.
func (s *Scheduler) waiting() int {
	n := 0
	for _, q := range s.queue {
		if !q.Background {
			n++
		}
	}
	return n
}

// Close stops the loop; running and queued jobs end with ErrClosed.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.idle) // wake Yield
	s.idle = make(chan struct{})
	s.mu.Unlock()
	s.poke()
	<-s.stopped
}

// Cache returns the prefix cache (nil when disabled).
func (s *Scheduler) Cache() *prefix.Cache { return s.cache }

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) loop() {
	defer close(s.stopped)
	for {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			s.failAll(ErrClosed)
			return
		}
		s.reap()
		s.shareSlots()
		s.admit()
		s.publish()
		if len(s.running) == 0 {
			<-s.wake
			continue
		}
		if wait := s.backgroundWait(); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if err := s.step(); err != nil {
			s.log.Error("forward pass failed", "err", err)
			for _, j := range s.running {
				s.finish(j, err)
			}
			s.running = s.running[:0]
		}
	}
}

// publish records how many requests are running, for Yield.
func (s *Scheduler) publish() {
	fg := 0
	for _, j := range s.running {
		if !j.Background {
			fg++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fg > 0 {
		s.foregroundAt = time.Now()
	} else if s.foreground > 0 {
		s.foregroundAt = time.Now()
		close(s.idle)
		s.idle = make(chan struct{})
	}
	s.foreground = fg
}

// Yield blocks while the scheduler has requests running or queued, and
// until none has run for Options.BackgroundDelay; then it returns nil.
// Work outside the scheduler's own loop that must not slow serving down
// (training) calls it between its steps: requests keep priority, and
// the work resumes once they have been idle as long as background jobs
// wait. It returns ctx's error when ctx ends first and ErrClosed once
// the scheduler is closed.
func (s *Scheduler) Yield(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		busy := s.foreground > 0
		for _, j := range s.queue {
			busy = busy || !j.Background
		}
		wait := s.o.BackgroundDelay - time.Since(s.foregroundAt)
		idle := s.idle
		s.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		if !busy && wait <= 0 {
			return nil
		}
		// Busy: the loop signals when the last request ends, and a
		// request queued meanwhile is seen at the next look.
		if busy {
			wait = s.o.BackgroundDelay
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-idle:
		case <-t.C:
		}
		t.Stop()
	}
}

// backgroundWait returns how long to wait before a step, when only
// background jobs are running and other work ran too recently.
func (s *Scheduler) backgroundWait() time.Duration {
	for _, j := range s.running {
		if !j.Background {
			return 0
		}
	}
	return s.o.BackgroundDelay - time.Since(s.busyAt)
}

// reap ends cancelled jobs, running or queued.
func (s *Scheduler) reap() {
	keep := s.running[:0]
	for _, j := range s.running {
		if err := j.ctx.Err(); err != nil {
			s.finish(j, err)
			continue
		}
		keep = append(keep, j)
	}
	s.running = keep
	s.mu.Lock()
	q := s.queue[:0]
	var dead []*Job
	for _, j := range s.queue {
		if j.ctx.Err() != nil {
			dead = append(dead, j)
			continue
		}
		q = append(q, j)
	}
	s.queue = q
	s.mu.Unlock()
	for _, j := range dead {
		s.finish(j, j.ctx.Err())
	}
}

// admit moves queued jobs into the running set, highest priority first,
// while there is room.
func (s *Scheduler) admit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.SortStableFunc(s.queue, byPriority)
	// Requests count against MaxRunning among themselves: background jobs
	// never keep a request waiting for a slot. A background job is
	// admitted only when no request waits, and one at a time, so that a
	// background pass stays short.
	requests, background := 0, 0
	for _, j := range s.running {
		if j.Background {
			background++
		} else {
			requests++
		}
	}
	waiting := false
	q := s.queue[:0]
	for _, j := range s.queue {
		if j.Background || waiting || requests >= s.o.MaxRunning || !s.admitOne(j) {
			waiting = waiting || !j.Background
			q = append(q, j)
			continue
		}
		requests++
	}
	clear(s.queue[len(q):]) // do not keep admitted jobs alive
	s.queue = q
	if waiting || background > 0 || len(s.running) >= s.o.MaxRunning {
		return
	}
	for i, j := range s.queue {
		if j.Background {
			if s.admitOne(j) {
				s.queue = slices.Delete(s.queue, i, i+1)
			}
			return
		}
	}
}

// shareSlots preempts one running request of the tenant holding the most
// slots (at least two) when every slot is taken and a request of a tenant
// that runs nothing waits, with a priority at least the preempted one's.
// The preempted job keeps its tokens: its blocks go to the prefix cache
// and it resumes from them when it is admitted again, so only the wait is
// shared. Without it, an app's endless streams held every MaxRunning
// slot and another app's five-token request waited for ever.
func (s *Scheduler) shareSlots() {
	// Once a step, so nothing is counted or allocated unless every slot
	// is taken and a request waits.
	requests := 0
	for _, j := range s.running {
		if !j.Background {
			requests++
		}
	}
	if requests < s.o.MaxRunning {
		return // a slot is free: admit takes the queue in order
	}
	s.mu.Lock()
	waiting := slices.ContainsFunc(s.queue, func(j *Job) bool { return !j.Background && j.Tenant != "" })
	s.mu.Unlock()
	if !waiting {
		return
	}
	held := map[string]int{}
	for _, j := range s.running {
		if !j.Background && j.Tenant != "" {
			held[j.Tenant]++
		}
	}
	s.mu.Lock()
	var starving *Job
	for _, j := range s.queue {
		if j.Background || j.Tenant == "" || held[j.Tenant] > 0 {
			continue
		}
		if starving == nil || byPriority(j, starving) < 0 {
			starving = j
		}
	}
	s.mu.Unlock()
	if starving == nil {
		return
	}
	top := ""
	for t, n := range held {
		if n >= 2 && (top == "" || n > held[top] || n == held[top] && t < top) {
			top = t
		}
	}
	if top == "" {
		return
	}
	var v *Job
	for _, r := range s.running {
		if r.Background || r.Tenant != top || r.seq == nil || r.Priority > starving.Priority {
			continue
		}
		if v == nil || r.Priority < v.Priority || (r.Priority == v.Priority && r.order > v.order) {
			v = r
		}
	}
	if v == nil {
		return
	}
	s.log.Debug("sharing a slot", "from", top, "to", starving.Tenant)
	s.preempt(v)
	// The freed slot goes to the waiting tenant, not back to the job
	// preempted for it (admitted earlier, it would sort first).
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.queue, starving); i >= 0 && s.admitOne(starving) {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// admitOne moves queued job j to running, with the longest cached prefix
// of its prompt, and reports whether it did: it does not when the pool
// cannot hold the prompt's first chunk even after evicting cached
// prefixes, so a full pool queues work instead of thrashing.
func (s *Scheduler) admitOne(j *Job) bool {
	need := s.blocksFor(min(len(j.tokens), s.o.MaxBatchTokens))
	if len(s.running) > 0 && s.pool.Free() < need {
		if s.cache == nil || s.cache.Evict(need) == 0 {
			return false
		}
	}
	j.seq = kv.NewSequence(s.pool)
	j.fed = 0
	if j.Admitted.IsZero() {
		j.Admitted = time.Now()
	}
	if s.cache != nil && j.Namespace != "" {
		m := s.cache.Lookup(j.Namespace, j.tokens)
		j.seq.Adopt(m.Blocks, m.Tokens)
		s.cache.Done(m)
		j.fed = m.Tokens
		if j.CachedTokens == 0 {
			j.CachedTokens = m.Tokens
		}
	}
	s.running = append(s.running, j)
	return true
}

// byPriority orders jobs by descending priority, then by admission.
func byPriority(a, b *Job) int {
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	return cmp.Compare(a.order, b.order)
}

// oldestPrefill is the foreground job still prefilling (more than one
// pending token) that comes first by priority and arrival, or nil: the
// one whose share of each step's budget shorter prompts leave it.
func (s *Scheduler) oldestPrefill() *Job {
	var o *Job
	for _, j := range s.running {
		if j.Background || j.seq == nil || j.finished || s.pending(j) <= 1 {
			continue
		}
		if o == nil || byPriority(j, o) < 0 {
			o = j
		}
	}
	return o
}

func (s *Scheduler) blocksFor(n int) int { return (n + s.pool.BlockSize() - 1) / s.pool.BlockSize() }

// step builds one batch from the running jobs and runs it.
func (s *Scheduler) step() error {
	// Decoding jobs (one pending token) go first so streams keep flowing;
	// prefilling jobs share what is left of the token budget, those of
	// the same priority shortest first: a short prompt's first token
	// does not wait for a long prompt's whole prefill (a "hi" behind a
	// document waited tens of seconds), while the oldest prefilling job
	// keeps at least half the budget (oldestPrefill), so that a stream of
	// short prompts cannot starve it.
	slices.SortStableFunc(s.running, func(a, b *Job) int {
		pa, pb := s.pending(a), s.pending(b)
		da, db := pa == 1, pb == 1
		if da != db {
			if da {
				return -1
			}
			return 1
		}
		if a.Priority != b.Priority || da || pa == pb {
			return byPriority(a, b)
		}
		return cmp.Compare(pa, pb)
	})
	sb := &s.sb
	sb.reset()
	defer sb.reset()
	batch, rows, owners, spanJobs, adapters, inBatch := &sb.batch, sb.rows, sb.owners, sb.spanJobs, sb.adapters, sb.inBatch
	withAdapters := false
	budget, bgBudget := s.o.MaxBatchTokens, s.o.BackgroundChunk
	foreground := false
	for _, j := range s.running {
		if !j.Background && s.pending(j) > 0 {
			foreground = true
			break
		}
	}
	if foreground {
		defer func() { s.busyAt = time.Now() }()
	}
	sb.jobs = append(sb.jobs, s.running...) // reserve may preempt, editing s.running
	stepStart := s.now()
	guard := s.planDrafts(sb.jobs)
	oldest := s.oldestPrefill()
	for _, j := range sb.jobs {
		if j.seq == nil || j.finished { // preempted or failed while making room
			continue
		}
		if j.Background && foreground {
			continue
		}
		n := min(s.pending(j), budget)
		// A prefilling job that goes before the oldest (shorter) leaves
		// it its share, and never preempts to make room.
		ahead := oldest != nil && j != oldest && n > 1
		if ahead {
			n = min(n, budget-min(s.pending(oldest), s.o.MaxBatchTokens/2))
		}
		if j == oldest {
			oldest = nil
		}
		if j.Background {
			n = min(n, bgBudget)
			bgBudget -= n
		}
		if n <= 0 {
			continue
		}
		drafted := j.draft.Len()
		if drafted > 0 && (n != 1 || 1+drafted > budget) {
			j.draft.Reset()
			drafted = 0
		}
		if drafted > 0 {
			// Room for the draft too, from free blocks only: a guess
			// never evicts a cached prefix or preempts a sequence.
			if err := j.seq.Reserve(1+drafted, s.run.KV()); err != nil {
				j.draft.Reset()
				drafted = 0
			}
		}
		if drafted == 0 {
			if err := s.reserve(j, n, inBatch, !ahead); err != nil {
				if ahead {
					continue // the pool is full: the older jobs' turn
				}
				if errors.Is(err, ErrTooLarge) {
					j.finished, j.err = true, err
					continue
				}
				break // pool held by jobs with higher priority: wait for them
			}
		}
		inBatch[j] = true
		row := len(batch.Tokens)
		batch.Tokens = append(batch.Tokens, j.tokens[j.fed:j.fed+n]...)
		sp := compute.Span{Row: row, N: n, Pos: j.fed, Blocks: j.seq.Blocks()}
		if drafted > 0 {
			batch.Tokens = append(batch.Tokens, j.draft.Tokens...)
			sp.N, sp.Tree = 1+drafted, s.draftSpan(j)
			n = sp.N
			owners = append(owners, owner{j: j, first: len(rows), n: n, span: len(batch.Spans)})
			for i := range n {
				rows = append(rows, int32(row+i))
			}
		} else if j.fed+n == len(j.tokens) { // the job's last pending token: it needs logits
			owners = append(owners, owner{j: j, first: len(rows), n: 1, span: len(batch.Spans)})
			rows = append(rows, int32(row+n-1))
		}
		batch.Spans = append(batch.Spans, sp)
		spanJobs = append(spanJobs, j)
		adapters = append(adapters, j.Adapters)
		withAdapters = withAdapters || len(j.Adapters) > 0
		budget -= n
		if budget == 0 {
			break
		}
	}
	// Keep what the appends grew for the next step.
	sb.rows, sb.owners, sb.spanJobs, sb.adapters = rows, owners, spanJobs, adapters
	if withAdapters { // a batch without adapters leaves the model's fast path alone
		batch.Adapters = adapters
	}
	if len(batch.Tokens) > 0 {
		for len(s.logits) < len(rows) {
			s.logits = append(s.logits, make([]float32, s.run.Vocab()))
		}
		start := s.now()
		if err := s.run.Step(batch, rows, s.logits[:len(rows)]); err != nil {
			return err
		}
		now := time.Now()
		s.timeStep(len(batch.Tokens), len(rows), s.now()-start)
		for i, sp := range batch.Spans {
			j := spanJobs[i]
			fed := sp.N
			if j.draft.Len() > 0 {
				fed = 1 // the pending token, which may be the prompt's last
			}
			if j.Prefilled.IsZero() {
				j.PrefillSteps++
				if j.fed+fed >= len(j.Prompt) {
					j.Prefilled = now
				}
			}
			if j.draft.Len() > 0 {
				continue // acceptDraft advances it by what it keeps
			}
			j.seq.Advance(sp.N)
			j.fed += sp.N
			s.demote(j, s.o.HotWindow)
			s.notePrefilled(j)
		}
		start, calls, verified := s.now(), 0, 0
		for _, j := range spanJobs {
			verified += j.draft.Len()
		}
		for _, o := range owners {
			j := o.j
			if j.draft.Len() > 0 {
				calls += s.acceptDraft(j, batch.Spans[o.span], s.logits[o.first:o.first+o.n])
				continue
			}
			calls++
			if j.NextN != nil {
				n := len(j.tokens)
				var done bool
				j.tokens, done = s.nextN(j, s.logits[o.first])
				if done || len(j.tokens) == n || (s.o.MaxSeqLen > 0 && len(j.tokens) > s.o.MaxSeqLen) {
					j.tokens = j.tokens[:n]
					j.finished = true
				}
				continue
			}
			tok, done := s.next(j, s.logits[o.first])
			if done || (s.o.MaxSeqLen > 0 && len(j.tokens) >= s.o.MaxSeqLen) {
				j.finished = true
				continue
			}
			j.tokens = append(j.tokens, tok)
		}
		if s.ctl != nil {
			now := s.now()
			s.ctl.NextTime(calls, now-start)
			if len(rows) == len(batch.Tokens) {
				guard.done(s.ctl, calls, verified, now-stepStart)
			}
		}
		for _, j := range spanJobs {
			j.draft.Reset()
		}
	}
	keep := s.running[:0]
	for _, j := range s.running {
		if j.finished {
			s.finish(j, j.err)
			continue
		}
		keep = append(keep, j)
	}
	s.running = keep
	return nil
}

func (s *Scheduler) pending(j *Job) int { return len(j.tokens) - j.fed }

// reserve finds blocks for n more tokens of j: from the free list, then by
// evicting cached prefixes, then, when preempt is set, by preempting
// lower-priority jobs. Jobs already in the batch being built are never
// preempted.
func (s *Scheduler) reserve(j *Job, n int, inBatch map[*Job]bool, preempt bool) error {
	for {
		err := j.seq.Reserve(n, s.run.KV())
		if err == nil {
			return nil
		}
		if !errors.Is(err, kv.ErrPoolExhausted) {
			return err
		}
		need := s.blocksFor(j.fed+n) - len(j.seq.Blocks()) + 1
		if s.cache != nil && s.cache.Evict(need) > 0 {
			continue
		}
		var victim *Job
		if preempt {
			victim = s.victim(j, inBatch)
		}
		if victim == nil {
			if !s.anyOtherHolds(j) {
				return fmt.Errorf("%w: %d tokens", ErrTooLarge, j.fed+n)
			}
			return err
		}
		s.preempt(victim)
	}
}

// anyOtherHolds reports whether a running job other than j holds blocks.
func (s *Scheduler) anyOtherHolds(j *Job) bool {
	for _, r := range s.running {
		if r != j && r.seq != nil && len(r.seq.Blocks()) > 0 {
			return true
		}
	}
	return false
}

// victim picks the running job to preempt for j: the lowest priority,
// latest admitted one other than j, if its priority is not above j's.
func (s *Scheduler) victim(j *Job, inBatch map[*Job]bool) *Job {
	var v *Job
	for _, r := range s.running {
		if r == j || r.seq == nil || inBatch[r] || r.Priority > j.Priority {
			continue
		}
		if v == nil || r.Priority < v.Priority || (r.Priority == v.Priority && r.order > v.order) {
			v = r
		}
	}
	return v
}

// preempt frees a job's blocks (offering them to the prefix cache first)
// and puts it back in the queue; it will recompute its tokens.
func (s *Scheduler) preempt(j *Job) {
	s.log.Debug("preempting sequence", "tokens", j.fed, "priority", j.Priority)
	s.release(j)
	for i, r := range s.running {
		if r == j {
			s.running = append(s.running[:i], s.running[i+1:]...)
			break
		}
	}
	s.mu.Lock()
	s.queue = append(s.queue, j)
	s.mu.Unlock()
}

// notePrefilled, once j's prompt is computed, puts its blocks in the
// prefix cache and calls OnPrefilled (once).
func (s *Scheduler) notePrefilled(j *Job) {
	if j.OnPrefilled == nil || j.prefilled || j.fed < len(j.Prompt) {
		return
	}
	j.prefilled = true
	if s.cache != nil && j.Namespace != "" {
		s.cache.Insert(j.Namespace, j.tokens[:len(j.Prompt)], j.seq.Blocks())
	}
	j.OnPrefilled()
}

// release gives j's computed blocks to the prefix cache and frees its hold.
// A cancelled background job gives nothing: it was cancelled because its
// work is no longer wanted (the cache was cleared).
func (s *Scheduler) release(j *Job) {
	if j.seq == nil {
		return
	}
	if s.cache != nil && j.Namespace != "" && j.fed > 0 && !(j.Background && j.ctx.Err() != nil) {
		s.demote(j, 0) // cached prefixes keep their full blocks cold
		s.cache.Insert(j.Namespace, j.tokens[:j.fed], j.seq.Blocks())
	}
	s.forgetDraft(j)
	j.seq.Release()
	j.seq = nil
	j.fed = 0
}

// demote moves j's full blocks older than window positions to the pool's
// cold tier (a no-op without one), evicting cold cached prefixes when the
// tier is full; when nothing can be evicted the blocks stay hot.
func (s *Scheduler) demote(j *Job, window int) {
	d, ok := s.run.KV().(kv.Demoter)
	if !ok || s.pool.ColdBlocks() == 0 || j.seq == nil {
		return
	}
	for {
		_, err := j.seq.Demote(window, d)
		if err == nil || !errors.Is(err, kv.ErrPoolExhausted) {
			return
		}
		if s.cache == nil || s.cache.EvictCold(s.pool.FreeCold()+1) == 0 {
			return
		}
	}
}

// next calls j.Next on logits. A panic there (a bug in sampling, in a
// constraint, in the caller's code) ends j with an error and is logged
// with its stack; the scheduler, and every other request it runs, goes on.
func (s *Scheduler) next(j *Job, logits []float32) (tok int32, done bool) {
	defer s.recoverJob(j, &done)
	return j.Next(logits)
}

// nextN is next for j.NextN, which appends to j.tokens.
func (s *Scheduler) nextN(j *Job, logits []float32) (tokens []int32, done bool) {
	tokens = j.tokens
	defer s.recoverJob(j, &done)
	return j.NextN(logits, j.tokens)
}

// recoverJob, deferred around a job's own code, turns a panic into the
// job's error (done set).
func (s *Scheduler) recoverJob(j *Job, done *bool) {
	if p := recover(); p != nil {
		s.log.Error("a request's token step panicked; the request fails, the others go on", "panic", p, "stack", string(debug.Stack()))
		j.err = fmt.Errorf("sampling the next token: internal error: %v", p)
		*done = true
	}
}

func (s *Scheduler) finish(j *Job, err error) {
	s.release(j)
	j.err = err
	close(j.done)
}

func (s *Scheduler) failAll(err error) {
	for _, j := range s.running {
		s.finish(j, err)
	}
	s.running = nil
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, j := range q {
		s.finish(j, err)
	}
}
