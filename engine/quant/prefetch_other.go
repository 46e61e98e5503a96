//go:build !amd64 || noasm

package quant

import "unsafe"

// hasPrefetch is false: Prefetch does nothing here.
const hasPrefetch = false

func prefetchLines(p unsafe.Pointer, n int) {}
