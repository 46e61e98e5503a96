package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIQ4XSx16 repacks random IQ4_XS matrices of 16 rows and checks, for
// 1 to 8 activation rows with gaps between them, that the reference of
// the layout's order agrees with the vector dot product on the GGUF rows
// to float32 rounding (both compute the same exact sums, in other
// orders), and that the assembly kernel, where this CPU has it, equals
// the reference bit for bit, from zero and added to dst's values.
func TestIQ4XSx16(t *testing.T) {
	forEachISA(t, testIQ4XSx16)
}

func testIQ4XSx16(t *testing.T) {
	kernel, acc := iq4xsx16Kernel, iq4xsx16AccKernel
	rng := rand.New(rand.NewPCG(71, 73))
	for iter := range 120 {
		nb := 1 + rng.IntN(6)
		n := nb * QKK
		rb := nb * iq4_XSBytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if err := Quantize(IQ4_XS, row, randRow(rng, n, 1+float64(i%3))); err != nil {
				t.Fatal(err)
			}
			if iter%3 == 2 { // random quants and scales (extreme scales included)
				for b := range nb {
					for j := 2; j < iq4_XSBytes; j++ {
						row[b*iq4_XSBytes+j] = byte(rng.Uint32())
					}
				}
			}
		}
		packed := make([]byte, IQ4XSx16Bytes(Q4x16Rows, n))
		if err := RepackIQ4XSx16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_KBytes + rng.IntN(5)
		auxstride := IQ4XSx16AuxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_KBytes)
		aux := make([]uint32, (rows-1)*auxstride+IQ4XSx16AuxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_KBytes]
			x := randRow(rng, n, 3)
			if iter%7 == 3 { // saturated activations: every quant ±127
				for k := range x {
					x[k] = float32(math.Copysign(1, float64(x[k])))
				}
			}
			quantizeQ8_K(row, x)
			IQ4XSx16Aux(aux[r*auxstride:], row)
		}
		dstride := Q4x16Rows + iter%3
		want := make([]float32, (rows-1)*dstride+Q4x16Rows)
		IQ4XSx16Reference(nb, packed, a, astride, aux, auxstride, rows, want, dstride)
		x := make([]float32, n)
		for r := range rows {
			for i := range Q4x16Rows {
				vec := dotIQ4_XSQ8_K(n, w[i*rb:], a[r*astride:])
				ref := want[r*dstride+i]
				// The two orders round differently; bound the difference
				// by the size of the terms (sum of |products|).
				var scale float64
				dequantizeIQ4_XS(w[i*rb:(i+1)*rb], x)
				for b := range nb {
					d := float64(f32At(a[r*astride+b*q8_KBytes:]))
					for e := range QKK {
						scale += math.Abs(float64(x[b*QKK+e]) * d * float64(int8(a[r*astride+b*q8_KBytes+4+e])))
					}
				}
				if diff := math.Abs(float64(vec - ref)); diff > 1e-5*scale+1e-30 {
					t.Fatalf("nb=%d row %d activation row %d: layout order %v, vector order %v (terms %g)", nb, i, r, ref, vec, scale)
				}
			}
		}
		// The accumulating form: the blocks split in two ranges give the
		// whole product's bits.
		if nb > 1 {
			split := make([]float32, len(want))
			h := nb / 2
			IQ4XSx16Reference(h, packed, a, astride, aux, auxstride, rows, split, dstride)
			IQ4XSx16AccReference(nb-h, packed[h*IQ4XSx16BlockBytes:], a[h*q8_KBytes:], astride, aux[h*IQ4XSx16AuxWords:], auxstride, rows, split, dstride)
			for k := range split {
				if math.Float32bits(split[k]) != math.Float32bits(want[k]) {
					t.Fatalf("nb=%d split at %d: output %d = %v, whole %v", nb, h, k, split[k], want[k])
				}
			}
		}
		if kernel == nil {
			continue
		}
		got := make([]float32, len(want))
		for k := range got {
			got[k] = float32(k) // overwritten, not added to
		}
		kernel(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				if g, w := got[r*dstride+i], want[r*dstride+i]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("kernel nb=%d rows=%d weight row %d activation row %d: %v, reference %v", nb, rows, i, r, g, w)
				}
			}
		}
		start := make([]float32, len(want))
		for k := range start {
			start[k] = float32(rng.NormFloat64())
		}
		wantAcc, gotAcc := append([]float32(nil), start...), append([]float32(nil), start...)
		IQ4XSx16AccReference(nb, packed, a, astride, aux, auxstride, rows, wantAcc, dstride)
		acc(nb, packed, a, astride, aux, auxstride, rows, gotAcc, dstride)
		for r := range rows {
			for i := range Q4x16Rows {
				if g, w := gotAcc[r*dstride+i], wantAcc[r*dstride+i]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("accumulating kernel nb=%d rows=%d weight row %d activation row %d: %v, reference %v", nb, rows, i, r, g, w)
				}
			}
		}
	}
}

