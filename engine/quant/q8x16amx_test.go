package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// q8AMXCase is a random Q8_0 matrix of groups·16 rows in the Q8_0x16
// layout and rows Q8_0 activation rows with gaps between them, with
// their Q8_0x16SumAux words.
type q8AMXCase struct {
	nb, groups, rows, astride, auxstride int
	w, packed, a                         []byte
	aux                                  []uint32
}

// newQ8AMXCase builds a case: quantized values, or (raw) random bytes
// with finite scales, activations included (−128 quants too).
func newQ8AMXCase(t *testing.T, rng *rand.Rand, nb, groups, rows int, raw bool) q8AMXCase {
	t.Helper()
	n := nb * QK
	c := q8AMXCase{nb: nb, groups: groups, rows: rows, astride: nb*q8_0Bytes + rng.IntN(7), auxstride: nb*Q8_0x16SumAuxWords + rng.IntN(3)}
	fill := func(dst []byte, values int, scale float64) {
		if !raw {
			if err := Quantize(Q8_0, dst, randRow(rng, values, scale)); err != nil {
				t.Fatal(err)
			}
			return
		}
		for i := range dst {
			dst[i] = byte(rng.Uint32())
		}
		for b := 0; b+1 < len(dst); b += q8_0Bytes {
			dst[b+1] &= 0x3b // a finite, moderate f16 scale
		}
	}
	c.w = make([]byte, groups*Q4x16Rows*nb*q8_0Bytes)
	fill(c.w, groups*Q4x16Rows*n, 1)
	c.packed = make([]byte, Q8x16Bytes(groups*Q4x16Rows, n))
	if err := RepackQ8x16(c.packed, c.w, groups*Q4x16Rows, n); err != nil {
		t.Fatal(err)
	}
	c.a = make([]byte, (rows-1)*c.astride+nb*q8_0Bytes)
	c.aux = make([]uint32, (rows-1)*c.auxstride+nb*Q8_0x16SumAuxWords)
	for r := range rows {
		row := c.a[r*c.astride:][:nb*q8_0Bytes]
		fill(row, n, 3)
		Q8_0x16SumAux(c.aux[r*c.auxstride:][:nb*Q8_0x16SumAuxWords], row)
	}
	return c
}

// want is the reference's outputs of group g for every row, dstride
// apart.
func (c q8AMXCase) want(g, dstride int) []float32 {
	gb := c.nb * Q8x16BlockBytes
	out := make([]float32, (c.rows-1)*dstride+Q4x16Rows)
	for r := range c.rows {
		Q8x16AMXReference(c.nb, c.packed[g*gb:(g+1)*gb], c.a[r*c.astride:], c.astride, c.aux[r*c.auxstride:], c.auxstride, 1, out[r*dstride:], dstride)
	}
	return out
}

// TestQ8x16AMXReference checks the reference of the Q8_0x16AMX order:
// every output is DotQ8_0Interleaved's (llama.cpp's AMX order, which the
// exact mode follows on CPUs with AMX-INT8) on the GGUF rows, bit for
// bit, and within float32 rounding of the float64 dot product of the
// dequantized rows (the integer sums are exact, so only the float32 steps
// round: one conversion and one multiply-add per block).
func TestQ8x16AMXReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(211, 223))
	for iter := range 20 {
		c := newQ8AMXCase(t, rng, 1+rng.IntN(9), 1, 1+rng.IntN(3), iter%2 == 1)
		got := c.want(0, Q4x16Rows)
		n := c.nb * QK
		for r := range c.rows {
			for i := range Q4x16Rows {
				var sum, mag float64
				for b := range c.nb {
					wb := c.w[(i*c.nb+b)*q8_0Bytes:][:q8_0Bytes]
					ab := c.a[r*c.astride+b*q8_0Bytes:][:q8_0Bytes]
					d := float64(f16At(wb)) * float64(f16At(ab))
					for k := range QK {
						p := d * float64(int8(wb[2+k])) * float64(int8(ab[2+k]))
						sum, mag = sum+p, mag+math.Abs(p)
					}
				}
				if diff := math.Abs(float64(got[r*Q4x16Rows+i]) - sum); diff > 1e-6*mag+1e-30 {
					t.Fatalf("iter %d (n=%d) row %d weight row %d: %v, float64 %v (|terms| %v)", iter, n, r, i, got[r*Q4x16Rows+i], sum, mag)
				}
				want := DotQ8_0Interleaved(n, c.w[i*c.nb*q8_0Bytes:], c.a[r*c.astride:])
				if g := got[r*Q4x16Rows+i]; math.Float32bits(g) != math.Float32bits(want) {
					t.Fatalf("iter %d (n=%d) row %d weight row %d: %v, llama.cpp's AMX order %v", iter, n, r, i, g, want)
				}
			}
		}
	}
}

