package cpu

import (
	"runtime"
	"sync"
)

// job is one parallel-for loop body. do handles items [lo, hi) on worker
// w (0 ≤ w < workers.n), so a job can keep per-worker scratch memory
// without locking. Operations keep their job values in the Backend and
// pass pointers to them, so dispatching a loop allocates nothing.
type job interface {
	do(w, lo, hi int)
}

// workers is a fixed set of goroutines that run parallel-for loops, so hot
// paths never spawn goroutines per operation. Loops are run one at a time
// (the Backend is single-threaded from the caller's side), which lets the
// pool reuse one WaitGroup.
type workers struct {
	n     int
	tasks chan task
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

type task struct {
	j      job
	lo, hi int
}

func newWorkers(n int) *workers {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	w := &workers{n: n, tasks: make(chan task, 4*n), stop: make(chan struct{})}
	for i := 1; i < n; i++ { // the caller is worker 0
		go w.loop(i)
	}
	return w
}

func (w *workers) loop(id int) {
	for {
		select {
		case t := <-w.tasks:
			t.j.do(id, t.lo, t.hi)
			w.wg.Done()
		case <-w.stop:
			return
		}
	}
}

// close stops the worker goroutines.
func (w *workers) close() { w.once.Do(func() { close(w.stop) }) }

// run calls j.do over [0, n) split into chunks of at least grain items, in
// parallel, and returns when all chunks are done. There are up to four
// chunks per worker so that uneven chunks (other load on the machine)
// even out.
func (w *workers) run(n, grain int, j job) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	chunks := w.n * 4
	if c := (n + grain - 1) / grain; c < chunks {
		chunks = c
	}
	if chunks <= 1 || w.n == 1 {
		j.do(0, 0, n)
		return
	}
	size := (n + chunks - 1) / chunks
	// The first chunk is the calling goroutine's.
	for lo := size; lo < n; lo += size {
		w.wg.Add(1)
		w.tasks <- task{j: j, lo: lo, hi: min(lo+size, n)}
	}
	j.do(0, 0, min(size, n))
	// Help drain the queue instead of idling while others work.
	for {
		select {
		case t := <-w.tasks:
			t.j.do(0, t.lo, t.hi)
			w.wg.Done()
			continue
		default:
		}
		break
	}
	w.wg.Wait()
}

// funcJob adapts a closure to job, for cold paths where an allocation per
// call does not matter.
type funcJob func(lo, hi int)

func (f funcJob) do(_, lo, hi int) { f(lo, hi) }
