package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRoundHalfEven compares roundHalfEven with math.RoundToEven on every
// float32 in [-256, 256] whose fraction is a multiple of 2^-12, ties
// included, and on random values of the activation range.
func TestRoundHalfEven(t *testing.T) {
	check := func(x float32) {
		want := float32(math.RoundToEven(float64(x)))
		if got := roundHalfEven(x); got != want && !(got == 0 && want == 0) {
			t.Fatalf("roundHalfEven(%v) = %v, want %v", x, got, want)
		}
	}
	for i := -256 << 12; i <= 256<<12; i++ {
		check(float32(i) / (1 << 12))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 20 {
		check((r.Float32()*2 - 1) * 130)
	}
}
