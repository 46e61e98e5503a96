package quant

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDot measures every weight format's dot product on a row of 4096
// values: "ref" the pure-Go reference, "kernel" DotFor's choice (a SIMD
// kernel where Accelerated lists the type, else the reference again) and
// "multi4" MultiDotFor's on 4 activation rows. The throughput is weight
// bytes per second, each weight row counted once per call.
func BenchmarkDot(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(5, 5))
	w := randRow(r, n, 0.5)
	for _, typ := range append(dotTypes[:len(dotTypes):len(dotTypes)], iqTypes...) {
		wb := make([]byte, must(typ.RowBytes(n)))
		if formats[typ].quant == nil {
			wb = randomIQBlocks(r, typ, n/typ.BlockSize())
		} else if err := Quantize(typ, wb, w); err != nil {
			b.Fatal(err)
		}
		vt := VecDotType(typ)
		stride := must(vt.RowBytes(n))
		ab := make([]byte, MaxMultiRows*stride)
		q, err := QuantizeRowFor(vt)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < MaxMultiRows; i++ {
			q(ab[i*stride:(i+1)*stride], randRow(r, n, 2))
		}
		dot, err := DotFor(typ)
		if err != nil {
			b.Fatal(err)
		}
		multi, err := MultiDotFor(typ)
		if err != nil {
			b.Fatal(err)
		}
		ref := formats[typ].dot
		b.Run(typ.String()+"/ref", func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			var s float32
			for b.Loop() {
				s += ref(n, wb, ab)
			}
			sink = s
		})
		b.Run(typ.String()+"/kernel", func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			var s float32
			for b.Loop() {
				s += dot(n, wb, ab)
			}
			sink = s
		})
		b.Run(typ.String()+"/multi4", func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			var dst [MaxMultiRows]float32
			for b.Loop() {
				multi(n, wb, ab, stride, dst[:])
			}
			sink = dst[0]
		})
	}
}

var sink float32

// BenchmarkDotISA compares the kernel instruction sets of this CPU on the
// types whose kernels differ between them (Q8_0 and Q4_0 use VNNI where
// the CPU has it), single-row and on 4 rows, in weight bytes per second.
func BenchmarkDotISA(b *testing.B) {
	isas := testISAs()
	if len(isas) < 2 {
		b.Skip("one kernel instruction set on this CPU")
	}
	defer setISA(isas[len(isas)-1])
	const n = 4096
	r := rand.New(rand.NewPCG(5, 5))
	for _, typ := range []Type{Q8_0, Q4_0} {
		wb := make([]byte, must(typ.RowBytes(n)))
		if err := Quantize(typ, wb, randRow(r, n, 0.5)); err != nil {
			b.Fatal(err)
		}
		stride := must(Q8_0.RowBytes(n))
		ab := make([]byte, MaxMultiRows*stride)
		for i := 0; i < MaxMultiRows; i++ {
			quantizeActQ8_0(ab[i*stride:(i+1)*stride], randRow(r, n, 2))
		}
		for _, isa := range isas {
			setISA(isa)
			dot, multi := accelerated[typ], acceleratedMulti[typ]
			b.Run(typ.String()+"/"+isa, func(b *testing.B) {
				b.SetBytes(int64(len(wb)))
				var s float32
				for b.Loop() {
					s += dot(n, wb, ab)
				}
				sink = s
			})
			b.Run(typ.String()+"/"+isa+"-multi4", func(b *testing.B) {
				b.SetBytes(int64(len(wb)))
				var dst [MaxMultiRows]float32
				for b.Loop() {
					multi(n, wb, ab, stride, dst[:])
				}
				sink = dst[0]
			})
		}
	}
}

// BenchmarkTileDot compares, per weight row, the tile kernel (4 weight
// rows × 4 activation rows per call) with the multi-row kernel (1 × 4) on
// rows of 4096 values, in weight bytes per second: both compute 4 dot
// products per weight row.
func BenchmarkTileDot(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(5, 5))
	for _, typ := range []Type{Q8_0, Q4_0, Q4_K, F16} {
		tile := TileDotFor(typ)
		if tile == nil {
			b.Logf("%s: no tile kernel on this CPU", typ)
			continue
		}
		rb := must(typ.RowBytes(n))
		wb := make([]byte, TileRows*rb)
		for i := range TileRows {
			if err := Quantize(typ, wb[i*rb:(i+1)*rb], randRow(r, n, 0.5)); err != nil {
				b.Fatal(err)
			}
		}
		vt := VecDotType(typ)
		stride := must(vt.RowBytes(n))
		ab := make([]byte, TileRows*stride)
		q, err := QuantizeRowFor(vt)
		if err != nil {
			b.Fatal(err)
		}
		for i := range TileRows {
			q(ab[i*stride:(i+1)*stride], randRow(r, n, 2))
		}
		multi, err := MultiDotFor(typ)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(typ.String()+"/multi4", func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			var dst [MaxMultiRows]float32
			for b.Loop() {
				for i := range TileRows {
					multi(n, wb[i*rb:], ab, stride, dst[:])
				}
			}
			sink = dst[0]
		})
		b.Run(typ.String()+"/tile4x4", func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			dst := make([]float32, TileRows*TileRows)
			for b.Loop() {
				tile(n, wb, rb, ab, stride, TileRows, dst, TileRows)
			}
			sink = dst[0]
		})
		// Decode: one activation row against four weight rows, or four
		// single-row dot products.
		dot, err := DotFor(typ)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(typ.String()+"/dot-1x1", func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			var s float32
			for b.Loop() {
				for i := range TileRows {
					s += dot(n, wb[i*rb:], ab)
				}
			}
			sink = s
		})
		b.Run(typ.String()+"/tile4x1", func(b *testing.B) {
			b.SetBytes(int64(len(wb)))
			dst := make([]float32, TileRows)
			for b.Loop() {
				tile(n, wb, rb, ab, stride, 1, dst, TileRows)
			}
			sink = dst[0]
		})
	}
}
