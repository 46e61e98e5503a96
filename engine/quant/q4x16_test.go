package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestQ4x16MatchesInterleavedDot repacks random Q4_0 matrices of 16 rows
// and checks the Q4_0x16 reference and, where this CPU has it, the
// assembly kernel against DotQ4_0Interleaved on the GGUF rows, bit for
// bit, for 1 to 8 activation rows with gaps between them, in one call and
// split in two where the second call adds to the first (Accumulate).
func TestQ4x16MatchesInterleavedDot(t *testing.T) {
	forEachISA(t, testQ4x16MatchesInterleavedDot)
}

func testQ4x16MatchesInterleavedDot(t *testing.T) {
	kernels := map[string]PackedKernel{"reference": Q4x16Reference}
	accKernels := map[string]PackedKernel{"reference": Q4x16AccReference}
	if k := q4x16Kernel; k != nil {
		kernels["kernel"] = k
		accKernels["kernel"] = q4x16AccKernel
	}
	rng := rand.New(rand.NewPCG(41, 43))
	for iter := range 300 {
		nb := 1 + rng.IntN(40)
		n := nb * QK
		rb := nb * q4_0Bytes
		w := make([]byte, Q4x16Rows*rb)
		for i := range Q4x16Rows {
			row := w[i*rb : (i+1)*rb]
			if iter%2 == 0 {
				quantizeQ4_0(row, randRow(rng, n, 1))
			} else {
				for j := range row {
					row[j] = byte(rng.Uint32())
				}
				for b := range nb { // finite scales: random bytes make NaN and Inf
					row[b*q4_0Bytes+1] &= 0x7b
				}
			}
		}
		// On a cache line (the decode kernel reads blocks in aligned
		// pairs) or half a line off it.
		packed := lineOffsetBytes(Q4x16Bytes(Q4x16Rows, n), 32*(iter/PackedRows%2))
		if err := RepackQ4x16(packed, w, Q4x16Rows, n); err != nil {
			t.Fatal(err)
		}
		rows := 1 + iter%PackedRows
		astride := nb*q8_0Bytes + rng.IntN(5)
		auxstride := Q8_0AuxWords*nb + rng.IntN(3)
		a := make([]byte, (rows-1)*astride+nb*q8_0Bytes)
		aux := make([]uint32, (rows-1)*auxstride+Q8_0AuxWords*nb)
		for r := range rows {
			row := a[r*astride : r*astride+nb*q8_0Bytes]
			quantizeQ8_0(row, randRow(rng, n, 3))
			Q8_0Aux(aux[r*auxstride:], row)
		}
		dstride := Q4x16Rows + iter%3
		if iter == 0 {
			t.Logf("kernels: %d", len(kernels))
		}
		cut := 1 + rng.IntN(nb) // blocks of the first call when split in two
		for name, k := range kernels {
			got := make([]float32, (rows-1)*dstride+Q4x16Rows)
			k(nb, packed, a, astride, aux, auxstride, rows, got, dstride)
			// The same product in two calls, the second adding to the
			// first's results.
			var parts []float32
			if acc := accKernels[name]; acc != nil && cut < nb {
				parts = make([]float32, len(got))
				k(cut, packed, a, astride, aux, auxstride, rows, parts, dstride)
				acc(nb-cut, packed[cut*Q4x16BlockBytes:], a[cut*q8_0Bytes:], astride, aux[cut*Q8_0AuxWords:], auxstride, rows, parts, dstride)
			}
			for r := range rows {
				for i := range Q4x16Rows {
					want := DotQ4_0Interleaved(n, w[i*rb:], a[r*astride:])
					if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s nb=%d rows=%d weight row %d activation row %d: %v, want %v", name, nb, rows, i, r, g, want)
					}
					if parts == nil {
						continue
					}
					if g := parts[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s split after %d of %d blocks, rows=%d weight row %d activation row %d: %v, want %v", name, cut, nb, rows, i, r, g, want)
					}
				}
			}
		}
	}
}

// TestRepackQ4x16Errors checks that shapes the layout cannot hold are
// refused, not truncated.
func TestRepackQ4x16Errors(t *testing.T) {
	for _, tc := range []struct{ rows, cols, src, dst int }{
		{8, 32, 8 * 18, 8 * 18},                    // rows not a multiple of 16
		{16, 40, 16 * 18, 16 * 18},                 // columns not a multiple of 32
		{16, 32, 16*18 - 1, 16 * 18},               // short source
		{32, 64, 32 * 36, 32*36 - Q4x16BlockBytes}, // short destination
	} {
		if err := RepackQ4x16(make([]byte, tc.dst), make([]byte, tc.src), tc.rows, tc.cols); err == nil {
			t.Errorf("%d×%d with %d/%d bytes: no error", tc.rows, tc.cols, tc.src, tc.dst)
		}
	}
}

