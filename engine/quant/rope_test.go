package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ropeValues returns n float32 values of mixed magnitude: ordinary ones,
// huge and tiny ones, subnormals and signed zeros, where rounding
// differences show.
func ropeValues(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch r.IntN(8) {
		case 0:
			v[i] = float32(r.NormFloat64() * 1e30)
		case 1:
			v[i] = float32(r.NormFloat64() * 1e-38) // subnormal range
		case 2:
			v[i] = float32(math.Copysign(0, r.NormFloat64()))
		default:
			v[i] = float32(r.NormFloat64() * 10)
		}
	}
	return v
}

// TestRoPEKernelsMatchScalar checks the vector rotations against the
// scalar formula, bit for bit, at every length up to 40 (the vector
// steps and the scalar tail), with unit-circle angles and with arbitrary
// cos and sin values (YaRN's magnitude scales them).
func TestRoPEKernelsMatchScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 40; n++ {
		for trial := range 20 {
			v := ropeValues(r, 2*n)
			cs := make([]float32, 2*n)
			cos, sin := make([]float32, n), make([]float32, n)
			for i := range n {
				if trial%2 == 0 {
					s, c := math.Sincos(r.Float64() * 1000)
					cos[i], sin[i] = float32(c), float32(s)
				} else {
					cos[i], sin[i] = ropeValues(r, 1)[0], ropeValues(r, 1)[0]
				}
				cs[2*i], cs[2*i+1] = cos[i], sin[i]
			}
			want := make([]float32, 2*n)
			for i := range n {
				x0, x1 := v[2*i], v[2*i+1]
				want[2*i] = float32(math.FMA(float64(x0), float64(cos[i]), -float64(x1*sin[i])))
				want[2*i+1] = float32(math.FMA(float64(x0), float64(sin[i]), float64(x1*cos[i])))
			}
			got := append([]float32(nil), v...)
			RoPEPairs(got, cs)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("RoPEPairs n=%d value %d: %v, want %v", n, i, got[i], want[i])
				}
			}
			// The same rotation in the halves layout.
			lo, hi := make([]float32, n), make([]float32, n)
			for i := range n {
				lo[i], hi[i] = v[2*i], v[2*i+1]
			}
			RoPEHalves(lo, hi, cos, sin)
			for i := range n {
				if math.Float32bits(lo[i]) != math.Float32bits(want[2*i]) || math.Float32bits(hi[i]) != math.Float32bits(want[2*i+1]) {
					t.Fatalf("RoPEHalves n=%d pair %d: %v %v, want %v %v", n, i, lo[i], hi[i], want[2*i], want[2*i+1])
				}
			}
		}
	}
}

func BenchmarkRoPE(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	v, cs := ropeValues(r, 64), ropeValues(r, 64)
	b.Run("pairs64", func(b *testing.B) {
		for b.Loop() {
			RoPEPairs(v, cs)
		}
	})
	b.Run("halves32", func(b *testing.B) {
		for b.Loop() {
			RoPEHalves(v[:32], v[32:], cs[:32], cs[32:])
		}
	})
}
