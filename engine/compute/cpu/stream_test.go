package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// BenchmarkPackedMatMulStream multiplies 1 and 8 activation rows by about
// 64 MiB of repacked Q4_0 weights (too much for any cache), in the two
// shapes of a 0.5B model's feed-forward products, so the figure is what
// decode steps stream from memory: bytes per second over the weights.
func BenchmarkPackedMatMulStream(b *testing.B) {
	if quant.PackedFor(quant.Q4_0) == nil {
		b.Skip("no Q4_0x16 kernel on this CPU")
	}
	for _, shape := range []struct{ out, in int }{{4864, 896}, {896, 4864}} {
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("%dx%d/rows%d", shape.out, shape.in, n), func(b *testing.B) {
				be := New(Options{Threads: 0})
				defer be.Close()
				rb, _ := quant.Q4_0.RowBytes(shape.in)
				size := shape.out * rb
				count := (64 << 20) / size
				r := rand.New(rand.NewPCG(1, 2))
				ws := make([]compute.Tensor, count)
				raw := make([]byte, size)
				for i := range raw {
					raw[i] = byte(r.Uint32())
				}
				for k := 0; k < len(raw); k += rb / (shape.in / quant.QK) {
					raw[k], raw[k+1] = 0x00, 0x20 // a small f16 scale
				}
				for i := range ws {
					w, err := be.MatMulWeight(quant.Q4_0, shape.out, shape.in, raw)
					if err != nil {
						b.Fatal(err)
					}
					ws[i] = w
				}
				x, dst := be.New(n, shape.in), be.New(n, shape.out)
				be.Upload(x, randRows(r, n, shape.in))
				b.SetBytes(int64(count * size))
				for b.Loop() {
					for _, w := range ws {
						be.MatMul(dst, x, w)
					}
				}
			})
		}
	}
}
