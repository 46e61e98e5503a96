package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ5x16MatchesVecDot repacks random Q5_0 matrices of 16 rows and checks
// the Q5_0x16 reference and, where this CPU has it, the assembly kernel
// against dotQ5_0Q8_0 on the GGUF rows, bit for bit, for 1 to 8 activation
// rows with gaps between them: the layout keeps llama.cpp's order.
func TestQ5x16MatchesVecDot(t *testing.T) {
	forEachISA(t, testQ5x16MatchesVecDot)
}

func testQ5x16MatchesVecDot(t *testing.T) {
	kernels := map[string]PackedKernel{"reference": Q5x16Reference}
	if k := q5x16Kernel; k != nil {
		kernels["kernel"] = k
	}
	rng := rand.New(rand.NewPCG(89, 97))
	for iter := range 200 {
		nb := 1 + rng.IntN(30)
		n := nb * QK
		rb := nb * q5_0Bytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if iter%2 == 0 {
				quantizeQ5_0(row, randRow(rng, n, 1))
			} else {
				for j := range row {
					row[j] = byte(rng.Uint32())
				}
				for b := range nb { // finite scales
					row[b*q5_0Bytes+1] &= 0x7b
				}
			}
		}
		packed := make([]byte, Q5x16Bytes(Q4x16Rows, n))
		if err := RepackQ5x16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_0Bytes + rng.IntN(5)
		auxstride := Q8_0x16AuxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_0Bytes)
		aux := make([]uint32, (rows-1)*auxstride+Q8_0x16AuxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_0Bytes]
			quantizeQ8_0(row, randRow(rng, n, 3))
			Q5_0x16Aux(aux[r*auxstride:], row)
		}
		dstride := Q4x16Rows + iter%3
		for name, k := range kernels {
			got := make([]float32, (rows-1)*dstride+Q4x16Rows)
			k(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
			for r := range rows {
				for i := range Q4x16Rows {
					want := dotQ5_0Q8_0(n, w[i*rb:], a[r*astride:])
					if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s nb=%d rows=%d weight row %d activation row %d: %v, want %v", name, nb, rows, i, r, g, want)
					}
				}
			}
		}
	}
}

// BenchmarkPackedKernels runs each repacked layout's kernel on a 16-row
// group of 4864 columns (a 0.5B model's FF down projection), in L2, for 8
// activation rows (prefill) and for 1 (decode), and the pair kernels for
// two groups and 8 rows, and reports multiply-adds per second.
func BenchmarkPackedKernels(b *testing.B) {
	const n = 4864
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []Type{Q4_0, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16} {
		p := FastPackedFor(typ, true)
		if p == nil || n%p.BlockSize != 0 {
			continue
		}
		rb, _ := typ.RowBytes(n)
		w := make([]byte, Q4x16Rows*rb)
		if err := Quantize(typ, w, randRow(rng, Q4x16Rows*n, 1)); err != nil {
			b.Fatal(err)
		}
		packed := make([]byte, p.Bytes(Q4x16Rows, n))
		if err := p.Repack(packed, w, Q4x16Rows, n); err != nil {
			b.Fatal(err)
		}
		qrow, _ := p.Act.RowBytes(n)
		nb := n / p.BlockSize
		a := make([]byte, PackedRows*qrow)
		aux := make([]uint32, PackedRows*p.AuxWords*nb+1)
		quant, _ := QuantizeRowFor(p.Act)
		for r := range PackedRows {
			quant(a[r*qrow:(r+1)*qrow], randRow(rng, n, 1))
			if p.Aux != nil {
				p.Aux(aux[r*p.AuxWords*nb:], a[r*qrow:(r+1)*qrow])
			}
		}
		dst := make([]float32, PackedRows*Q4x16Rows)
		for _, rows := range []int{8, 1} {
			b.Run(p.Name+map[int]string{8: "/rows8", 1: "/rows1"}[rows], func(b *testing.B) {
				for b.Loop() {
					p.Kernel(nb, packed, a, qrow, aux, p.AuxWords*nb, rows, dst, Q4x16Rows)
				}
				b.ReportMetric(float64(Q4x16Rows*n*rows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
		if p.Pair != nil { // two groups (the same bytes twice), 8 rows
			two := append(append([]byte(nil), packed...), packed...)
			dst2 := make([]float32, PackedRows*2*Q4x16Rows)
			b.Run(p.Name+"/pair8", func(b *testing.B) {
				for b.Loop() {
					p.Pair(nb, two, len(packed), a, qrow, dst2, 2*Q4x16Rows, false)
				}
				b.ReportMetric(float64(2*Q4x16Rows*n*PackedRows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}
