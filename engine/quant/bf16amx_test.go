package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bf16AMXCase is a random BF16 matrix of groups·16 rows in the BF16x16
// layout and rows bf16 activation rows with gaps between them.
type bf16AMXCase struct {
	nb, groups, rows, astride int
	w                         []byte      // GGUF layout
	packed                    []byte      // BF16x16
	a                         []byte      // activation rows, astride bytes apart
	wv, av                    [][]float32 // the values as float32, by row
}

func newBF16AMXCase(t *testing.T, rng *rand.Rand, nb, groups, rows int) bf16AMXCase {
	t.Helper()
	n := nb * QK
	c := bf16AMXCase{nb: nb, groups: groups, rows: rows, astride: 2*n + 2*rng.IntN(40)}
	c.w = make([]byte, groups*Q4x16Rows*n*2)
	if err := Quantize(BF16, c.w, randRow(rng, groups*Q4x16Rows*n, 0.5)); err != nil {
		t.Fatal(err)
	}
	c.packed = make([]byte, F16x16Bytes(groups*Q4x16Rows, n))
	if err := RepackBF16x16(c.packed, c.w, groups*Q4x16Rows, n); err != nil {
		t.Fatal(err)
	}
	for i := range groups * Q4x16Rows {
		row := make([]float32, n)
		for k := range row {
			row[k] = BF16ToFP32(le.Uint16(c.w[2*(i*n+k):]))
		}
		c.wv = append(c.wv, row)
	}
	c.a = make([]byte, (rows-1)*c.astride+2*n)
	for r := range rows {
		row := randRow(rng, n, 2)
		for k, x := range row {
			h := FP32ToBF16(x)
			le.PutUint16(c.a[r*c.astride+2*k:], h)
			row[k] = BF16ToFP32(h)
		}
		c.av = append(c.av, row)
	}
	return c
}

// TestBF16x16AMXTile checks the AMX tile kernel where this machine runs it:
// every output within float32 summation rounding of the float64 dot
// product of its rows; every output the same bits whichever other rows
// and groups share its call (1 to 32 activation rows, pairs of groups and
// a group alone), so that a prompt, a batch and decode agree; a product
// split into two ranges of blocks, the second adding to the first, the
// same bits as in one call; and the layout's one-group Kernel and
// Accumulate the tile's.
func TestBF16x16AMXTile(t *testing.T) {
	p := FastPackedFor(BF16, true)
	if p == nil || p.Tile == nil {
		t.Skip("no AMX-BF16 tiles here (CPU or OS)")
	}
	rng := rand.New(rand.NewPCG(211, 223))
	for _, tc := range []struct{ nb, groups, rows int }{
		{1, 1, 1}, {1, 2, 1}, {3, 1, 7}, {3, 2, 16}, {5, 2, 17}, {2, 1, 31}, {8, 2, 32}, {64, 2, 32}, {64, 1, 9},
		{3, 3, 1}, {2, 5, 17}, {4, 6, 32}, {12, 7, 3},
	} {
		c := newBF16AMXCase(t, rng, tc.nb, tc.groups, tc.rows)
		n, gb := tc.nb*QK, tc.nb*F16x16BlockBytes
		dstride := tc.groups*Q4x16Rows + 5
		got := make([]float32, (tc.rows-1)*dstride+tc.groups*Q4x16Rows)
		p.Tile(tc.nb, c.packed, gb, tc.groups, c.a, c.astride, nil, 0, tc.rows, got, dstride, false)
		for r := range tc.rows {
			for i := range tc.groups * Q4x16Rows {
				var exact, mag float64
				for k := range n {
					prod := float64(c.wv[i][k]) * float64(c.av[r][k])
					exact += prod
					mag += math.Abs(prod)
				}
				g := got[r*dstride+i]
				if tol := float64(n) * 0x1p-24 * mag; math.Abs(float64(g)-exact) > tol {
					t.Fatalf("nb=%d groups=%d rows=%d: act %d row %d = %v, float64 %v (tolerance %g)", tc.nb, tc.groups, tc.rows, r, i, g, exact, tol)
				}
				// Alone in its call: one row, one group.
				var one [Q4x16Rows]float32
				gi := i / Q4x16Rows
				p.Tile(tc.nb, c.packed[gi*gb:], gb, 1, c.a[r*c.astride:], c.astride, nil, 0, 1, one[:], Q4x16Rows, false)
				if o := one[i%Q4x16Rows]; math.Float32bits(o) != math.Float32bits(g) {
					t.Fatalf("nb=%d groups=%d rows=%d: act %d row %d = %v in the call, %v alone", tc.nb, tc.groups, tc.rows, r, i, g, o)
				}
			}
		}
		if tc.nb > 1 {
			split := make([]float32, len(got))
			h := tc.nb / 2
			p.Tile(h, c.packed, gb, tc.groups, c.a, c.astride, nil, 0, tc.rows, split, dstride, false)
			p.Tile(tc.nb-h, c.packed[h*F16x16BlockBytes:], gb, tc.groups, c.a[h*QK*2:], c.astride, nil, 0, tc.rows, split, dstride, true)
			if !sameBits(split, got) {
				t.Fatalf("nb=%d groups=%d rows=%d: split at block %d differs from one call", tc.nb, tc.groups, tc.rows, h)
			}
		}
		kern := make([]float32, len(got))
		for gi := range tc.groups {
			p.Kernel(tc.nb, c.packed[gi*gb:(gi+1)*gb], c.a, c.astride, nil, 0, tc.rows, kern[gi*Q4x16Rows:], dstride)
		}
		if !sameBits(kern, got) {
			t.Fatalf("nb=%d groups=%d rows=%d: Kernel differs from Tile", tc.nb, tc.groups, tc.rows)
		}
	}
}

