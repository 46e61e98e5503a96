//go:build amd64 && !noasm

package membw

import "golang.org/x/sys/cpu"

// readStream returns the sum of b's 64-bit words (as the assembly adds
// them, lane by lane), read with the widest loads this CPU has: 512-bit
// with AVX-512, 256-bit with AVX2, as the decode kernels read weights,
// with software prefetch pfd bytes ahead (0: none).
func readStream(b []byte, pfd int) uint64 {
	n := len(b) &^ (readGrain - 1)
	var s uint64
	switch {
	case n > 0 && cpu.X86.HasAVX512F:
		s = readAVX512(&b[0], n, pfd)
	case n > 0 && cpu.X86.HasAVX2:
		s = readAVX2(&b[0], n, pfd)
	default:
		return readStreamGo(b)
	}
	return s + readStreamGo(b[n:])
}

// prefetchDistances are the software prefetch distances, in bytes ahead,
// that the read probe tries, keeping the fastest: the best distance
// depends on the machine, and a fixed one can understate the bandwidth by
// a third (on a 2-core Xeon VM: 26 GB/s at 4608 bytes ahead, 31 without
// prefetch, 35.5 at 576).
var prefetchDistances = []int{0, 256, 576, 1152, 2304, 4608}

//go:noescape
func readAVX512(p *byte, n, pfd int) uint64

//go:noescape
func readAVX2(p *byte, n, pfd int) uint64
