//go:build linux || darwin

// Package mapfaulttest makes memory whose every read faults, for tests of
// code that must survive a model file truncated under its mapping.
package mapfaulttest

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"

	"github.com/ruvllm/ruvllm/engine/mapfault"
)

// TruncatedMapping maps a file of pages pages, then truncates the file to
// nothing: every read of the returned memory faults (SIGBUS), as when a
// loaded model's file is overwritten in place.
func TruncatedMapping(t testing.TB, pages int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	size := pages * os.Getpagesize()
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b, err := syscall.Mmap(int(fh.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// RequireFaultAddresses skips the test where a fault on a truncated
// mapping does not come with its address (qemu-user reports SIGBUS at
// address 0, which Go reads as a nil dereference): mapfault turns only
// faults with an address into errors, so that nil dereferences, which
// are bugs, stay panics.
func RequireFaultAddresses(t testing.TB) {
	t.Helper()
	b := TruncatedMapping(t, 1)
	var r any
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { r = recover() }()
		sink += int(b[0])
	}()
	if !mapfault.Is(r) {
		t.Skipf("faults here come without their address (%v): qemu-user, most likely", r)
	}
}

// sink keeps RequireFaultAddresses's read.
var sink int