// TestRepackIQ4XSx16Errors checks that shapes the layout cannot hold are
// refused.
func TestRepackIQ4XSx16Errors(t *testing.T) {
	for _, tc := range []struct{ rows, cols, src, dst int }{
		{8, 256, 8 * 136, 8 * 140},
		{16, 128, 16 * 68, 16 * 70},
		{0, 256, 0, 0},
		{16, 256, 16*136 - 1, 2240},
		{16, 256, 16 * 136, 16 * 136},
	} {
		if err := RepackIQ4XSx16(make([]byte, tc.dst), make([]byte, tc.src), tc.rows, tc.cols); err == nil {
			t.Errorf("%d×%d with %d/%d bytes: no error", tc.rows, tc.cols, tc.src, tc.dst)
		}
	}
	if got := IQ4XSx16Bytes(32, 512); got != 2*2*IQ4XSx16BlockBytes {
		t.Errorf("IQ4XSx16Bytes(32, 512) = %d, want %d", got, 4*IQ4XSx16BlockBytes)
	}
}

// FuzzRepackIQ4XSx16 repacks arbitrary bytes as one group of 16 rows and
// checks that the layout holds each row's weights: the reference kernel
// against one-hot activations gives back every weight of the dequantized
// rows (d·(s−32)·v, exact in float32 at these sizes up to the one
// product's rounding).
func FuzzRepackIQ4XSx16(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint8(0))
	f.Add(make([]byte, 64), uint8(200))
	f.Fuzz(func(t *testing.T, seed []byte, pos uint8) {
		const nb = 1
		rb := nb * iq4_XSBytes
		w := make([]byte, Q4x16Rows*rb)
		for k := range w {
			if len(seed) > 0 {
				w[k] = seed[k%len(seed)] ^ byte(k*131)
			}
		}
		for i := range Q4x16Rows { // finite d
			h := FP32ToFP16(float32(int(w[i*rb])-128) / 64)
			w[i*rb], w[i*rb+1] = byte(h), byte(h>>8)
		}
		packed := make([]byte, IQ4XSx16Bytes(Q4x16Rows, QKK))
		if err := RepackIQ4XSx16(packed, w, Q4x16Rows, QKK); err != nil {
			t.Fatal(err)
		}
		// One activation row with a single quant 1 at element e (d_a = 1).
		e := int(pos)
		a := make([]byte, q8_KBytes)
		le.PutUint32(a, math.Float32bits(1))
		a[4+e] = 1
		le.PutUint16(a[260+2*(e/16):], 1)
		aux := make([]uint32, IQ4XSx16AuxWords)
		IQ4XSx16Aux(aux, a)
		got := make([]float32, Q4x16Rows)
		IQ4XSx16Reference(nb, packed, a, q8_KBytes, aux, IQ4XSx16AuxWords, 1, got, Q4x16Rows)
		var k PackedKernel = iq4xsx16Kernel
		var fromKernel []float32
		if k != nil {
			fromKernel = make([]float32, Q4x16Rows)
			k(nb, packed, a, q8_KBytes, aux, IQ4XSx16AuxWords, 1, fromKernel, Q4x16Rows)
		}
		x := make([]float32, QKK)
		for i := range Q4x16Rows {
			dequantizeIQ4_XS(w[i*rb:(i+1)*rb], x)
			row := w[i*rb:]
			want := f16At(row) * float32(iq4XSScale(row, e/32)*int32(iq4nlValues[nibbleIQ4(row[8:], e)]))
			if got[i] != want {
				t.Fatalf("row %d element %d: layout gives %v, want %v (dequantized %v)", i, e, got[i], want, x[e])
			}
			if fromKernel != nil && math.Float32bits(fromKernel[i]) != math.Float32bits(got[i]) {
				t.Fatalf("row %d element %d: kernel %v, reference %v", i, e, fromKernel[i], got[i])
			}
		}
	})
}

