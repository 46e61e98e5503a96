//go:build linux

package hostmem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Alloc returns n zeroed bytes of anonymous memory. A buffer of at least
// HugePage bytes starts on a HugePage boundary and is advised
// (MADV_HUGEPAGE) before it is first touched, so the kernel backs it with
// huge pages even where transparent huge pages are "madvise" only (the
// default of Debian and Ubuntu). Free releases it.
func Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	if n < HugePage {
		p, err := mapAnon(n)
		if err != nil {
			return nil, err
		}
		return unsafe.Slice((*byte)(p), n), nil
	}
	// Map a huge page more than asked, keep the aligned n bytes (rounded
	// up to whole base pages) and unmap the rest on both sides.
	size := pageCeil(n)
	base, err := mapAnon(size + HugePage)
	if err != nil {
		return nil, err
	}
	head := (HugePage - int(uintptr(base)%HugePage)) % HugePage
	if head > 0 {
		if err := unix.MunmapPtr(base, uintptr(head)); err != nil {
			return nil, fmt.Errorf("trim the mapping's head: %w", err)
		}
	}
	start := unsafe.Add(base, head)
	if tail := HugePage - head; tail > 0 {
		if err := unix.MunmapPtr(unsafe.Add(start, size), uintptr(tail)); err != nil {
			return nil, fmt.Errorf("trim the mapping's tail: %w", err)
		}
	}
	b := unsafe.Slice((*byte)(start), n)
	// Advice is a hint: a kernel without transparent huge pages (or with
	// them off) refuses it, and the buffer works in base pages.
	_ = unix.Madvise(unsafe.Slice((*byte)(start), size), unix.MADV_HUGEPAGE)
	return b, nil
}
