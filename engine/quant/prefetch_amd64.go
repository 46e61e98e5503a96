//go:build amd64 && !noasm

package quant

import "unsafe"

// hasPrefetch: every amd64 CPU has the prefetch instructions.
const hasPrefetch = true

// prefetchLines prefetches every 64-byte line of the n bytes from p to
// L2 (n > 0).
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n int)
