package cpu

import (
	"runtime"
	"sync"
)

// workers is a fixed set of goroutines that run parallel-for loops, so hot
// paths never spawn goroutines per operation.
type workers struct {
	n     int
	tasks chan task
	stop  chan struct{}
	once  sync.Once
}

type task struct {
	fn     func(lo, hi int)
	lo, hi int
	wg     *sync.WaitGroup
}

func newWorkers(n int) *workers {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	w := &workers{n: n, tasks: make(chan task, 4*n), stop: make(chan struct{})}
	for i := 0; i < n-1; i++ { // the caller is the n-th worker
		go w.loop()
	}
	return w
}

func (w *workers) loop() {
	for {
		select {
		case t := <-w.tasks:
			t.fn(t.lo, t.hi)
			t.wg.Done()
		case <-w.stop:
			return
		}
	}
}

// close stops the worker goroutines.
func (w *workers) close() { w.once.Do(func() { close(w.stop) }) }

// run calls fn over [0, n) split into chunks of at least grain items, in
// parallel, and returns when all chunks are done.
func (w *workers) run(n, grain int, fn func(lo, hi int)) {
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
		fn(0, n)
		return
	}
	size := (n + chunks - 1) / chunks
	var wg sync.WaitGroup
	var mine task
	first := true
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		if first { // keep the first chunk for the calling goroutine
			mine, first = task{fn: fn, lo: lo, hi: hi}, false
			continue
		}
		wg.Add(1)
		w.tasks <- task{fn: fn, lo: lo, hi: hi, wg: &wg}
	}
	mine.fn(mine.lo, mine.hi)
	// Help drain the queue instead of idling while others work.
	for {
		select {
		case t := <-w.tasks:
			t.fn(t.lo, t.hi)
			t.wg.Done()
			continue
		default:
		}
		break
	}
	wg.Wait()
}
