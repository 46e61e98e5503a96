package quant

import (
	"math/rand/v2"
	"testing"
)

// TestDecodeRowsHalf checks DecodeRowsHalf (its vector form where the CPU
// has one) against Dequantize and FP32ToFP16, value for value, on
// strided rows of random blocks, with scales of every magnitude.
func TestDecodeRowsHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for _, typ := range []Type{Q8_0, Q4_0} {
		for _, tc := range []struct{ rows, n, extra int }{{1, 32, 0}, {3, 64, 10}, {16, 128, 100}} {
			rb, _ := typ.RowBytes(tc.n)
			stride := rb + tc.extra
			src := make([]byte, tc.rows*stride)
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			// Sensible scales, small and large, with a few specials.
			bb, _ := typ.RowBytes(QK)
			for row := range tc.rows {
				for b := range tc.n / QK {
					o := row*stride + b*bb
					s := FP32ToFP16(float32(r.NormFloat64()) * float32([]float64{1e-4, 0.01, 1, 300}[r.IntN(4)]))
					if r.IntN(20) == 0 {
						s = 0
					}
					src[o], src[o+1] = byte(s), byte(s>>8)
				}
			}
			got := make([]uint16, tc.rows*tc.n)
			DecodeRowsHalf(typ, got, src, stride, tc.rows, tc.n)
			f := make([]float32, tc.n)
			for row := range tc.rows {
				if err := Dequantize(typ, src[row*stride:], f); err != nil {
					t.Fatal(err)
				}
				for i, v := range f {
					if want := FP32ToFP16(v); got[row*tc.n+i] != want {
						t.Fatalf("%s rows %d n %d: row %d value %d: %#04x, want %#04x (%g)", typ, tc.rows, tc.n, row, i, got[row*tc.n+i], want, v)
					}
				}
			}
		}
	}
}

func BenchmarkDecodeRowsHalf(b *testing.B) {
	for _, typ := range []Type{Q8_0, Q4_0} {
		b.Run(typ.String(), func(b *testing.B) {
			rb, _ := typ.RowBytes(128)
			src := make([]byte, 16*rb)
			dst := make([]uint16, 16*64)
			b.SetBytes(int64(len(dst) * 2))
			for range b.N {
				DecodeRowsHalf(typ, dst, src, rb, 16, 64)
			}
		})
	}
}
