package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// laneLayout is what the tests need of a repacked layout that keeps
// llama.cpp's vector order (Q2_Kx16, Q3_Kx16): its results must equal the
// vector dot product's bit for bit.
type laneLayout struct {
	typ       Type
	rowBytes  int // GGUF bytes of a row's block
	scaleEnd  int // every third matrix gets random bytes in a block's [0, scaleEnd)
	quantize  func(dst []byte, src []float32)
	dot       func(n int, w, a []byte) float32
	bytes     func(rows, cols int) int
	repack    func(dst, src []byte, rows, cols int) error
	reference PackedKernel
	kernel    func() PackedKernel // the kernel of the instruction set set now, or nil
	auxWords  int
	aux       func(aux []uint32, a []byte)
}

var (
	q2kLayout = laneLayout{Q2_K, q2_KBytes, 80, quantizeQ2_K, dotQ2_KQ8_K, Q2Kx16Bytes, RepackQ2Kx16, Q2Kx16Reference,
		func() PackedKernel { return q2kx16Kernel }, 0, nil}
	q3kLayout = laneLayout{Q3_K, q3_KBytes, 108, quantizeQ3_K, dotQ3_KQ8_K, Q3Kx16Bytes, RepackQ3Kx16, Q3Kx16Reference,
		func() PackedKernel { return q3kx16Kernel }, Q3Kx16AuxWords, Q3Kx16Aux}
)

// TestQ2Kx16 is testLaneLayout for Q2_Kx16.
func TestQ2Kx16(t *testing.T) {
	forEachISA(t, func(t *testing.T) { testLaneLayout(t, q2kLayout, 61) })
}

// TestQ3Kx16 is testLaneLayout for Q3_Kx16.
func TestQ3Kx16(t *testing.T) {
	forEachISA(t, func(t *testing.T) { testLaneLayout(t, q3kLayout, 71) })
}

// testLaneLayout repacks random matrices of 16 rows and checks, for 1 to
// PackedRows activation rows with gaps between them, that the reference
// of the layout equals the vector dot product on the GGUF rows bit for
// bit, and that the assembly kernel, where this CPU has it, equals the
// reference bit for bit. Every third matrix has random quants and
// scales, and the activations of every fourth are all −128 or 127, the
// largest sums the integer steps must hold.
func testLaneLayout(t *testing.T, l laneLayout, seed uint64) {
	kernel := l.kernel()
	rng := rand.New(rand.NewPCG(seed, seed+6))
	for iter := range 120 {
		nb := 1 + rng.IntN(6)
		n := nb * QKK
		rb := nb * l.rowBytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			l.quantize(row, randRow(rng, n, 1+float64(i%3)))
			if iter%3 == 2 {
				for b := range nb {
					for j := range l.scaleEnd {
						row[b*l.rowBytes+j] = byte(rng.Uint32())
					}
				}
			}
		}
		packed := make([]byte, l.bytes(Q4x16Rows, n))
		if err := l.repack(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_KBytes + rng.IntN(5)
		auxstride := l.auxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_KBytes)
		aux := make([]uint32, (rows-1)*auxstride+l.auxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_KBytes]
			quantizeQ8_K(row, randRow(rng, n, 3))
			if iter%4 == 3 {
				extremeQ8_K(row, rng, -128)
			}
			if l.aux != nil {
				l.aux(aux[r*auxstride:], row)
			}
		}
		dstride := Q4x16Rows + iter%3
		want := make([]float32, (rows-1)*dstride+Q4x16Rows)
		l.reference(nb, packed, a, astride, aux, auxstride, rows, want, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				ref := want[r*dstride+i]
				if vec := l.dot(n, w[i*rb:(i+1)*rb], a[r*astride:]); math.Float32bits(vec) != math.Float32bits(ref) {
					t.Fatalf("%s nb=%d row %d activation row %d: layout reference %v, vector dot %v", l.typ, nb, i, r, ref, vec)
				}
			}
		}
		if kernel == nil {
			continue
		}
		got := make([]float32, len(want))
		for k := range got {
			got[k] = float32(k) // the kernel must not read what it writes
		}
		kernel(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				if g, w := got[r*dstride+i], want[r*dstride+i]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("%s kernel nb=%d rows=%d weight row %d activation row %d: %v, reference %v", l.typ, nb, rows, i, r, g, w)
				}
			}
		}
	}
}

