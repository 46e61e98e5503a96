package quant

import (
	"maps"
	"math"
	"math/rand/v2"
	"testing"
)

// TestTileDotMatchesReference checks every tile kernel this CPU has
// against the pure-Go reference dot product of each of its 16 (weight
// row, activation row) pairs, bit for bit: rows of quantized values and
// rows of random bytes (every quant and scale pattern), with strides
// that leave gaps between rows.
func TestTileDotMatchesReference(t *testing.T) {
	forEachISA(t, testTileDotMatchesReference)
}

func testTileDotMatchesReference(t *testing.T) {
	if len(acceleratedTile) == 0 {
		t.Skip("no tile kernels on this CPU and instruction set")
	}
	rng := rand.New(rand.NewPCG(23, 29))
	for typ, tile := range acceleratedTile {
		f := formats[typ]
		act := activationEncoder(t, f.vecDot)
		for iter := range 200 {
			n := typ.BlockSize() * (1 + rng.IntN(20))
			if typ.BlockSize() == 1 {
				n = 1 + rng.IntN(300) // float formats: any length, tails included
			}
			wrb, arb := must(typ.RowBytes(n)), must(f.vecDot.RowBytes(n))
			wstride, astride := wrb+rng.IntN(5), arb+rng.IntN(5)
			w := make([]byte, (TileRows-1)*wstride+wrb)
			a := make([]byte, (TileRows-1)*astride+arb)
			for i := range TileRows {
				row := w[i*wstride : i*wstride+wrb]
				if iter%2 == 0 {
					if err := Quantize(typ, row, randRow(rng, n, 1)); err != nil {
						t.Fatal(err)
					}
				} else {
					for j := range row {
						row[j] = byte(rng.Uint32())
					}
				}
				act(a[i*astride:i*astride+arb], randRow(rng, n, 3))
			}
			rows := 1 + iter%TileRows
			dstride := TileRows + iter%3
			got := make([]float32, (rows-1)*dstride+TileRows)
			tile(n, w, wstride, a, astride, rows, got, dstride)
			for i := range TileRows {
				for r := range rows {
					want := f.dot(n, w[i*wstride:], a[r*astride:])
					if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
						t.Fatalf("%s n=%d rows=%d weight row %d activation row %d: tile %v, reference %v", typ, n, rows, i, r, g, want)
					}
				}
			}
		}
	}
}

// TestTileDotShortBuffers checks that a tile kernel panics, before
// reading, on buffers shorter than its rows and on row counts outside
// 1..TileRows.
func TestTileDotShortBuffers(t *testing.T) {
	tiles := maps.Clone(acceleratedTile)
	if k := InterleavedTileFor(IQ4_NL); k != nil {
		tiles[IQ4_NL] = k
	}
	for typ, tile := range tiles {
		n := 2 * typ.BlockSize()
		wrb, arb := must(typ.RowBytes(n)), must(VecDotType(typ).RowBytes(n))
		for _, c := range []struct{ w, a, rows int }{
			{3*wrb + wrb - 1, 4 * arb, 4}, {4 * wrb, 3*arb + arb - 1, 4}, {4 * wrb, arb - 1, 1}, {4 * wrb, 4 * arb, 0}, {4 * wrb, 8 * arb, 5},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s: %d weight bytes, %d activation bytes, %d rows: no panic", typ, c.w, c.a, c.rows)
					}
				}()
				tile(n, make([]byte, c.w), wrb, make([]byte, c.a), arb, c.rows, make([]float32, 4*TileRows), TileRows)
			}()
		}
	}
}

// TestInterleavedTileMatchesReference checks the interleaved-order tile
// kernels bit for bit against their references (and the Go tiles of
// InterleavedTileReference), and that the order differs from the vector
// dot product's (else the test would prove nothing about which order the
// kernel follows).
func TestInterleavedTileMatchesReference(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		for _, typ := range []Type{Q4_0, Q8_0, IQ4_NL} {
			tile := InterleavedTileFor(typ)
			if tile == nil {
				t.Logf("no interleaved %s tile kernel on this CPU and instruction set", typ)
				continue
			}
			ref := InterleavedTileReference(typ)
			dot := map[Type]DotFunc{Q4_0: DotQ4_0Interleaved, Q8_0: DotQ8_0Interleaved, IQ4_NL: DotIQ4_NLInterleaved}[typ]
			rng := rand.New(rand.NewPCG(31, 37))
			act := activationEncoder(t, Q8_0)
			differs := 0
			for iter := range 300 {
				n := QK * (1 + rng.IntN(40))
				wrb, arb := must(typ.RowBytes(n)), must(Q8_0.RowBytes(n))
				wstride, astride := wrb+rng.IntN(5), arb+rng.IntN(5)
				w := make([]byte, (TileRows-1)*wstride+wrb)
				a := make([]byte, (TileRows-1)*astride+arb)
				for i := range TileRows {
					if err := Quantize(typ, w[i*wstride:i*wstride+wrb], randRow(rng, n, 1)); err != nil {
						t.Fatal(err)
					}
					act(a[i*astride:i*astride+arb], randRow(rng, n, 3))
				}
				rows := 1 + iter%TileRows
				dstride := TileRows + iter%3
				got := make([]float32, (rows-1)*dstride+TileRows)
				goRef := make([]float32, len(got))
				tile(n, w, wstride, a, astride, rows, got, dstride)
				ref(n, w, wstride, a, astride, rows, goRef, dstride)
				for i := range TileRows {
					for r := range rows {
						want := dot(n, w[i*wstride:], a[r*astride:])
						if g := got[r*dstride+i]; math.Float32bits(g) != math.Float32bits(want) || math.Float32bits(goRef[r*dstride+i]) != math.Float32bits(want) {
							t.Fatalf("%s n=%d rows=%d weight row %d activation row %d: tile %v, Go tile %v, reference %v", typ, n, rows, i, r, g, goRef[r*dstride+i], want)
						}
						if want != formats[typ].dot(n, w[i*wstride:], a[r*astride:]) {
							differs++
						}
					}
				}
			}
			if differs == 0 {
				t.Errorf("%s: the interleaved order never differed from the vector dot product's", typ)
			}
		}
	})
}
