//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package hostmem

import "unsafe"

// Alloc returns n zeroed bytes of anonymous memory (macOS and the BSDs
// have no transparent-huge-page advice; their kernels pick page sizes
// themselves). Free releases it.
func Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	p, err := mapAnon(n)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}
