package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestActivationSums checks the sums the activation formats carry for the
// weights' minimum terms: Q8_1's s = d·Σq (to half precision) and Q8_K's
// bsums, exactly.
func TestActivationSums(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	x := randRow(r, 1024, 1.5)
	for _, enc := range []struct {
		name string
		f    RowFunc
	}{{"ref", quantizeQ8_1}, {"act", quantizeActQ8_1}} {
		b := make([]byte, must(Q8_1.RowBytes(len(x))))
		enc.f(b, x)
		for blk := 0; blk < len(x)/QK; blk++ {
			y := b[blk*q8_1Bytes:]
			var sum int32
			for _, q := range y[4:36] {
				sum += int32(int8(q))
			}
			want := f16At(y) * float32(sum)
			if got := f16At(y[2:]); math.Abs(float64(got-want)) > 2e-3*math.Abs(float64(want))+1e-6 {
				t.Errorf("Q8_1 %s block %d: s = %g, d·Σq = %g", enc.name, blk, got, want)
			}
		}
	}
	q, err := QuantizeRowFor(Q8_K)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, must(Q8_K.RowBytes(len(x))))
	q(b, x)
	for blk := 0; blk < len(x)/QKK; blk++ {
		y := b[blk*q8_KBytes:]
		for j := 0; j < 16; j++ {
			var sum int32
			for _, v := range y[4+16*j : 4+16*j+16] {
				sum += int32(int8(v))
			}
			if got := q8KBsum(y, j); got != sum {
				t.Errorf("Q8_K block %d: bsums[%d] = %d, want %d", blk, j, got, sum)
			}
		}
	}
}
