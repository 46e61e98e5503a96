package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestIQGridTables pins the generated i-quant tables to the SHA-256
// digests tools/iqgrids printed when it copied them from llama.cpp, and
// checks the properties the formats rely on.
func TestIQGridTables(t *testing.T) {
	digest := func(words any) string {
		h := sha256.New()
		binary.Write(h, binary.LittleEndian, words)
		return fmt.Sprintf("%x", h.Sum(nil))
	}
	for _, c := range []struct {
		name  string
		words any
		want  string
	}{
		{"iq2xxsGrid", iq2xxsGrid, "05826b5d3e472a3a78f196be62ac78acf81df0f909626e12ab9fa2a5d490dd54"},
		{"iq2xsGrid", iq2xsGrid, "06e47aaca60b4dc1d9b5a3f34540437058a6b142b4d7a59d5ded769b4d1bf1de"},
		{"iq2sGrid", iq2sGrid, "e1aa1473412b0552c2174c30ef22ab4073f6a181b85a17056e8249bd2932fd88"},
		{"iq3xxsGrid", iq3xxsGrid, "46e35f5a997efdee6c99ce57854c8a0d4f0ff8ca57e5e8a60c0793ea580acf5d"},
		{"iq3sGrid", iq3sGrid, "bd1af4945a1717c65610b0284e4628b9a1ba3b306fae3a06f6e5f597356e349f"},
		{"iq1sGrid", iq1sGrid, "07540ffc1aeaf6ad4d97e96b0fcc765aae39671d4ae4a27bbd0e796fde167c6a"},
		{"iq4nlValues", iq4nlValues, "61aa47540aa024b5d6ddaa839b84ffe59f3d5a349af5c6c7ffcb5e0474b46163"},
	} {
		if got := digest(c.words); got != c.want {
			t.Errorf("%s: sha256 %s, want %s", c.name, got, c.want)
		}
	}
	// The 2-bit grids' coordinates are 8, 25 or 43; IQ1's -1, 0 or 1; the
	// points of each grid are distinct.
	check := func(name string, pts []uint64, width int, ok func(int8) bool) {
		seen := map[uint64]bool{}
		for i, p := range pts {
			if seen[p] {
				t.Errorf("%s: point %d repeats", name, i)
			}
			seen[p] = true
			for j := 0; j < width; j++ {
				if v := int8(p >> (8 * j)); !ok(v) {
					t.Fatalf("%s: point %d has coordinate %d", name, i, v)
				}
			}
		}
	}
	two := func(v int8) bool { return v == 8 || v == 25 || v == 43 }
	check("iq2xxs", iq2xxsGrid[:], 8, two)
	check("iq2xs", iq2xsGrid[:], 8, two)
	check("iq2s", iq2sGrid[:], 8, two)
	check("iq1s", iq1sGrid[:], 8, func(v int8) bool { return v >= -1 && v <= 1 })
	widen := func(g []uint32) []uint64 {
		out := make([]uint64, len(g))
		for i, v := range g {
			out[i] = uint64(v)
		}
		return out
	}
	three := func(v int8) bool { return v >= 1 && v <= 62 }
	check("iq3xxs", widen(iq3xxsGrid[:]), 4, three)
	check("iq3s", widen(iq3sGrid[:]), 4, three)
	for i := 1; i < 16; i++ {
		if iq4nlValues[i] <= iq4nlValues[i-1] {
			t.Errorf("iq4nlValues not increasing at %d", i)
		}
	}
}

// TestIQSigns checks the implied-sign table: the 7 coded signs kept, the
// eighth set when the count of negative values would be odd.
func TestIQSigns(t *testing.T) {
	for i, m := range iqSigns {
		if int(m&127) != i || bits.OnesCount8(m)%2 != 0 {
			t.Errorf("iqSigns[%d] = %#x", i, m)
		}
		for j := 0; j < 8; j++ {
			b := byte(iqSignsBytes[i] >> (8 * j))
			if want := map[bool]byte{false: 1, true: 0xff}[m>>j&1 != 0]; b != want {
				t.Errorf("iqSignsBytes[%d] byte %d = %#x", i, j, b)
			}
		}
	}
}

// TestIQDotMatchesDequantized checks every i-quant's dot product against
// dequantize-then-dot in float64 on random blocks.
func TestIQDotMatchesDequantized(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, typ := range iqTypes {
		for _, nb := range []int{1, 3, 8} {
			n := nb * typ.BlockSize()
			w := randomIQBlocks(r, typ, nb)
			vt := VecDotType(typ)
			act, _ := QuantizeRowFor(vt)
			ab := make([]byte, must(vt.RowBytes(n)))
			act(ab, randRow(r, n, 2))
			wd, ad := make([]float32, n), make([]float32, n)
			if err := Dequantize(typ, w, wd); err != nil {
				t.Fatal(err)
			}
			if err := Dequantize(vt, ab, ad); err != nil {
				t.Fatal(err)
			}
			var want, mag float64
			for i := range wd {
				want += float64(wd[i]) * float64(ad[i])
				mag += math.Abs(float64(wd[i]) * float64(ad[i]))
			}
			got := float64(VecDot(typ, n, w, ab))
			if math.Abs(got-want) > 1e-5*mag {
				t.Errorf("%s n=%d: VecDot %g, dequantized dot %g", typ, n, got, want)
			}
		}
	}
}

