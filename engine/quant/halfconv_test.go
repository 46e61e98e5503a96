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
