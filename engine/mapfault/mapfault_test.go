//go:build linux || darwin

package mapfault_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/ruvllm/ruvllm/engine/mapfault"
	"github.com/ruvllm/ruvllm/engine/mapfault/mapfaulttest"
)

// sink keeps the reads of sum from being optimised away.
var sink int

func sum(b []byte) {
	for i := 0; i < len(b); i += 64 {
		sink += int(b[i])
	}
}

func TestCatch(t *testing.T) {
	mapfaulttest.RequireFaultAddresses(t)
	b := mapfaulttest.TruncatedMapping(t, 4)
	tests := []struct {
		name      string
		run       func()
		wantFault bool
		wantPanic bool
	}{
		{name: "read of a truncated mapping", run: func() { sum(b) }, wantFault: true},
		{name: "no panic", run: func() {}},
		{name: "a panic that is no fault goes on", run: func() { panic("bug") }, wantPanic: true},
		{name: "index out of range goes on", run: func() { _ = b[len(b)+0*len(b):][1] }, wantPanic: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				func() {
					defer mapfault.Catch(&err, mapfault.Arm())
					tt.run()
				}()
				return false
			}()
			if panicked != tt.wantPanic {
				t.Fatalf("panicked = %v, want %v", panicked, tt.wantPanic)
			}
			if got := errors.Is(err, mapfault.ErrFault); got != tt.wantFault {
				t.Fatalf("err = %v, want a fault: %v", err, tt.wantFault)
			}
		})
	}
}

// TestGroupCarriesFaultToCaller: a fault in one of several goroutines is
// raised on the caller once all are done, where Catch makes it an error.
func TestGroupCarriesFaultToCaller(t *testing.T) {
	mapfaulttest.RequireFaultAddresses(t)
	b := mapfaulttest.TruncatedMapping(t, 2)
	var err error
	func() {
		defer mapfault.Catch(&err, mapfault.Arm())
		var g mapfault.Group
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer g.Catch(mapfault.Arm())
				if i == 2 {
					sum(b)
				}
			}()
		}
		wg.Wait()
		if !g.Faulted() {
			t.Error("Faulted() = false after a part faulted")
		}
		g.Raise()
		t.Error("Raise returned after a fault")
	}()
	if !errors.Is(err, mapfault.ErrFault) {
		t.Fatalf("err = %v, want ErrFault", err)
	}
	var g mapfault.Group
	g.Raise() // nothing recorded: returns
}