// BenchmarkBF16x16AMX multiplies 32 activation rows (a prompt) and 1
// (decode) by a 2048-wide BF16 matrix of 256 rows in L2, with the AMX
// tiles and with the AVX512-BF16 kernels, and reports multiply-adds per
// second on one core.
func BenchmarkBF16x16AMX(b *testing.B) {
	const nb, groups = 64, 16
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]byte, groups*Q4x16Rows*nb*QK*2)
	if err := Quantize(BF16, w, randRow(rng, groups*Q4x16Rows*nb*QK, 1)); err != nil {
		b.Fatal(err)
	}
	packed := make([]byte, len(w))
	if err := RepackBF16x16(packed, w, groups*Q4x16Rows, nb*QK); err != nil {
		b.Fatal(err)
	}
	a := make([]byte, 32*nb*QK*2)
	for i := 0; i < len(a); i += 2 {
		le.PutUint16(a[i:], FP32ToBF16(float32(rng.NormFloat64())))
	}
	gb, astride := nb*F16x16BlockBytes, nb*QK*2
	dst := make([]float32, 32*groups*Q4x16Rows)
	for _, amx := range []bool{true, false} {
		p := FastPackedFor(BF16, amx)
		if !amx {
			p = bf16x16Packed() // the bytes above are BF16x16
		}
		if p == nil || amx && p.Tile == nil {
			continue
		}
		for _, rows := range []int{32, 1} {
			b.Run(p.Name+map[int]string{32: "/rows32", 1: "/rows1"}[rows], func(b *testing.B) {
				for b.Loop() {
					if p.Tile != nil {
						p.Tile(nb, packed, gb, groups, a, astride, nil, 0, rows, dst, groups*Q4x16Rows, false)
						continue
					}
					for g := range groups {
						for r := 0; r < rows; r += PackedRows {
							p.Kernel(nb, packed[g*gb:(g+1)*gb], a[r*astride:], astride, nil, 0, min(PackedRows, rows-r), dst[r*groups*Q4x16Rows+g*Q4x16Rows:], groups*Q4x16Rows)
						}
					}
				}
				b.ReportMetric(float64(rows*groups*Q4x16Rows*nb*QK)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}

// TestBF16x16AMXConcurrent runs the AMX tile kernel on several goroutines
// at once while the garbage collector and preemption signals run, as a
// daemon's workers do: the tile state lives in each OS thread and the
// kernel configures and releases it on every call, so every result must
// equal the one computed alone, bit for bit, whichever thread a call ran
// on and whatever interrupted it.
func TestBF16x16AMXConcurrent(t *testing.T) {
	p := FastPackedFor(BF16, true)
	if p == nil || p.Tile == nil {
		t.Skip("no AMX-BF16 tiles here (CPU or OS)")
	}
	rng := rand.New(rand.NewPCG(227, 229))
	c := newBF16AMXCase(t, rng, 16, 2, 32)
	gb := c.nb * F16x16BlockBytes
	want := make([]float32, 32*32)
	p.Tile(c.nb, c.packed, gb, 2, c.a, c.astride, nil, 0, 32, want, 32, false)
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
				p.Tile(c.nb, c.packed, gb, 2, c.a, c.astride, nil, 0, 32, got, 32, false)
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
