//go:build linux || darwin

package cpu

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/mapfault/mapfaulttest"
)

// TestWorkersCarryFaultToCaller: a parallel loop that reads a mapping
// truncated under it (a model file overwritten while loaded) faults on a
// helper goroutine; the fault must reach the caller's guard as an error,
// not end the process, and the pool must run the next loop as before.
func TestWorkersCarryFaultToCaller(t *testing.T) {
	mapfaulttest.RequireFaultAddresses(t)
	mapped := mapfaulttest.TruncatedMapping(t, 1)
	w := newWorkers(2)
	defer w.close()
	for round := range 3 {
		j := &helperFaultJob{mapped: mapped}
		var err error
		func() {
			defer mapfault.Catch(&err, mapfault.Arm())
			w.run(64, 1, j)
		}()
		if !errors.Is(err, mapfault.ErrFault) {
			t.Fatalf("round %d: err = %v, want ErrFault", round, err)
		}
		var done atomic.Int64
		w.run(1000, 1, funcJob(func(lo, hi int) { done.Add(int64(hi - lo)) }))
		if done.Load() != 1000 {
			t.Fatalf("round %d: after the fault the next loop ran %d of 1000 items", round, done.Load())
		}
	}
}

// helperFaultJob reads its mapping on helpers only; the caller's first
// chunk waits until a helper has taken a chunk, so that a helper faults
// whichever worker is faster.
type helperFaultJob struct {
	mapped  []byte
	started atomic.Bool
}

func (j *helperFaultJob) do(w, lo, hi int) {
	if w == 0 {
		for !j.started.Load() {
			runtime.Gosched()
		}
		return
	}
	j.started.Store(true)
	faultSink.Add(int64(j.mapped[lo%len(j.mapped)]))
}

// faultSink keeps the reads of the faulting loops.
var faultSink atomic.Int64
