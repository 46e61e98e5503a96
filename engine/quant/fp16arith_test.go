package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRoundHalf64 checks the float64-to-f16 rounding against the
// float32 conversion (FP32ToFP16, correctly rounded) on float32 values,
// where both must agree: every f16 value, the midpoints between
// neighbours and their float32 neighbours, and random floats of every
// magnitude.
func TestRoundHalf64(t *testing.T) {
	check := func(f float32) {
		t.Helper()
		if got, want := roundHalf64(float64(f)), FP32ToFP16(f); got != want && !(f != f && got&0x7c00 == 0x7c00 && got&0x3ff != 0) {
			t.Fatalf("roundHalf64(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for h := range 1 << 16 {
		f := halfTable[h]
		check(f)
		next := halfTable[(h+1)&0xffff]
		if f == f && next == next && !math.IsInf(float64(next), 0) && math.Signbit(float64(f)) == math.Signbit(float64(next)) {
			mid := float32((float64(f) + float64(next)) / 2) // exact in float32
			check(mid)
			check(math.Nextafter32(mid, 0))
			check(math.Nextafter32(mid, float32(math.Inf(1))))
			check(math.Nextafter32(mid, float32(math.Inf(-1))))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		check(math.Float32frombits(r.Uint32()))
	}
}

// TestFmaHalf checks the half-precision fused multiply-add against an
// exact computation: a·b + c of halves is exact in float64 for these
// inputs, so the reference rounds it with the float32 path twice removed
// (to float32 only when exact).
func TestFmaHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 18 {
		a, b, c := uint16(r.Uint32()), uint16(r.Uint32()), uint16(r.Uint32())
		fa, fb, fc := halfTable[a], halfTable[b], halfTable[c]
		if fa != fa || fb != fb || fc != fc || math.IsInf(float64(fa), 0) || math.IsInf(float64(fb), 0) || math.IsInf(float64(fc), 0) {
			continue
		}
		exact := float64(fa)*float64(fb) + float64(fc)
		if float64(float32(exact)) != exact {
			continue // needs more than float32's bits: covered by TestRoundHalf64's logic
		}
		if got, want := fmaHalf(a, b, c), FP32ToFP16(float32(exact)); got != want {
			t.Fatalf("fmaHalf(%#04x, %#04x, %#04x) = %#04x, want %#04x", a, b, c, got, want)
		}
	}
}

// TestDotHalfFP16 checks DotHalfFP16's structure on vectors whose every
// operation is exact (small integers): it must then equal the plain sum,
// for lengths with and without whole 128-element blocks.
func TestDotHalfFP16(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 64, 127, 128, 130, 384, 1024} {
		x, y := make([]uint16, n), make([]uint16, n)
		var want float64
		for i := range n {
			a, b := float32(r.IntN(5)-2), float32(r.IntN(5)-2)
			x[i], y[i] = FP32ToFP16(a), FP32ToFP16(b)
			want += float64(a * b)
		}
		if got := DotHalfFP16(x, y); float64(got) != want {
			t.Errorf("n=%d: DotHalfFP16 = %g, want %g", n, got, want)
		}
		if n%16 == 0 {
			if got := DotF16TinyBLAS(x, y); float64(got) != want {
				t.Errorf("n=%d: DotF16TinyBLAS = %g, want %g", n, got, want)
			}
		}
	}
	// Rounding in half precision: 2048 + 1 is 2048 in f16, so a block
	// that adds 1 to a lane holding 2048 loses it, while the float64
	// tail keeps it.
	x, y := make([]uint16, 129), make([]uint16, 129)
	for i := range x {
		x[i], y[i] = FP32ToFP16(1), 0
	}
	y[0], y[128] = FP32ToFP16(2048), FP32ToFP16(1)
	x[0] = FP32ToFP16(1)
	// lane 0 of accumulator 0: 2048; the others 0; then the tail adds 1.
	if got := DotHalfFP16(x, y); got != 2049 {
		t.Errorf("tail: DotHalfFP16 = %g, want 2049", got)
	}
	y[128] = 0
	y[32] = FP32ToFP16(1) // accumulator 1, lane 0: 1; 2048 + 1 rounds to 2048 in f16
	if got := DotHalfFP16(x, y); got != 2048 {
		t.Errorf("half-precision reduction: DotHalfFP16 = %g, want 2048", got)
	}
}
