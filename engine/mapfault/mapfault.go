// Package mapfault turns a fault reading a memory-mapped model file into an
// error. Weights are read straight from the file's mapping; when another
// program truncates or overwrites the file in place while it is mapped
// (`cp other.gguf model.gguf`, `truncate`), the next read of a page past
// the file's new end raises SIGBUS, which Go turns into a fatal error that
// ends the daemon and every app's requests with it. Code that reads mapped
// memory arms the goroutine (runtime/debug.SetPanicOnFault) and catches the
// resulting panic at the boundary where an error can be returned.
package mapfault

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// ErrFault is wrapped by the errors Catch makes of a fault.
var ErrFault = errors.New("the model file could not be read from memory (truncated or overwritten while loaded?)")

// Is reports whether r, a value recovered from a panic, is a memory fault
// (a runtime error carrying the faulting address).
func Is(r any) bool {
	e, ok := r.(runtime.Error)
	if !ok {
		return false
	}
	_, ok = e.(interface{ Addr() uintptr })
	return ok
}

// Arm makes a fault on the calling goroutine a panic instead of a fatal
// error, and returns the previous setting for Catch to restore.
func Arm() bool { return debug.SetPanicOnFault(true) }

// Catch, deferred with Arm's result as
//
//	defer mapfault.Catch(&err, mapfault.Arm())
//
// restores the goroutine's setting and turns a fault panic into an error
// wrapping ErrFault in *err. Other panics go on: they are bugs.
func Catch(err *error, armed bool) {
	debug.SetPanicOnFault(armed)
	r := recover()
	if r == nil {
		return
	}
	if !Is(r) {
		panic(r)
	}
	*err = Error(r)
}

// Error is the error of a fault panic r, naming the address (the
// runtime's own message speaks of a nil pointer).
func Error(r any) error {
	if a, ok := r.(interface{ Addr() uintptr }); ok {
		return fmt.Errorf("%w: fault at address %#x", ErrFault, a.Addr())
	}
	return fmt.Errorf("%w: %v", ErrFault, r)
}

// Group carries a fault from goroutines working for one caller (a
// parallel loop's helpers) to that caller, whose guard returns errors:
// each part runs with
//
//	defer g.Catch(mapfault.Arm())
//
// and the caller calls Raise once all are done. The zero Group is ready
// to use.
type Group struct{ fault atomic.Pointer[any] }

// Catch, deferred with Arm's result, restores the goroutine's setting and
// records a fault panic for Raise instead of letting it end the process;
// other panics go on.
func (g *Group) Catch(armed bool) {
	debug.SetPanicOnFault(armed)
	r := recover()
	if r == nil {
		return
	}
	if !Is(r) {
		panic(r)
	}
	fault := new(any) // allocated here, not for every r
	*fault = r
	g.fault.CompareAndSwap(nil, fault)
}

// Faulted reports whether a part has faulted so far, so that the others
// can stop early.
func (g *Group) Faulted() bool { return g.fault.Load() != nil }

// Raise panics with the first fault recorded since the last Raise, if any,
// on the calling goroutine; call it once every part has returned.
func (g *Group) Raise() {
	if r := g.fault.Swap(nil); r != nil {
		panic(*r)
	}
}
