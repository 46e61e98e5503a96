package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestMatMulF16NativeFP16 checks MatMul of an F16 weight with
// BuildNativeFP16: one activation row takes quant.DotHalfFP16 on the
// f16-rounded activations, two or more take quant.DotF16TinyBLAS, bit for
// bit, whatever the thread count; the backend says its products follow the
// output rows, and the prebuilt arithmetic does not.
func TestMatMulF16NativeFP16(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const in, out = 384, 40
	raw := make([]byte, 2*in*out)
	wh := make([]uint16, in*out)
	for i := range wh {
		wh[i] = quant.FP32ToFP16(float32(r.NormFloat64() * 0.05))
		binary.LittleEndian.PutUint16(raw[2*i:], wh[i])
	}
	for _, threads := range []int{1, 3} {
		b := New(Options{Threads: threads, Exact: true, Build: BuildNativeFP16})
		if !b.FollowsOutputRows() || b.Arithmetic() != "exact-native-fp16" {
			t.Fatalf("BuildNativeFP16: FollowsOutputRows %v, Arithmetic %q", b.FollowsOutputRows(), b.Arithmetic())
		}
		w, err := b.MatMulWeight(quant.F16, out, in, raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 5} {
			xs := make([]float32, n*in)
			for i := range xs {
				xs[i] = float32(r.NormFloat64())
			}
			x, d := b.New(n, in), b.New(n, out)
			b.Upload(x, xs)
			b.MatMul(d, x, w)
			got := F32(d)
			ah := make([]uint16, in)
			for i := range n {
				quant.FloatToHalf(ah, xs[i*in:(i+1)*in])
				for o := range out {
					want := quant.DotF16TinyBLAS(wh[o*in:(o+1)*in], ah)
					if n == 1 {
						want = quant.DotHalfFP16(wh[o*in:(o+1)*in], ah)
					}
					if math.Float32bits(got[i*out+o]) != math.Float32bits(want) {
						t.Fatalf("threads %d, %d rows: [%d,%d] = %g, want %g", threads, n, i, o, got[i*out+o], want)
					}
				}
			}
		}
		b.Close()
	}
	p := New(Options{Exact: true})
	defer p.Close()
	if p.FollowsOutputRows() {
		t.Error("the prebuilt arithmetic says its products follow the output rows")
	}
}