// TestCheckRepack checks the shape and size check every 16-row repack
// shares, on 32-value blocks and on super-blocks: an empty matrix, rows
// or columns the layout cannot hold and buffers of the wrong size are
// refused with the layout's name, and a matrix that fits gives its blocks
// and row bytes.
func TestCheckRepack(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		rows, cols, values, src, dst int
		wantErr                      bool
		wantNB, wantRB               int
	}{
		{"fits", 32, 64, QK, 32 * 2 * 18, 2 * 2 * 288, false, 2, 36},
		{"super-blocks", 16, 512, QKK, 16 * 2 * 144, 2 * 2368, false, 2, 288},
		{"no rows", 0, 64, QK, 0, 0, true, 0, 0},
		{"no columns", 16, 0, QK, 0, 0, true, 0, 0},
		{"negative rows", -16, 64, QK, 0, 0, true, 0, 0},
		{"rows not a multiple of 16", 8, 64, QK, 8 * 2 * 18, 288, true, 0, 0},
		{"columns not a multiple of the block", 16, 48, QK, 16 * 18, 288, true, 0, 0},
		{"short source", 16, 64, QK, 16*2*18 - 1, 2 * 288, true, 0, 0},
		{"long destination", 16, 64, QK, 16 * 2 * 18, 2*288 + 1, true, 0, 0},
	} {
		in, out := 18, 288
		if tc.values == QKK {
			in, out = 144, 2368
		}
		nb, rb, err := checkRepack("L", make([]byte, max(tc.dst, 0)), make([]byte, max(tc.src, 0)), tc.rows, tc.cols, tc.values, in, out)
		switch {
		case tc.wantErr && err == nil:
			t.Errorf("%s: no error", tc.name)
		case tc.wantErr && !strings.Contains(err.Error(), "L repack"):
			t.Errorf("%s: %v does not name the layout", tc.name, err)
		case !tc.wantErr && (err != nil || nb != tc.wantNB || rb != tc.wantRB):
			t.Errorf("%s: %d blocks of %d row bytes, %v; want %d, %d", tc.name, nb, rb, err, tc.wantNB, tc.wantRB)
		}
	}
}

// BenchmarkQ4x16 runs the Q4_0x16 kernel on a 896×4864 group row (FF
// down projection of a 0.5B model) for 8, 4 and 1 activation rows.
func BenchmarkQ4x16(b *testing.B) {
	k := q4x16Kernel
	if k == nil {
		b.Skip("no Q4_0x16 kernel on this CPU")
	}
	const n = 4864
	nb := n / QK
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]byte, Q4x16Rows*nb*q4_0Bytes)
	for i := range Q4x16Rows {
		quantizeQ4_0(w[i*nb*q4_0Bytes:(i+1)*nb*q4_0Bytes], randRow(rng, n, 1))
	}
	packed := make([]byte, len(w))
	if err := RepackQ4x16(packed, w, Q4x16Rows, n); err != nil {
		b.Fatal(err)
	}
	a := make([]byte, PackedRows*nb*q8_0Bytes)
	aux := make([]uint32, PackedRows*Q8_0AuxWords*nb)
	for r := range PackedRows {
		row := a[r*nb*q8_0Bytes : (r+1)*nb*q8_0Bytes]
		quantizeQ8_0(row, randRow(rng, n, 3))
		Q8_0Aux(aux[r*Q8_0AuxWords*nb:], row)
	}
	dst := make([]float32, PackedRows*Q4x16Rows)
	if tile := InterleavedTileFor(Q4_0); tile != nil {
		// The same products from the GGUF layout, for comparison.
		b.Run("gguf-tile-rows4", func(b *testing.B) {
			b.SetBytes(int64(len(packed)))
			rb := nb * q4_0Bytes
			for b.Loop() {
				for g := 0; g < Q4x16Rows; g += TileRows {
					tile(n, w[g*rb:], rb, a, nb*q8_0Bytes, TileRows, dst[g:], Q4x16Rows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb*Q4x16Rows*TileRows), "ns/block-pair")
		})
	}
	for _, rows := range []int{8, 4, 1} {
		b.Run(fmt.Sprintf("rows%d", rows), func(b *testing.B) {
			b.SetBytes(int64(len(packed)))
			for b.Loop() {
				k(nb, packed, a, nb*q8_0Bytes, aux, Q8_0AuxWords*nb, rows, dst, Q4x16Rows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb*Q4x16Rows*rows), "ns/block-pair")
		})
	}
}

// TestActivationAuxSums checks the byte sums behind Q8_0Aux and
// Q8_0x16Aux against a plain loop, on random blocks and on blocks of the
// extreme quants −128 and 127.
func TestActivationAuxSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	blocks := [][]byte{make([]byte, q8_0Bytes), make([]byte, q8_0Bytes)}
	for k := 2; k < q8_0Bytes; k++ {
		blocks[0][k], blocks[1][k] = 0x80, 0x7f
	}
	for range 200 {
		y := make([]byte, q8_0Bytes)
		for k := range y {
			y[k] = byte(rng.Uint32())
		}
		y[1] &= 0x3b // a finite scale
		blocks = append(blocks, y)
	}
	for i, y := range blocks {
		aux := make([]uint32, Q8_0AuxWords)
		Q8_0Aux(aux, y)
		var s int32
		for _, q := range y[2:] {
			s += int32(int8(q))
		}
		if got := int32(aux[0]); got != -8*s {
			t.Fatalf("block %d: Q8_0Aux sum term %d, want %d", i, got, -8*s)
		}
		aux16 := make([]uint32, Q8_0x16AuxWords)
		Q8_0x16Aux(aux16, y)
		for j := range 8 {
			var s int32
			for k := range 4 {
				s += int32(int8(y[2+4*j+k]))
			}
			if got := int32(aux16[j]); got != -128*s {
				t.Fatalf("block %d group %d: Q8_0x16Aux term %d, want %d", i, j, got, -128*s)
			}
		}
	}
}

// lineOffsetBytes returns n bytes starting off bytes past a 64-byte
// boundary.
func lineOffsetBytes(n, off int) []byte {
	b := make([]byte, n+off+64)
	start := (64-int(uintptr(unsafe.Pointer(&b[0]))%64))%64 + off
	return b[start : start+n : start+n]
}
