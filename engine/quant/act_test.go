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

// TestQuantizeActQ8_0VectorMatchesBlocks checks the activation quantizer
// (vector path where the CPU has one) against its scalar block code, byte
// for byte, on rows mixing ordinary blocks with blocks the vector path
// must leave to the scalar one: zeros, NaN, infinities, subnormal and tiny
// magnitudes, values at rounding ties.
func TestQuantizeActQ8_0VectorMatchesBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 37))
	special := []func(x []float32){
		func(x []float32) { clear(x) },
		func(x []float32) { x[r.IntN(QK)] = float32(math.NaN()) },
		func(x []float32) { x[r.IntN(QK)] = float32(math.Inf(1 - 2*r.IntN(2))) },
		func(x []float32) {
			for i := range x {
				x[i] *= 1e-39 // subnormal
			}
		},
		func(x []float32) {
			for i := range x {
				x[i] *= 3e-37 // normal, but 127/amax overflows
			}
		},
		func(x []float32) {
			for i := range x {
				x[i] = float32(r.IntN(255)-127) / 2 // ties after scaling by 127/amax
			}
			x[0] = 127
		},
		func(x []float32) { x[r.IntN(QK)] = float32(math.Copysign(0, -1)) },
	}
	for iter := range 300 {
		nb := 1 + r.IntN(12)
		x := randRow(r, nb*QK, math.Pow(10, float64(r.IntN(9)-4)))
		for b := range nb {
			if r.IntN(3) == 0 {
				special[r.IntN(len(special))](x[b*QK : (b+1)*QK])
			}
		}
		got := make([]byte, nb*q8_0Bytes+1)
		want := make([]byte, nb*q8_0Bytes+1)
		quantizeActQ8_0(got[:nb*q8_0Bytes], x)
		for b := range nb {
			quantizeActQ8_0Block(want[b*q8_0Bytes:(b+1)*q8_0Bytes], x[b*QK:(b+1)*QK])
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("iteration %d: byte %d (block %d) = %#02x, want %#02x; block %v", iter, i, i/q8_0Bytes, got[i], want[i], x[i/q8_0Bytes*QK:min(len(x), (i/q8_0Bytes+1)*QK)])
			}
		}
	}
}

// TestQuantizeQ8_KVectorMatchesScalar checks the Q8_K quantizer (vector
// path where the CPU has one) against the plain per-block code, byte for
// byte, on blocks with ties for the largest magnitude (the first one
// sets the sign), zeros, non-finite and tiny values.
func TestQuantizeQ8_KVectorMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 53))
	scalar := func(out []byte, x []float32) {
		vmax, amax := absMax(x)
		if amax == 0 {
			clear(out)
			return
		}
		iscale := -127 / vmax
		qs := out[4:260]
		for i, v := range x {
			qs[i] = byte(int8(min(127, nearestInt(iscale*v))))
		}
		for j := 0; j < 16; j++ {
			var s int32
			for _, q := range qs[16*j : 16*j+16] {
				s += int32(int8(q))
			}
			le.PutUint16(out[260+2*j:], uint16(int16(s)))
		}
		le.PutUint32(out, math.Float32bits(1/iscale))
	}
	for iter := range 400 {
		nb := 1 + r.IntN(4)
		x := randRow(r, nb*QKK, math.Pow(10, float64(r.IntN(9)-4)))
		for b := range nb {
			blk := x[b*QKK : (b+1)*QKK]
			switch r.IntN(8) {
			case 0:
				clear(blk)
			case 1:
				blk[r.IntN(QKK)] = float32(math.NaN())
			case 2:
				blk[r.IntN(QKK)] = float32(math.Inf(1 - 2*r.IntN(2)))
			case 3:
				for i := range blk {
					blk[i] *= 1e-38
				}
			case 4: // a tie of opposite signs for the largest magnitude
				i, j := r.IntN(QKK), r.IntN(QKK)
				blk[i], blk[j] = 50, -50
			case 5:
				for i := range blk {
					blk[i] = float32(r.IntN(255)-127) / 2
				}
			}
		}
		got, want := make([]byte, nb*q8_KBytes), make([]byte, nb*q8_KBytes)
		quantizeQ8_K(got, x)
		for b := range nb {
			scalar(want[b*q8_KBytes:(b+1)*q8_KBytes], x[b*QKK:(b+1)*QKK])
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("iteration %d: byte %d (block %d, offset %d) = %#02x, want %#02x", iter, i, i/q8_KBytes, i%q8_KBytes, got[i], want[i])
			}
		}
	}
}
