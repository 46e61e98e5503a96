//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package hostmem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapAnon maps n bytes of zeroed, private anonymous memory.
func mapAnon(n int) (unsafe.Pointer, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", n, err)
	}
	return p, nil
}

// Free unmaps a buffer from Alloc. Freeing nil or an empty buffer does
// nothing.
func Free(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(pageCeil(len(b)))); err != nil {
		return fmt.Errorf("unmap %d bytes: %w", len(b), err)
	}
	return nil
}

func pageCeil(n int) int {
	p := unix.Getpagesize()
	return (n + p - 1) / p * p
}
