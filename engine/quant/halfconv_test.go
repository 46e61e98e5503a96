package quant

import (
	"math"
	"testing"
)

// TestHalfToFloat converts every half value, at every length and offset
// around the vector width, and compares with FP16ToFP32 bit for bit (the
// hardware quiets signalling NaNs, so NaNs only need to stay NaNs).
func TestHalfToFloat(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	dst := make([]float32, len(all)+1)
	HalfToFloat(dst, all)
	for i, h := range all {
		if !sameFloat(dst[i], FP16ToFP32(h)) {
			t.Fatalf("HalfToFloat(%#04x) = %#08x, want %#08x", h, math.Float32bits(dst[i]), math.Float32bits(FP16ToFP32(h)))
		}
	}
	for off := range 3 {
		for n := range 40 {
			src := all[1000+off : 1000+off+n]
			got := make([]float32, n+2)
			HalfToFloat(got[1:], src)
			for i, h := range src {
				if !sameFloat(got[1+i], FP16ToFP32(h)) {
					t.Fatalf("offset %d, length %d: element %d differs", off, n, i)
				}
			}
			if got[0] != 0 || got[n+1] != 0 {
				t.Fatalf("offset %d, length %d: wrote outside dst[:len(src)]", off, n)
			}
		}
	}
}

// sameFloat reports whether a and b have the same bits, or are both NaN.
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestFloatToHalf converts float32 values of every exponent (zeros,
// subnormal results, ties, overflow, infinities, NaNs) at lengths around
// the vector width, and compares FloatToHalf and RoundToHalf with
// FP32ToFP16 element by element.
func TestFloatToHalf(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65520, 65536, 1e-8, 2.9802322e-08, 5.9604645e-08,
		6.1035156e-05, 6.0975552e-05, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1.00048828125, 1.000732421875}
	r := uint32(12345)
	for len(vals) < 1<<20 {
		r = r*1664525 + 1013904223
		vals = append(vals, math.Float32frombits(r))
	}
	half := make([]uint16, len(vals))
	FloatToHalf(half, vals)
	round := append([]float32(nil), vals...)
	RoundToHalf(round)
	for i, v := range vals {
		want := FP32ToFP16(v)
		if half[i] != want && !(v != v && half[i]&0x7c00 == 0x7c00 && half[i]&0x3ff != 0) {
			t.Fatalf("FloatToHalf(%v = %#08x) = %#04x, want %#04x", v, math.Float32bits(v), half[i], want)
		}
		if !sameFloat(round[i], FP16ToFP32(want)) {
			t.Fatalf("RoundToHalf(%v) = %v, want %v", v, round[i], FP16ToFP32(want))
		}
	}
	for n := range 20 {
		src := vals[3 : 3+n]
		dst := make([]uint16, n+1)
		FloatToHalf(dst, src)
		x := append(append([]float32(nil), src...), 7)
		RoundToHalf(x[:n])
		for i, v := range src {
			if dst[i] != FP32ToFP16(v) && v == v {
				t.Fatalf("length %d: element %d differs", n, i)
			}
		}
		if dst[n] != 0 || x[n] != 7 {
			t.Fatalf("length %d: wrote past the end", n)
		}
	}
}
