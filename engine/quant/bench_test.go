package quant

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkVecDot measures every weight format's dot product on a row of
// 4096 values; the reported throughput is weight bytes per second.
func BenchmarkVecDot(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(5, 5))
	w, a := randRow(r, n, 0.5), randRow(r, n, 2)
	for _, typ := range dotTypes {
		wb := make([]byte, must(typ.RowBytes(n)))
		if err := Quantize(typ, wb, w); err != nil {
			b.Fatal(err)
		}
		vt := VecDotType(typ)
		ab := make([]byte, must(vt.RowBytes(n)))
		q, err := QuantizeRowFor(vt)
		if err != nil {
			b.Fatal(err)
		}
		q(ab, a)
		dot, err := DotFor(typ)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			var s float32
			for b.Loop() {
				s += dot(n, wb, ab)
			}
			sink = s
		})
	}
}

var sink float32
