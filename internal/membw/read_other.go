//go:build !amd64 || noasm

package membw

// readStream returns the sum of b's 64-bit words, read with the portable
// loop.
func readStream(b []byte) uint64 { return readStreamGo(b) }