// TestQ8x16AMXKernels checks the Q8_0x16AMX kernels where this machine
// runs them (AMX-INT8): the one-row kernel and the tile kernel, for 1 to
// 16 activation rows and 1 to 3 groups, every output the reference's bit
// for bit, so a token's outputs are the same whichever batch computes
// them; and a tile product split into two ranges of blocks, the second
// adding to the first, the same bits as one call.
func TestQ8x16AMXKernels(t *testing.T) {
	p := q8x16AMXPacked()
	if p == nil {
		t.Skip("no AMX-INT8 tiles on this CPU or OS: the Q8_0x16AMX layout is not used here")
	}
	if FastPackedFor(Q8_0, true).Name != "Q8_0x16AMX" || FastPackedFor(Q8_0, false).Name != "Q8_0x16" || PackedFor(Q8_0).Name != "Q8_0x16" {
		t.Fatalf("layouts: default with AMX %s, without %s, exact %s", FastPackedFor(Q8_0, true).Name, FastPackedFor(Q8_0, false).Name, PackedFor(Q8_0).Name)
	}
	if p.TakesTile(1) || !p.TakesTile(2) {
		t.Fatalf("Q8_0x16AMX: one row takes the tiles %v, two %v; want decode on the VNNI kernel and batches on the tiles", p.TakesTile(1), p.TakesTile(2))
	}
	rng := rand.New(rand.NewPCG(227, 229))
	for _, tc := range []struct{ nb, groups, rows int }{
		{1, 1, 1}, {1, 1, 16}, {2, 3, 2}, {7, 2, 5}, {64, 2, 8}, {5, 3, 16}, {3, 1, 9}, {12, 2, 3}, {4, 3, 13},
	} {
		for _, raw := range []bool{false, true} {
			t.Run(fmt.Sprintf("nb%d-g%d-r%d-raw%v", tc.nb, tc.groups, tc.rows, raw), func(t *testing.T) {
				c := newQ8AMXCase(t, rng, tc.nb, tc.groups, tc.rows, raw)
				gb := c.nb * Q8x16BlockBytes
				dstride := tc.groups*Q4x16Rows + rng.IntN(5)
				want := make([][]float32, tc.groups)
				for g := range want {
					want[g] = c.want(g, dstride)
				}
				check := func(name string, got []float32) {
					t.Helper()
					for g := range tc.groups {
						for r := range tc.rows {
							for i := range Q4x16Rows {
								gv, wv := got[r*dstride+g*Q4x16Rows+i], want[g][r*dstride+i]
								if math.Float32bits(gv) != math.Float32bits(wv) {
									t.Fatalf("%s: group %d row %d weight row %d: %v, want %v", name, g, r, i, gv, wv)
								}
							}
						}
					}
				}
				// The one-row kernel, each row alone and in one call.
				got := make([]float32, (tc.rows-1)*dstride+tc.groups*Q4x16Rows)
				for g := range tc.groups {
					for r := range tc.rows {
						p.Kernel(c.nb, c.packed[g*gb:(g+1)*gb], c.a[r*c.astride:], c.astride, c.aux[r*c.auxstride:], c.auxstride, 1, got[r*dstride+g*Q4x16Rows:], dstride)
					}
				}
				check("Kernel", got)
				if tc.rows <= PackedRows {
					clear(got)
					for g := range tc.groups {
						p.Kernel(c.nb, c.packed[g*gb:(g+1)*gb], c.a, c.astride, c.aux, c.auxstride, tc.rows, got[g*Q4x16Rows:], dstride)
					}
					check("Kernel, rows together", got)
				}
				// The tiles, all rows and groups in one call.
				clear(got)
				p.Tile(c.nb, c.packed, gb, tc.groups, c.a, c.astride, c.aux, c.auxstride, tc.rows, got, dstride, false)
				check("Tile", got)
				// Split into two ranges of blocks.
				if c.nb > 1 {
					h := 1 + rng.IntN(c.nb-1)
					clear(got)
					p.Tile(h, c.packed, gb, tc.groups, c.a, c.astride, c.aux, c.auxstride, tc.rows, got, dstride, false)
					p.Tile(c.nb-h, c.packed[h*Q8x16BlockBytes:], gb, tc.groups, c.a[h*q8_0Bytes:], c.astride,
						c.aux[h*Q8_0x16SumAuxWords:], c.auxstride, tc.rows, got, dstride, true)
					check(fmt.Sprintf("Tile split at block %d", h), got)
				}
			})
		}
	}
}