// nibbleIQ4 returns the 4-bit index of element e of an IQ4_XS block's
// quants qs.
func nibbleIQ4(qs []byte, e int) uint8 {
	c, j := e/32, e%32
	if j < 16 {
		return qs[16*c+j] & 0xf
	}
	return qs[16*c+j-16] >> 4
}

// BenchmarkIQ4XSx16 runs the IQ4_XSx16 kernel on 16 rows of 4864 values
// against 8, 4 and 1 activation rows, and the GGUF layout's multi-row
// kernel on the same products for comparison.
func BenchmarkIQ4XSx16(b *testing.B) {
	k := iq4xsx16Kernel
	if k == nil {
		b.Skip("no IQ4_XSx16 kernel on this CPU")
	}
	const n = 4864 - 4864%QKK
	nb := n / QKK
	rng := rand.New(rand.NewPCG(1, 2))
	rb := nb * iq4_XSBytes
	w := make([]byte, Q4x16Rows*rb)
	for i := range Q4x16Rows {
		if err := Quantize(IQ4_XS, w[i*rb:(i+1)*rb], randRow(rng, n, 1)); err != nil {
			b.Fatal(err)
		}
	}
	packed := make([]byte, IQ4XSx16Bytes(Q4x16Rows, n))
	if err := RepackIQ4XSx16(packed, w, Q4x16Rows, n); err != nil {
		b.Fatal(err)
	}
	a := make([]byte, PackedRows*nb*q8_KBytes)
	aux := make([]uint32, PackedRows*IQ4XSx16AuxWords*nb)
	for r := range PackedRows {
		row := a[r*nb*q8_KBytes : (r+1)*nb*q8_KBytes]
		quantizeQ8_K(row, randRow(rng, n, 3))
		IQ4XSx16Aux(aux[r*IQ4XSx16AuxWords*nb:], row)
	}
	dst := make([]float32, PackedRows*Q4x16Rows)
	pairs := func(rows int) float64 { return float64(nb * Q4x16Rows * rows) }
	if multi, err := MultiDotFor(IQ4_XS); err == nil {
		b.Run("gguf-multi-rows4", func(b *testing.B) {
			var d [MaxMultiRows]float32
			for b.Loop() {
				for i := range Q4x16Rows {
					multi(n, w[i*rb:(i+1)*rb], a, nb*q8_KBytes, d[:TileRows])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs(TileRows), "ns/block-pair")
		})
	}
	for _, rows := range []int{8, 4, 1} {
		b.Run(map[int]string{8: "rows8", 4: "rows4", 1: "rows1"}[rows], func(b *testing.B) {
			for b.Loop() {
				k(nb, packed, a, nb*q8_KBytes, aux, IQ4XSx16AuxWords*nb, rows, dst, Q4x16Rows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs(rows), "ns/block-pair")
		})
	}
}