// extremeQ8_K sets every quant of the Q8_K row a to lo or 127 and its
// group sums to match. The quantizer never writes −128, but the Q2_K and
// Q3_K kernels are exact for it too.
func extremeQ8_K(a []byte, rng *rand.Rand, lo int8) {
	for b := range len(a) / q8_KBytes {
		blk := a[b*q8_KBytes : (b+1)*q8_KBytes]
		for g := range QKK / 16 {
			var s int
			for e := range 16 {
				v := int8(127)
				if rng.IntN(2) == 0 {
					v = lo
				}
				blk[4+16*g+e] = byte(v)
				s += int(v)
			}
			le.PutUint16(blk[260+2*g:], uint16(int16(s)))
		}
	}
}

// TestRepackLaneLayoutErrors checks that shapes the layouts cannot hold
// are refused.
func TestRepackLaneLayoutErrors(t *testing.T) {
	for _, l := range []laneLayout{q2kLayout, q3kLayout} {
		rb, pb := l.rowBytes, l.bytes(Q4x16Rows, QKK)/Q4x16Rows
		for _, tc := range []struct{ rows, cols, src, dst int }{
			{8, 256, 8 * rb, 8 * pb},
			{16, 128, 16 * rb / 2, 16 * pb / 2},
			{16, 256, 16*rb - 1, 16 * pb},
			{16, 256, 16 * rb, 16*pb + 1},
		} {
			if err := l.repack(make([]byte, tc.dst), make([]byte, tc.src), tc.rows, tc.cols); err == nil {
				t.Errorf("%s %d×%d with %d/%d bytes: no error", l.typ, tc.rows, tc.cols, tc.src, tc.dst)
			}
		}
	}
}

// BenchmarkLaneLayouts runs the Q2_Kx16 and Q3_Kx16 kernels on 16 rows of
// 4864 values against 4 activation rows and 1.
func BenchmarkLaneLayouts(b *testing.B) {
	for _, l := range []laneLayout{q2kLayout, q3kLayout} {
		k := l.kernel()
		if k == nil {
			b.Skipf("no %s kernel on this CPU", l.typ)
		}
		const n = 4864 - 4864%QKK
		nb := n / QKK
		rng := rand.New(rand.NewPCG(1, 2))
		w := make([]byte, Q4x16Rows*nb*l.rowBytes)
		for i := range Q4x16Rows {
			l.quantize(w[i*nb*l.rowBytes:(i+1)*nb*l.rowBytes], randRow(rng, n, 1))
		}
		packed := make([]byte, l.bytes(Q4x16Rows, n))
		if err := l.repack(packed, w, Q4x16Rows, n); err != nil {
			b.Fatal(err)
		}
		a := make([]byte, TileRows*nb*q8_KBytes)
		aux := make([]uint32, TileRows*l.auxWords*nb)
		for r := range TileRows {
			row := a[r*nb*q8_KBytes : (r+1)*nb*q8_KBytes]
			quantizeQ8_K(row, randRow(rng, n, 3))
			if l.aux != nil {
				l.aux(aux[r*l.auxWords*nb:], row)
			}
		}
		dst := make([]float32, TileRows*Q4x16Rows)
		for _, rows := range []int{4, 1} {
			b.Run(l.typ.String()+map[int]string{4: "/rows4", 1: "/rows1"}[rows], func(b *testing.B) {
				for b.Loop() {
					k(nb, packed, a, nb*q8_KBytes, aux, l.auxWords*nb, rows, dst, Q4x16Rows)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb*Q4x16Rows*rows), "ns/block-pair")
			})
		}
	}
}