// TestQ8x16AMXConcurrent runs the tile kernel on four goroutines at once
// while the collector runs (preemption signals interrupt the tile
// instructions, and the OS must save and restore each thread's tile
// state): every call's results equal the first's, bit for bit.
func TestQ8x16AMXConcurrent(t *testing.T) {
	p := q8x16AMXPacked()
	if p == nil {
		t.Skip("no AMX-INT8 tiles here (CPU or OS)")
	}
	rng := rand.New(rand.NewPCG(233, 239))
	c := newQ8AMXCase(t, rng, 24, 3, 16, false)
	gb := c.nb * Q8x16BlockBytes
	dstride := 3 * Q4x16Rows
	want := make([]float32, 16*dstride)
	p.Tile(c.nb, c.packed, gb, 3, c.a, c.astride, c.aux, c.auxstride, 16, want, dstride, false)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			got := make([]float32, len(want))
			var junk [][]byte
			for i := range 300 {
				junk = append(junk, make([]byte, 1<<14)) // keep the collector busy
				if len(junk) > 64 {
					junk = junk[:0]
				}
				p.Tile(c.nb, c.packed, gb, 3, c.a, c.astride, c.aux, c.auxstride, 16, got, dstride, false)
				if !sameBits(got, want) {
					errs <- fmt.Errorf("call %d: results differ from the first call's", i)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkQ8x16AMX runs the Q8_0x16AMX kernels on groups of 4864
// columns (a 0.5B model's FF down projection) in L2: the tile kernel for
// 2, 4, 8 and 16 activation rows and the one-row kernel, in
// multiply-adds per second.
func BenchmarkQ8x16AMX(b *testing.B) {
	p := q8x16AMXPacked()
	if p == nil {
		b.Skip("no AMX-INT8 tiles here")
	}
	const n, groups = 4864, 4
	rng := rand.New(rand.NewPCG(1, 2))
	nb := n / QK
	w := make([]byte, groups*Q4x16Rows*nb*q8_0Bytes)
	if err := Quantize(Q8_0, w, randRow(rng, groups*Q4x16Rows*n, 1)); err != nil {
		b.Fatal(err)
	}
	packed := make([]byte, Q8x16Bytes(groups*Q4x16Rows, n))
	if err := RepackQ8x16(packed, w, groups*Q4x16Rows, n); err != nil {
		b.Fatal(err)
	}
	qrow := nb * q8_0Bytes
	a := make([]byte, 16*qrow)
	aux := make([]uint32, 16*nb*Q8_0x16SumAuxWords)
	for r := range 16 {
		if err := Quantize(Q8_0, a[r*qrow:(r+1)*qrow], randRow(rng, n, 1)); err != nil {
			b.Fatal(err)
		}
		Q8_0x16SumAux(aux[r*nb*Q8_0x16SumAuxWords:], a[r*qrow:(r+1)*qrow])
	}
	dst := make([]float32, 16*groups*Q4x16Rows)
	gb := nb * Q8x16BlockBytes
	for _, rows := range []int{1, 2, 4, 8, 16} {
		b.Run(fmt.Sprintf("rows%d", rows), func(b *testing.B) {
			for b.Loop() {
				if rows == 1 {
					for g := range groups {
						p.Kernel(nb, packed[g*gb:(g+1)*gb], a, qrow, aux, nb*Q8_0x16SumAuxWords, 1, dst[g*Q4x16Rows:], groups*Q4x16Rows)
					}
					continue
				}
				p.Tile(nb, packed, gb, groups, a, qrow, aux, nb*Q8_0x16SumAuxWords, rows, dst, groups*Q4x16Rows, false)
			}
			b.ReportMetric(float64(groups*Q4x16Rows*n*rows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
