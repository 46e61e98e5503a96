//go:build linux || darwin

// Package mapfaulttest makes memory whose every read faults, for tests of
// code that must survive a model file truncated under its mapping.
package mapfaulttest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
