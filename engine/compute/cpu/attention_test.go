package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestDot4BitExact checks that the four-key dot products equal one-key
// loops summing in element order, bit for bit: attention scores must not
// depend on how many keys a loop takes at once.
func TestDot4BitExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, hd := range []int{1, 3, 64, 80, 128, 256} {
		q := make([]float32, hd)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		var k16 [4][]uint16
		var k32 [4][]float32
		for u := range k16 {
			k16[u], k32[u] = make([]uint16, hd+5), make([]float32, hd+5) // longer rows, as in the KV store
			for i := range k16[u] {
				k32[u][i] = float32(r.NormFloat64() * 3)
				k16[u][i] = quant.FP32ToFP16(k32[u][i])
			}
		}
		got16 := dot4F16(q, k16[0], k16[1], k16[2], k16[3])
		got32 := dot4F32(q, k32[0], k32[1], k32[2], k32[3])
		for u := range 4 {
			var want16, want32 float32
			for e, x := range q {
				want16 += x * quant.FP16ToFP32(k16[u][e])
				want32 += x * k32[u][e]
			}
			if got16[u] != want16 || got32[u] != want32 {
				t.Errorf("hd %d key %d: f16 %v want %v, f32 %v want %v", hd, u, got16[u], want16, got32[u], want32)
			}
		}
	}
}
