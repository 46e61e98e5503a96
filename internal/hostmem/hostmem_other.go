//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package hostmem

// Alloc returns n zeroed bytes on the Go heap where anonymous mappings
// are not available.
func Alloc(n int) ([]byte, error) { return make([]byte, max(n, 0)), nil }

// Free does nothing: the garbage collector frees Alloc's buffers here.
func Free([]byte) error { return nil }
