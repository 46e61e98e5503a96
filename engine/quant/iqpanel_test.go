package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// iqGridTypes are the types with an i-quant panel.
var iqGridTypes = []Type{IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S}

// TestIQGridPanel checks, for each grid i-quant, on random matrices of 16
// rows (their own quantizations, and every fourth with random index and
// sign bytes, and the IQ2 types, which quantize only with importance
// weights, random bytes throughout) against 1 to 9 activation rows with gaps between them
// (every third all −127 or 127, the quantizer's extremes), that the panel reference equals the
// vector dot product on the GGUF rows bit for bit, that the assembly
// kernel, where this CPU has it, equals the reference bit for bit, and
// that the layout's kernel and tile kernel do too.
func TestIQGridPanel(t *testing.T) {
	forEachISA(t, testIQGridPanel)
}

func testIQGridPanel(t *testing.T) {
	rng := rand.New(rand.NewPCG(79, 83))
	for _, typ := range iqGridTypes {
		g, _ := iqGridTypeOf(typ)
		for iter := range 24 {
			nb := 1 + rng.IntN(4)
			n := nb * QKK
			rb := nb * g.bytes
			groups := 1 + iter%2
			w := make([]byte, groups*Q4x16Rows*rb)
			for i := range groups * Q4x16Rows {
				row := w[i*rb : (i+1)*rb]
				// The IQ2 types quantize only with importance weights.
				if err := Quantize(typ, row, randRow(rng, n, 1+float64(i%3))); err != nil || iter%4 == 3 {
					for b := range nb {
						blk := row[b*g.bytes : (b+1)*g.bytes]
						for j := range blk {
							blk[j] = byte(rng.Uint32())
						}
						le.PutUint16(blk, FP32ToFP16(float32(0.001+0.01*rng.Float64())))
					}
				}
			}
			rows := 1 + iter%9
			astride := nb*q8_KBytes + rng.IntN(5)
			auxstride := IQGridPanelAuxWords*nb + rng.IntN(3)
			a := make([]byte, (rows-1)*astride+nb*q8_KBytes)
			aux := make([]uint32, (rows-1)*auxstride+IQGridPanelAuxWords*nb)
			for r := range rows {
				row := a[r*astride : r*astride+nb*q8_KBytes]
				quantizeQ8_K(row, randRow(rng, n, 3))
				if iter%3 == 2 {
					extremeQ8_K(row, rng, -127) // the vector kernels sign activations: −128 stays −128
				}
				IQGridPanelAux(aux[r*auxstride:], row)
			}
			dstride := groups*Q4x16Rows + iter%3
			want := make([]float32, (rows-1)*dstride+groups*Q4x16Rows)
			panel := make([]byte, nb*IQGridPanelBlockBytes)
			for k := range groups {
				decodeIQGridPanel(g, nb, w[k*Q4x16Rows*rb:], panel)
				IQGridPanelReference(nb, panel, a, astride, aux, auxstride, rows, want[k*Q4x16Rows:], dstride, g.factor)
				if iqPanelKernel != nil {
					got := make([]float32, len(want))
					iqPanelKernel(nb, panel, a, astride, aux, auxstride, rows, got[k*Q4x16Rows:], dstride, g.factor)
					for r := range rows {
						for i := range Q4x16Rows {
							if x, y := got[r*dstride+k*Q4x16Rows+i], want[r*dstride+k*Q4x16Rows+i]; math.Float32bits(x) != math.Float32bits(y) {
								t.Fatalf("%s kernel nb=%d rows=%d row %d activation row %d: %v, reference %v", typ, nb, rows, i, r, x, y)
							}
						}
					}
				}
			}
			for r := range rows {
				for i := range groups * Q4x16Rows {
					vec := VecDot(typ, n, w[i*rb:(i+1)*rb], a[r*astride:])
					if ref := want[r*dstride+i]; math.Float32bits(vec) != math.Float32bits(ref) {
						t.Fatalf("%s nb=%d row %d activation row %d: panel reference %v, vector dot %v", typ, nb, i, r, ref, vec)
					}
				}
			}
			p := IQGridPacked(typ)
			if p == nil {
				continue
			}
			got := make([]float32, len(want))
			p.Tile(nb, w, Q4x16Rows*rb, groups, a, astride, aux, auxstride, rows, got, dstride, false)
			for k := range groups {
				p.Kernel(nb, w[k*Q4x16Rows*rb:(k+1)*Q4x16Rows*rb], a, astride, aux, auxstride, min(rows, PackedRows), got[k*Q4x16Rows:], dstride)
			}
			for r := range rows {
				for i := range groups * Q4x16Rows {
					if x, y := got[r*dstride+i], want[r*dstride+i]; math.Float32bits(x) != math.Float32bits(y) {
						t.Fatalf("%s layout nb=%d rows=%d row %d activation row %d: %v, reference %v", typ, nb, rows, i, r, x, y)
					}
				}
			}
		}
	}
}

