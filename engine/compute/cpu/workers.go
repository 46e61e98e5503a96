package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// job is one parallel-for loop body. do handles items [lo, hi) on worker
// w (0 ≤ w < workers.n), so a job can keep per-worker scratch memory
// without locking. Operations keep their job values in the Backend and
// pass pointers to them, so dispatching a loop allocates nothing.
type job interface {
	do(w, lo, hi int)
}

// spinFor is how long an idle helper keeps polling for the next loop
// before it parks. A forward pass dispatches a loop every few
// microseconds, and waking a parked goroutine costs tens of microseconds
// on a busy or virtualized machine: on small models that wake-up, paid
// once per operation, made two threads slower than one. Spinning helpers
// yield their processor (runtime.Gosched) as they poll, so other
// goroutines (the daemon's request handlers) still run.
const spinFor = 200 * time.Microsecond

// Helper mailbox states.
const (
	slotIdle    = iota // nothing posted, or the helper finished
	slotPosted         // run posted a loop for the helper
	slotRunning        // the helper took the loop
)

// workers is a fixed set of goroutines that run parallel-for loops, so hot
// paths never spawn goroutines per operation. The caller is worker 0; the
// helpers 1..n-1 spin briefly between loops and then park. Loops are run
// one at a time (the Backend is single-threaded from the caller's side).
// A loop is split into chunks that every worker claims from one counter,
// so a helper that is slow to start (parked, or its core taken by another
// process) costs nothing: the others take its chunks.
type workers struct {
	n     int
	slots []workerSlot // helpers' mailboxes; slot 0 is unused
	stop  atomic.Bool
	done  sync.WaitGroup // helpers that have not exited

	// The loop being run. run writes these only while every helper is
	// idle, and a helper reads them only after taking a posted loop.
	j            job
	grain, total int
	next         atomic.Int64 // the first item not yet claimed
	// ahead is memory the next loop will read (runAhead): the helpers
	// prefetch it, each its share, once they run out of chunks, while
	// the caller goes on alone.
	ahead []byte
	// faults carries a memory fault a worker hit in the current loop (a
	// model file truncated under its mapping) to the caller, where run
	// raises it once every worker is done and the caller's guard turns it
	// into an error.
	faults mapfault.Group
}

// workerSlot is one helper's mailbox, on its own cache lines.
type workerSlot struct {
	state  atomic.Uint32
	parked atomic.Bool
	wake   chan struct{} // capacity 1: a wake-up is never lost
	_      [64]byte
}

func newWorkers(n int) *workers {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	w := &workers{n: n, slots: make([]workerSlot, n)}
	for i := 1; i < n; i++ {
		w.slots[i].wake = make(chan struct{}, 1)
		w.done.Add(1)
		go w.loop(i)
	}
	return w
}

// loop is helper id: wait for a posted loop, take it, claim chunks.
func (w *workers) loop(id int) {
	defer w.done.Done()
	s := &w.slots[id]
	for w.await(s) {
		if !s.state.CompareAndSwap(slotPosted, slotRunning) {
			continue // run finished the loop itself and took it back
		}
		w.claimGuarded(id)
		ahead := w.ahead
		s.state.Store(slotIdle)
		w.prefetchAhead(s, id, ahead)
	}
}

// prefetchAhead loads helper id's share of ahead into its caches, a piece
// at a time, until the whole share is asked for or the next loop is
// posted.
func (w *workers) prefetchAhead(s *workerSlot, id int, ahead []byte) {
	ahead = aheadShare(ahead, id, w.n)
	for len(ahead) > 0 {
		if s.state.Load() == slotPosted || w.stop.Load() {
			return
		}
		piece := ahead[:min(len(ahead), prefetchPiece)]
		quant.Prefetch(piece)
		ahead = ahead[len(piece):]
	}
}

// aheadShare is helper id's share of ahead among the n-1 helpers of n
// workers.
func aheadShare(ahead []byte, id, n int) []byte {
	if len(ahead) == 0 || n < 2 {
		return nil
	}
	share := (len(ahead) + n - 2) / (n - 1)
	return ahead[min(len(ahead), (id-1)*share):min(len(ahead), id*share)]
}

// prefetchPiece is how many bytes a helper asks to be prefetched between
// two looks for the next loop (64 lines: a fraction of a microsecond).
const prefetchPiece = 4 << 10

// await returns true once a loop is posted to s, false when the pool is
// closed. It polls for spinFor, then parks until run wakes it.
func (w *workers) await(s *workerSlot) bool {
	start := time.Now()
	for i := 1; ; i++ {
		if s.state.Load() == slotPosted {
			return true
		}
		if w.stop.Load() {
			return false
		}
		if i%64 != 0 {
			continue
		}
		runtime.Gosched()
		if time.Since(start) < spinFor {
			continue
		}
		// Park. run sets the state before it looks at parked, and this
		// sets parked before it looks at the state again, so one of the
		// two always sees the other (and a stale wake-up only costs one
		// more look).
		s.parked.Store(true)
		if s.state.Load() != slotPosted && !w.stop.Load() {
			<-s.wake
		}
		s.parked.Store(false)
		start = time.Now()
	}
}

