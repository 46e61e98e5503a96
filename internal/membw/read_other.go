//go:build !amd64 || noasm

package membw

// readStream returns the sum of b's 64-bit words, read with the portable
// loop (which has no software prefetch: pfd is ignored).
func readStream(b []byte, pfd int) uint64 { return readStreamGo(b) }

// prefetchDistances are the software prefetch distances the read probe
// tries: the portable loop has none.
var prefetchDistances = []int{0}
