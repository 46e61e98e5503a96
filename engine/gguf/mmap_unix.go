//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gguf

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of fh read-only and shared; the mapping outlives fh.
func mapFile(fh *os.File, size int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(int(fh.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readFile(fh, size)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}

// dropPages drops the process's mapping of b's pages (page-aligned, inside
// a shared file mapping); they are read back from the file on next use.
func dropPages(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }
