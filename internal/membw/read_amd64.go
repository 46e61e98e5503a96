//go:build amd64 && !noasm

package membw

import "golang.org/x/sys/cpu"

// readStream returns the sum of b's 64-bit words (as the assembly adds
// them, lane by lane), read with the widest loads this CPU has: 512-bit
// with AVX-512, 256-bit with AVX2, as the decode kernels read weights.
func readStream(b []byte) uint64 {
	n := len(b) &^ (readGrain - 1)
	var s uint64
	switch {
	case n > 0 && cpu.X86.HasAVX512F:
		s = readAVX512(&b[0], n)
	case n > 0 && cpu.X86.HasAVX2:
		s = readAVX2(&b[0], n)
	default:
		return readStreamGo(b)
	}
	return s + readStreamGo(b[n:])
}

//go:noescape
func readAVX512(p *byte, n int) uint64

//go:noescape
func readAVX2(p *byte, n int) uint64
