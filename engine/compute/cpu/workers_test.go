package cpu

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// countJob counts how often each item is visited and which workers ran.
type countJob struct {
	seen    []atomic.Int32
	workers []atomic.Int32
}

func (j *countJob) do(w, lo, hi int) {
	j.workers[w].Add(1)
	for i := lo; i < hi; i++ {
		j.seen[i].Add(1)
	}
}

// TestWorkersVisitEveryItemOnce runs loops of many sizes and grains, with
// pauses longer than the helpers' spin between some of them so that they
// park and must be woken, and checks that every item is handled exactly
// once and that only valid worker ids are passed.
func TestWorkersVisitEveryItemOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprintf("t%d", threads), func(t *testing.T) {
			w := newWorkers(threads)
			defer w.close()
			for iter, n := range []int{1, 2, 3, 7, 16, 17, 100, 1000, 4096, 5, 64} {
				for _, grain := range []int{0, 1, 3, 64} {
					j := &countJob{seen: make([]atomic.Int32, n), workers: make([]atomic.Int32, threads)}
					w.run(n, grain, j)
					for i := range j.seen {
						if c := j.seen[i].Load(); c != 1 {
							t.Fatalf("n=%d grain=%d: item %d handled %d times", n, grain, i, c)
						}
					}
				}
				if iter%4 == 3 {
					time.Sleep(2 * spinFor) // the helpers park
				}
			}
		})
	}
}

// TestWorkersShareLongLoops checks that a loop long enough to split is
// worked on by more than the calling goroutine: the helpers really take
// chunks, whether spinning or woken from parking.
func TestWorkersShareLongLoops(t *testing.T) {
	w := newWorkers(2)
	defer w.close()
	for _, pause := range []time.Duration{0, 3 * spinFor} {
		helped := false
		for try := 0; try < 200 && !helped; try++ {
			time.Sleep(pause)
			j := &countJob{seen: make([]atomic.Int32, 64), workers: make([]atomic.Int32, 2)}
			w.run(64, 1, funcJobOf(func(wid, lo, hi int) {
				j.do(wid, lo, hi)
				time.Sleep(100 * time.Microsecond) // long enough for a helper to take a chunk
			}))
			helped = j.workers[1].Load() > 0
		}
		if !helped {
			t.Errorf("pause %v: helper never took a chunk", pause)
		}
	}
}

// TestWorkersCloseStopsHelpers checks that close returns (the helpers
// exit) whether they are spinning or parked, and that a second close is
// harmless.
func TestWorkersCloseStopsHelpers(t *testing.T) {
	for _, pause := range []time.Duration{0, 3 * spinFor} {
		w := newWorkers(4)
		w.run(100, 1, &countJob{seen: make([]atomic.Int32, 100), workers: make([]atomic.Int32, 4)})
		time.Sleep(pause)
		done := make(chan struct{})
		go func() { w.close(); w.close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("pause %v: close did not return", pause)
		}
	}
}

// funcJobOf adapts a closure with a worker id to job.
type funcJobOf func(w, lo, hi int)

func (f funcJobOf) do(w, lo, hi int) { f(w, lo, hi) }
