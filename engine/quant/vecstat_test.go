package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxMin checks MaxMin against a plain loop on random rows of every
// length up to 70 with −Inf here and there (left out of the minimum, no
// special value), and that a NaN or +Inf anywhere sets special.
func TestMaxMin(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 89))
	ninf := float32(math.Inf(-1))
	for n := range 70 {
		x := randRow(r, n, 5)
		for i := range x {
			if r.IntN(8) == 0 {
				x[i] = ninf
			}
		}
		hi, lo, special := MaxMin(x)
		wantHi, wantLo := ninf, float32(math.Inf(1))
		for _, v := range x {
			if v != ninf {
				wantHi, wantLo = max(wantHi, v), min(wantLo, v)
			}
		}
		if hi != wantHi || lo != wantLo || special {
			t.Fatalf("length %d: %v %v %v, want %v %v false", n, hi, lo, special, wantHi, wantLo)
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
			if n == 0 {
				continue
			}
			y := append([]float32(nil), x...)
			y[r.IntN(n)] = bad
			if _, _, special := MaxMin(y); !special {
				t.Fatalf("length %d with %v: not special", n, bad)
			}
		}
	}
}

// TestExpShift checks ExpShift against its definition element by element
// (bits, as Exp) and its sum against the lanes added in Go, on random
// rows of every length up to 70 with −Inf, huge and tiny values, and in
// place.
func TestExpShift(t *testing.T) {
	r := rand.New(rand.NewPCG(97, 101))
	for n := range 70 {
		for _, scale := range []float32{1, 0.7, 1.9} {
			x := randRow(r, n, 30)
			for i := range x {
				switch r.IntN(12) {
				case 0:
					x[i] = float32(math.Inf(-1))
				case 1:
					x[i] *= 1e4
				}
			}
			m := float32(r.NormFloat64() * 10)
			dst := make([]float32, n+1)
			dst[n] = 7
			got := ExpShift(dst, x, scale, m)
			var lanes [8]float64
			for i, v := range x {
				want := float32(math.Exp(float64(float32(v*scale) - m)))
				if !sameFloat(dst[i], want) {
					t.Fatalf("length %d scale %v: element %d of %v: %v, want %v", n, scale, i, v, dst[i], want)
				}
				lanes[i&7] += float64(want)
			}
			if want := LaneSum(&lanes); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("length %d scale %v: sum %v, want %v", n, scale, got, want)
			}
			if dst[n] != 7 {
				t.Fatalf("length %d: wrote past the end", n)
			}
			in := append([]float32(nil), x...)
			if ExpShift(in, in, scale, m) != got {
				t.Fatalf("length %d: in place differs", n)
			}
			if s := ExpShiftSum(x, scale, m); math.Float64bits(s) != math.Float64bits(got) {
				t.Fatalf("length %d: ExpShiftSum %v, ExpShift %v", n, s, got)
			}
		}
	}
}

// TestIndexAboveEqual checks IndexAbove and IndexEqual against plain
// loops on random rows with NaNs, at every length up to 70 and for values
// present and absent.
func TestIndexAboveEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(103, 107))
	for n := range 70 {
		x := randRow(r, n, 3)
		for i := range x {
			if r.IntN(10) == 0 {
				x[i] = float32(math.NaN())
			}
		}
		vs := []float32{-100, 0, 2, 100}
		if n > 0 {
			hi, _, _ := MaxMin(slicesWithoutNaN(x))
			vs = append(vs, x[r.IntN(n)], x[n-1], hi) // hi: one equal, none above
		}
		for _, v := range vs {
			above, equal := n, n
			for i := n - 1; i >= 0; i-- {
				if x[i] > v {
					above = i
				}
				if x[i] == v {
					equal = i
				}
			}
			if got := IndexAbove(x, v); got != above {
				t.Fatalf("length %d: IndexAbove(%v) = %d, want %d", n, v, got, above)
			}
			if got := IndexEqual(x, v); got != equal {
				t.Fatalf("length %d: IndexEqual(%v) = %d, want %d", n, v, got, equal)
			}
		}
	}
}

func slicesWithoutNaN(x []float32) []float32 {
	var out []float32
	for _, v := range x {
		if v == v {
			out = append(out, v)
		}
	}
	return out
}

// TestSetWhereClear checks SetWhereClear against a plain loop for every
// length up to 200 and masks shorter and longer than x.
func TestSetWhereClear(t *testing.T) {
	r := rand.New(rand.NewPCG(109, 113))
	for n := range 200 {
		for _, words := range []int{(n + 63) / 64, n / 64, (n+63)/64 + 1} {
			bits := make([]uint64, words)
			for i := range bits {
				bits[i] = r.Uint64()
				if r.IntN(4) == 0 {
					bits[i] = ^uint64(0)
				}
			}
			x := randRow(r, n, 1)
			want := append([]float32(nil), x...)
			for i := range want {
				if i>>6 >= len(bits) || bits[i>>6]&(1<<(i&63)) == 0 {
					want[i] = -7
				}
			}
			SetWhereClear(x, bits, -7)
			for i := range x {
				if x[i] != want[i] {
					t.Fatalf("length %d, %d words: element %d = %v, want %v", n, words, i, x[i], want[i])
				}
			}
		}
	}
}

// TestExpShiftSumLong checks ExpShiftSum against ExpShift past its
// buffer's 1024 elements, at lengths that end parts anywhere in a lane.
func TestExpShiftSumLong(t *testing.T) {
	r := rand.New(rand.NewPCG(127, 131))
	for _, n := range []int{1023, 1024, 1025, 3000, 4099} {
		x := randRow(r, n, 4)
		dst := make([]float32, n)
		if a, b := ExpShiftSum(x, 0.9, 2), ExpShift(dst, x, 0.9, 2); math.Float64bits(a) != math.Float64bits(b) {
			t.Fatalf("length %d: ExpShiftSum %v, ExpShift %v", n, a, b)
		}
	}
}
