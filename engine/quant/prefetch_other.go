//go:build !amd64 || noasm

package quant

// hasPrefetch is false: Prefetch does nothing here.
const hasPrefetch = false

func prefetchLines(p *uint16, n int) {}
