//go:build amd64 && !noasm

package quant

import "golang.org/x/sys/cpu"

// hasFlashAVX512 selects the AVX-512 forms of DotHalf, MadHalf, ScaleHalf
// and SwiGLU; they follow the 16-lane order, which is halfDotLanes's on
// exactly these CPUs.
var hasFlashAVX512 = cpu.X86.HasAVX512F

// dotHalfVector returns the 16-lane reduction of the first np elements
// (a multiple of 64) of x·y, or ok=false when there is no vector path.
func dotHalfVector(x, y []uint16, np int) (res float32, ok bool) {
	if !hasFlashAVX512 || np == 0 {
		return 0, false
	}
	_, _ = x[np-1], y[np-1]
	return dotHalf64(np, &x[0], &y[0]), true
}

// madHalfVector does MadHalf on the longest prefix of y that is a multiple
// of 16 and returns its length.
func madHalfVector(y, x []uint16, v float32) int {
	n := len(y) &^ 15
	if !hasFlashAVX512 || n == 0 {
		return 0
	}
	_ = x[n-1]
	madHalf16(n, &y[0], &x[0], v)
	return n
}

// scaleHalfVector does ScaleHalf on the longest prefix of y that is a
// multiple of 16 and returns its length.
func scaleHalfVector(y []uint16, v float32) int {
	n := len(y) &^ 15
	if !hasFlashAVX512 || n == 0 {
		return 0
	}
	scaleHalf16(n, &y[0], v)
	return n
}

// swigluVector does SwiGLU's 16-lane blocks (len(dst), a multiple of 16,
// elements) and returns how many it did.
func swigluVector(dst, g, u []float32) int {
	n := len(dst)
	if !hasFlashAVX512 || n == 0 || halfDotLanes != 16 {
		return 0
	}
	_, _ = g[n-1], u[n-1]
	swiglu16(n, &dst[0], &g[0], &u[0])
	return n
}

//go:noescape
func dotHalf64(n int, x, y *uint16) float32

//go:noescape
func madHalf16(n int, y, x *uint16, v float32)

//go:noescape
func scaleHalf16(n int, y *uint16, v float32)

//go:noescape
func swiglu16(n int, dst, gate, up *float32)

//go:noescape
func dotF16F32x16(n int, w *uint16, a *float32) float32

//go:noescape
func flashMad64(hd int, acc, v *uint16, vstride int, ms, vs *float32, n int)

//go:noescape
func dotHalf64Keys(hd int, k *uint16, kstride int, q *uint16, n int, scale float32, out *float32)

// dotHalf64KeysHeads is dotHalf64Keys for heads queries (q[h·hd:]) over
// the same keys: out[h·flashChunk+i] for head h and key i.
//
//go:noescape
func dotHalf64KeysHeads(hd int, k *uint16, kstride int, q *uint16, heads, n int, scale float32, out *float32)

// flashMad64Heads is flashMad64 for heads accumulators (acc[h·hd:]) over
// the same values, head h with ms[h·flashChunk+i] and vs[h·flashChunk+i].
//
//go:noescape
func flashMad64Heads(hd int, acc, v *uint16, vstride int, ms, vs *float32, n, heads int)