// claim runs chunks of the current loop on worker id until none are left.
// Chunks shrink as the loop nears its end (guided self-scheduling): each
// claim takes a share of what is left, in whole grains, so that the
// workers finish within about one grain of each other. With equal
// chunks, the last one ran on one core alone for up to a chunk's time,
// and a decode step streamed its weights at one core's bandwidth for
// that long.
func (w *workers) claim(id int) {
	for {
		lo := int(w.next.Load())
		if lo >= w.total {
			return
		}
		hi := min(lo+w.claimSize(w.total-lo, w.grain), w.total)
		if !w.next.CompareAndSwap(int64(lo), int64(hi)) {
			continue
		}
		w.j.do(id, lo, hi)
	}
}

// claimGuarded is claim, which records a memory fault in w.faults and
// ends the loop's claims instead of ending the process.
func (w *workers) claimGuarded(id int) {
	defer w.stopOnFault()
	defer w.faults.Catch(mapfault.Arm())
	w.claim(id)
}

// stopOnFault ends the current loop's claims once a worker faulted.
func (w *workers) stopOnFault() {
	if w.faults.Faulted() {
		w.next.Store(int64(w.total))
	}
}

// close stops the helper goroutines and waits for them to exit.
func (w *workers) close() {
	if w.stop.Swap(true) {
		return
	}
	for i := 1; i < w.n; i++ {
		select {
		case w.slots[i].wake <- struct{}{}:
		default:
		}
	}
	w.done.Wait()
}

// runAhead is run, after which the helpers, done with their chunks,
// prefetch ahead (see workers.ahead) while the caller goes on with what
// follows the loop: a decode step's small operations between two matrix
// products leave memory idle otherwise.
func (w *workers) runAhead(n, grain int, j job, ahead []byte) {
	w.ahead = ahead
	w.run(n, grain, j)
	w.ahead = nil
}

// claimSize is the size of a claim when left items of a loop in grains
// of grain are not yet claimed: a share of them, in whole grains.
func (w *workers) claimSize(left, grain int) int {
	size := left / (guidedShare * w.n)
	return max(grain, (size+grain-1)/grain*grain)
}

// loopGrain is the grain run gives a loop of n items asked to run in
// grains of at least grain: one chunk per worker keeps short loops
// (decode's small operations) to one claim each; long ones are claimed in
// shrinking chunks.
func (w *workers) loopGrain(n, grain int) int {
	grain = max(grain, 1)
	if n < manyChunksFrom*w.n*grain {
		grain = max(grain, (n+w.n-1)/w.n)
	}
	return grain
}

// firstClaim is the number of items of a loop of n items in grains of
// grain that the caller claims first (see run and claim), so that a loop
// can tell where the helpers start.
func (w *workers) firstClaim(n, grain int) int {
	if w.n == 1 {
		return n
	}
	return min(n, w.claimSize(n, w.loopGrain(n, grain)))
}

// run calls j.do over [0, n) split into chunks of at least grain items, in
// parallel, and returns when all chunks are done.
func (w *workers) run(n, grain int, j job) {
	if n <= 0 {
		return
	}
	grain = w.loopGrain(n, grain)
	chunks := (n + grain - 1) / grain
	if chunks <= 1 || w.n == 1 {
		j.do(0, 0, n)
		return
	}
	w.j, w.grain, w.total = j, grain, n
	w.next.Store(0)
	helpers := min(w.n-1, chunks-1)
	for i := 1; i <= helpers; i++ {
		s := &w.slots[i]
		s.state.Store(slotPosted)
		if s.parked.Load() {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
	w.claimGuarded(0)
	// Take back the loop from helpers that have not started it; wait for
	// the others to finish their chunks.
	for i := 1; i <= helpers; i++ {
		s := &w.slots[i]
		if s.state.CompareAndSwap(slotPosted, slotIdle) {
			continue
		}
		for spins := 1; s.state.Load() != slotIdle; spins++ {
			if spins%64 == 0 {
				runtime.Gosched()
			}
		}
	}
	w.j = nil // do not keep the caller's memory alive
	w.faults.Raise()
}

// funcJob adapts a closure to job, for cold paths where an allocation per
// call does not matter.
type funcJob func(lo, hi int)

func (f funcJob) do(_, lo, hi int) { f(lo, hi) }

// manyChunksFrom is the number of grains per worker from which a loop is
// claimed in shrinking chunks instead of one chunk per worker.
const manyChunksFrom = 16

// guidedShare sets the size of a claim in a long loop: what is left
// divided by guidedShare times the number of workers. At 1 (classic
// guided self-scheduling) the first claims are longest, so each worker
// streams its weights in fewer, longer runs: a 1B-shape Q4_0 decode ran
// 1.4 % faster than at 2 (medians of four alternated rounds, 39.9 against
// 39.3 tokens/s; Q4_K_M +1 %, Q8_0 the same, prompts within noise).
const guidedShare = 1