// TestGridBytesNonZero checks what putGrid8 and the panel rely on: no
// byte of a grid point is zero (putGrid8 negates bytes as one word), and
// none is above 62 (the panel kernel's four-product sums, Σ q·a, then fit
// the int16 that VPDPWSSD scales).
func TestGridBytesNonZero(t *testing.T) {
	check := func(name string, i int, g uint64, n int) {
		for j := range n {
			if b := byte(g >> (8 * j)); b == 0 || b > 62 {
				t.Fatalf("%s[%d] byte %d is %d", name, i, j, b)
			}
		}
	}
	for i, g := range iq2xxsGrid {
		check("iq2xxsGrid", i, g, 8)
	}
	for i, g := range iq2xsGrid {
		check("iq2xsGrid", i, g, 8)
	}
	for i, g := range iq2sGrid {
		check("iq2sGrid", i, g, 8)
	}
	for i, g := range iq3xxsGrid {
		check("iq3xxsGrid", i, uint64(g), 4)
	}
	for i, g := range iq3sGrid {
		check("iq3sGrid", i, uint64(g), 4)
	}
}

// BenchmarkIQGridPanel times, for each grid type, decoding a group of 16
// rows of 8 blocks (2048 columns) into a panel, and the panel kernel on
// 256 activation rows (a prompt pass), per block and row of the group.
func BenchmarkIQGridPanel(b *testing.B) {
	if iqPanelKernel == nil {
		b.Skip("no i-quant panel kernel on this CPU")
	}
	const nb, rows = 8, 256
	rng := rand.New(rand.NewPCG(3, 4))
	a := make([]byte, rows*nb*q8_KBytes)
	aux := make([]uint32, rows*IQGridPanelAuxWords*nb)
	for r := range rows {
		row := a[r*nb*q8_KBytes : (r+1)*nb*q8_KBytes]
		quantizeQ8_K(row, randRow(rng, nb*QKK, 1))
		IQGridPanelAux(aux[r*IQGridPanelAuxWords*nb:], row)
	}
	dst := make([]float32, rows*Q4x16Rows)
	for _, typ := range iqGridTypes {
		g, _ := iqGridTypeOf(typ)
		w := make([]byte, Q4x16Rows*nb*g.bytes)
		for j := range w {
			w[j] = byte(rng.Uint32())
		}
		for k := 0; k < len(w); k += g.bytes {
			le.PutUint16(w[k:], FP32ToFP16(0.01))
		}
		panel := make([]byte, nb*IQGridPanelBlockBytes)
		b.Run(typ.String()+"/decode", func(b *testing.B) {
			for b.Loop() {
				decodeIQGridPanel(g, nb, w, panel)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(nb*Q4x16Rows), "ns/block-row")
		})
		b.Run(typ.String()+"/kernel", func(b *testing.B) {
			for b.Loop() {
				iqPanelKernel(nb, panel, a, nb*q8_KBytes, aux, IQGridPanelAuxWords*nb, rows, dst, Q4x16Rows, g.factor)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(nb*Q4x16Rows*rows), "ns/block-row-row")
		})
	}
}