// TestIQ4_NLInterleaved checks the interleaved order against the
// dequantized dot product.
func TestIQ4_NLInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	const n = 7 * QK
	w := randomIQBlocks(r, IQ4_NL, 7)
	ab := make([]byte, must(Q8_0.RowBytes(n)))
	quantizeActQ8_0(ab, randRow(r, n, 1))
	got, ref := DotIQ4_NLInterleaved(n, w, ab), dotIQ4_NLQ8_0(n, w, ab)
	if math.Abs(float64(got-ref)) > 1e-5*math.Abs(float64(ref))+1e-6 {
		t.Errorf("interleaved %g, vector order %g", got, ref)
	}
}

// FuzzIQBlocks decodes arbitrary bytes as blocks of every i-quant (NaN
// and infinite scales included) and multiplies them with arbitrary
// activation blocks: nothing may panic.
func FuzzIQBlocks(f *testing.F) {
	f.Add(make([]byte, 110))
	f.Add([]byte{0xff, 0x7c, 0x00, 0x7e, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, typ := range iqTypes {
			n := 2 * typ.BlockSize()
			raw := make([]byte, 2*typ.BlockBytes())
			for i := range raw {
				if len(b) > 0 {
					raw[i] = b[i%len(b)]
				}
			}
			out := make([]float32, n)
			if err := Dequantize(typ, raw, out); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			vt := VecDotType(typ)
			act := make([]byte, must(vt.RowBytes(n)))
			for i := range act {
				if len(b) > 0 {
					act[i] = b[(i*7+3)%len(b)]
				}
			}
			_ = VecDot(typ, n, raw, act)
			if typ == IQ4_NL {
				_ = DotIQ4_NLInterleaved(n, raw, act)
			}
			if ok, needs := CanQuantizeFile(typ); ok {
				x := make([]float32, n)
				for i := range x {
					if len(b) >= 4 {
						j := 4 * (i % (len(b) / 4))
						x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[j:]))
					}
				}
				if err := QuantizeRows(typ, raw, x, 1, n, nil); (err != nil) != needs {
					t.Fatalf("quantize %s without importance matrix: %v", typ, err)
				}
				if err := QuantizeRows(typ, raw, x, 1, n, out); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// testWeights returns a random row of n weights of typ: quantized from
// Gaussian values, or random blocks for the types without a quantizer.
func testWeights(t testing.TB, r *rand.Rand, typ Type, n int) []byte {
	t.Helper()
	if formats[typ].quant == nil {
		return randomIQBlocks(r, typ, n/typ.BlockSize())
	}
	wb := make([]byte, must(typ.RowBytes(n)))
	if err := Quantize(typ, wb, randRow(r, n, 1)); err != nil {
		t.Fatal(err)
	}
	return wb
}

// TestIQ4BestIndex checks the table-driven nearest-value search against
// llama.cpp's binary search (best_index_int8) on every value's
// neighbourhood, the midpoints, and random values, NaN included.
func TestIQ4BestIndex(t *testing.T) {
	search := func(x float32) uint8 {
		v := &iq4nlValues
		if x <= float32(v[0]) {
			return 0
		}
		if x >= float32(v[15]) {
			return 15
		}
		lo, hi := 0, 15
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if x < float32(v[mid]) {
				hi = mid
			} else {
				lo = mid
			}
		}
		if x-float32(v[hi-1]) < float32(v[hi])-x {
			return uint8(hi - 1)
		}
		return uint8(hi)
	}
	var xs []float32
	for i := range iq4nlValues {
		v := float32(iq4nlValues[i])
		xs = append(xs, v, math.Nextafter32(v, -200), math.Nextafter32(v, 200))
		if i > 0 {
			m := (v + float32(iq4nlValues[i-1])) / 2
			xs = append(xs, m, math.Nextafter32(m, -200), math.Nextafter32(m, 200))
		}
	}
	r := rand.New(rand.NewPCG(8, 8))
	for range 100000 {
		xs = append(xs, float32(r.Float64()*300-150))
	}
	xs = append(xs, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, -0.0)
	for _, x := range xs {
		if got, want := iq4BestIndex(x), search(x); got != want {
			t.Fatalf("iq4BestIndex(%v) = %d, search %d", x, got, want)
		}
	}
}
