package cpu

import (
	"fmt"
	"math"
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

// BenchmarkDecodeStream multiplies one activation row by about 512 MiB of
// repacked weights of each type with a repacked layout (the default
// mode's), in the 1B shape's FF product (8192 × 2048), so the figure is
// the bytes per second a decode step's kernel reads from memory: compare
// it with `ruvllm bench --membw`. It found the Q5_K and IQ4_XS kernels
// without one-row prefetch (18 and 24 GB/s where the others read 26-31).
// BF16 reads its compressed layout (BF16x16Z: the figure counts the BF16
// bytes it stands for), BF16-uncompressed the BF16x16 one.
func BenchmarkDecodeStream(b *testing.B) {
	const out, in, total = 8192, 2048, 512 << 20
	types := []quant.Type{quant.Q4_0, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.Q8_0, quant.IQ4_XS, quant.Q2_K, quant.Q3_K, quant.Q5_0, quant.Q5_1, quant.IQ4_NL, quant.F16, quant.BF16, quant.BF16}
	for i, typ := range types {
		plain := i > 0 && types[i-1] == typ
		name := typ.String()
		if plain {
			name += "-uncompressed"
		}
		b.Run(name, func(b *testing.B) {
			if quant.FastPackedFor(typ, true) == nil {
				b.Skipf("no repacked %s kernel on this CPU", typ)
			}
			be := New(Options{Threads: 0, NoCompression: plain})
			defer be.Close()
			r := rand.New(rand.NewPCG(1, 2))
			rb, err := typ.RowBytes(in)
			if err != nil {
				b.Fatal(err)
			}
			raw := make([]byte, out*rb)
			if err := quant.Quantize(typ, raw, randRows(r, out, in)); err != nil {
				b.Fatal(err)
			}
			ws := make([]compute.Tensor, total/len(raw))
			for i := range ws {
				if ws[i], err = be.MatMulWeight(typ, out, in, raw); err != nil {
					b.Fatal(err)
				}
			}
			x, dst := be.New(1, in), be.New(1, out)
			be.Upload(x, randRows(r, 1, in))
			b.SetBytes(int64(len(ws) * len(raw)))
			for b.Loop() {
				for _, w := range ws {
					be.MatMul(dst, x, w)
				}
			}
		})
	}
}

// TestDecodeStreamsModes checks that a decode product gives the same bits
// whether each worker reads its share as quant.DecodeStreams streams or as
// one (Options.DecodeStreams), for every layout with a stream kernel, on
// products large enough that every claim takes the streams.
func TestDecodeStreamsModes(t *testing.T) {
	const out, in = 4096, 512
	for _, typ := range []quant.Type{quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		p := quant.FastPackedFor(typ, true)
		if p == nil || p.Streams == nil {
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			rb, err := typ.RowBytes(in)
			if err != nil {
				t.Fatal(err)
			}
			raw := make([]byte, out*rb)
			if err := quant.Quantize(typ, raw, randRows(r, out, in)); err != nil {
				t.Fatal(err)
			}
			x := randRows(r, 1, in)
			var got [2][]float32
			for i, mode := range []StreamsMode{StreamsOn, StreamsOff} {
				be := New(Options{Threads: 2, DecodeStreams: mode})
				w, err := be.MatMulWeight(typ, out, in, raw)
				if err != nil {
					t.Fatal(err)
				}
				xt, dst := be.New(1, in), be.New(1, out)
				be.Upload(xt, x)
				be.MatMul(dst, xt, w)
				got[i] = make([]float32, out)
				be.Download(dst, got[i])
				be.Close()
			}
			for k := range got[0] {
				if math.Float32bits(got[0][k]) != math.Float32bits(got[1][k]) {
					t.Fatalf("output %d: %g with the streams, %g without", k, got[0][k], got[1][k])
				}
			}
		})
	}
}
