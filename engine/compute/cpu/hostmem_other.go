//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cpu

// allocWeights allocates repacked weights on the Go heap where anonymous
// mappings are not available.
func allocWeights(n int) ([]byte, error) { return make([]byte, n), nil }

func freeWeights([]byte) {}
