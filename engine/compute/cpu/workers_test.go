package cpu

import (
	"fmt"
	"slices"
	"sync"
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

// TestWorkersLongLoopChunksShrink checks the claims of a long loop: every
// chunk starts on a whole grain, the chunks cover the loop once, and they
// shrink towards the end, so that the last ones are a single grain (the
// workers finish within about one grain of each other). Short loops keep
// one chunk per worker.
func TestWorkersLongLoopChunksShrink(t *testing.T) {
	for _, tc := range []struct{ threads, n, grain int }{
		{2, 512, 1}, {2, 4096, 3}, {3, 1000, 2}, {8, 8192, 4},
	} {
		t.Run(fmt.Sprintf("t%d-n%d-g%d", tc.threads, tc.n, tc.grain), func(t *testing.T) {
			w := newWorkers(tc.threads)
			defer w.close()
			var mu sync.Mutex
			var chunks [][2]int
			w.run(tc.n, tc.grain, funcJobOf(func(_, lo, hi int) {
				mu.Lock()
				chunks = append(chunks, [2]int{lo, hi})
				mu.Unlock()
			}))
			slices.SortFunc(chunks, func(a, b [2]int) int { return a[0] - b[0] })
			next := 0
			for i, c := range chunks {
				if c[0] != next || c[1] <= c[0] {
					t.Fatalf("chunk %d is [%d,%d), want it to start at %d", i, c[0], c[1], next)
				}
				if c[0]%tc.grain != 0 {
					t.Errorf("chunk [%d,%d) does not start on a grain of %d", c[0], c[1], tc.grain)
				}
				if i > 0 && c[1]-c[0] > chunks[i-1][1]-chunks[i-1][0] {
					t.Errorf("chunk %d [%d,%d) is larger than the one before it", i, c[0], c[1])
				}
				next = c[1]
			}
			if next != tc.n {
				t.Fatalf("chunks end at %d, want %d", next, tc.n)
			}
			first, last := chunks[0], chunks[len(chunks)-1]
			if size := first[1] - first[0]; size < tc.n/(4*tc.threads) {
				t.Errorf("first chunk has %d items, want at least %d", size, tc.n/(4*tc.threads))
			}
			if size := last[1] - last[0]; size > tc.grain {
				t.Errorf("last chunk has %d items, want at most a grain (%d)", size, tc.grain)
			}
		})
	}
	w := newWorkers(2)
	defer w.close()
	var claims atomic.Int32
	w.run(20, 1, funcJobOf(func(_, _, _ int) { claims.Add(1) }))
	if c := claims.Load(); c != 2 {
		t.Errorf("a short loop of 20 items on 2 workers took %d claims, want 2", c)
	}
}
