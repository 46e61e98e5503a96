//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package hostmem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Alloc returns n zeroed bytes of anonymous memory (macOS and the BSDs
// have no transparent-huge-page advice; their kernels pick page sizes
// themselves). Free releases it.
func Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", n, err)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// Free unmaps a buffer from Alloc. Freeing nil or an empty buffer does
// nothing.
func Free(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b))); err != nil {
		return fmt.Errorf("unmap %d bytes: %w", len(b), err)
	}
	return nil
}