// FuzzLaneLayouts fills 16 rows of one or two blocks of each vector-order
// layout's weight type (Q2_K, Q3_K, Q4_1 into Q5_1x16, the grid i-quants'
// panel) with bytes from the fuzzer, every scale finite, and activation
// quants from it too (within ±127, as the quantizers write them), and
// checks that the layout's kernels, where this CPU has them, give the
// vector dot product's bits.
func FuzzLaneLayouts(f *testing.F) {
	f.Add([]byte{1, 2, 3}, []byte{9, 8}, uint8(0))
	f.Add(make([]byte, 64), []byte{0x80, 0x7f}, uint8(1))
	f.Fuzz(func(t *testing.T, seed, act []byte, pick uint8) {
		fill := func(b []byte, src []byte, salt int) {
			for k := range b {
				if len(src) > 0 {
					b[k] = src[k%len(src)] ^ byte(k*131+salt)
				}
			}
		}
		nb := 1 + int(pick%2)
		types := []Type{Q2_K, Q3_K, Q4_1, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S}
		typ := types[int(pick/2)%len(types)]
		blk := typ.BlockBytes()
		n := nb * typ.BlockSize()
		rb := n / typ.BlockSize() * blk
		w := make([]byte, Q4x16Rows*rb)
		fill(w, seed, 0)
		for k := 0; k < len(w); k += blk { // finite f16 scales where the type has them
			for _, off := range halfOffsets(typ) {
				h := FP32ToFP16(float32(int(w[k+off])-128) / 512)
				w[k+off], w[k+off+1] = byte(h), byte(h>>8)
			}
		}
		vt := VecDotType(typ)
		ab, _ := vt.RowBytes(n)
		a := make([]byte, ab)
		x := make([]float32, n)
		for k := range x {
			if len(act) > 0 {
				x[k] = float32(int8(act[k%len(act)]^byte(k*7))) / 16
			}
		}
		q, err := QuantizeRowFor(vt)
		if err != nil {
			t.Fatal(err)
		}
		q(a, x)
		p := PackedFor(typ)
		if p == nil {
			t.Skipf("no repacked %s layout on this CPU", typ)
		}
		aux := make([]uint32, p.AuxWords*nb)
		if p.Aux != nil {
			p.Aux(aux, a)
		}
		packed := w
		if p.Repack != nil {
			packed = make([]byte, p.Bytes(Q4x16Rows, n))
			if err := p.Repack(packed, w, Q4x16Rows, n); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]float32, Q4x16Rows)
		p.Kernel(nb, packed, a, ab, aux, p.AuxWords*nb, 1, got, Q4x16Rows)
		var tiled []float32
		if p.Tile != nil {
			tiled = make([]float32, Q4x16Rows)
			p.Tile(nb, packed, p.Bytes(Q4x16Rows, n), 1, a, ab, aux, p.AuxWords*nb, 1, tiled, Q4x16Rows, false)
		}
		for i := range Q4x16Rows {
			want := VecDot(typ, n, w[i*rb:(i+1)*rb], a)
			if math.Float32bits(got[i]) != math.Float32bits(want) && !(want != want && got[i] != got[i]) {
				t.Fatalf("%s row %d: layout %v, vector dot %v", typ, i, got[i], want)
			}
			if tiled != nil && math.Float32bits(tiled[i]) != math.Float32bits(want) && !(want != want && tiled[i] != tiled[i]) {
				t.Fatalf("%s row %d: tile %v, vector dot %v", typ, i, tiled[i], want)
			}
		}
	})
}

// halfOffsets are the offsets of a block's f16 scales in the types
// FuzzLaneLayouts fills.
func halfOffsets(t Type) []int {
	switch t {
	case Q2_K:
		return []int{80, 82}
	case Q3_K:
		return []int{108}
	case Q4_1:
		return []int{0, 2}
	}
	return []int{0} // the grid i-quants
}
