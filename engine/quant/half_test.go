package quant

import (
	"math"
	"testing"
)

func TestHalfConversion(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff}, {1e6, 0x7c00},
		{0.1, 0x2e66}, {float32(math.Ldexp(1, -24)), 0x0001}, {float32(math.Ldexp(1, -14)), 0x0400},
		{1e-9, 0}, {1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, // ties to even
		{float32(math.Inf(-1)), 0xfc00}, {65520, 0x7c00}, // rounds up to inf
		{float32(math.Ldexp(3, -26)), 0x0001}, // subnormal rounding
	} {
		if got := FP32ToFP16(tc.in); got != tc.want {
			t.Errorf("FP32ToFP16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	if h := FP32ToFP16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN converts to %#04x, not a NaN", h)
	}
}

// TestHalfExhaustive round-trips every half value through float32.
func TestHalfExhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := fp16ToFP32(uint16(h))
		if math.IsNaN(float64(f)) {
			if back := FP32ToFP16(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back := FP32ToFP16(f); back != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, back)
		}
		// Independent decoder.
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		e, m := (h>>10)&0x1f, float64(h&0x3ff)
		var want float64
		switch e {
		case 0:
			want = sign * math.Ldexp(m, -24)
		case 0x1f:
			want = sign * math.Inf(1)
		default:
			want = sign * math.Ldexp(1+m/1024, e-15)
		}
		if float64(f) != want {
			t.Fatalf("FP16ToFP32(%#04x) = %g, want %g", h, f, want)
		}
	}
}

func TestBF16(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint16
	}{{1, 0x3f80}, {-3.140625, 0xc049}, {float32(math.Inf(1)), 0x7f80}, {1.00390625, 0x3f80}, {1.01171875, 0x3f82}} {
		if got := FP32ToBF16(tc.in); got != tc.want {
			t.Errorf("FP32ToBF16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := BF16ToFP32(uint16(h))
		if !math.IsNaN(float64(f)) && FP32ToBF16(f) != uint16(h) {
			t.Fatalf("bf16 %#04x does not round-trip", h)
		}
	}
}
