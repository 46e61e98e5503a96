package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddScaledRows compares AddScaledRows with the plain loop bit for bit
// over lengths around the vector widths, row counts and strides.
func TestAddScaledRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 7, 8, 9, 63, 64, 65, 72, 128, 131, 500} {
		for _, rows := range []int{1, 2, 5, 64} {
			stride := n + r.IntN(9)
			m := make([]float32, (rows-1)*stride+n)
			for i := range m {
				m[i] = float32(r.NormFloat64() * 4)
			}
			coef := make([]float32, rows)
			for i := range coef {
				coef[i] = float32(r.NormFloat64())
			}
			dst := make([]float32, n+1) // one guard element
			for i := range n {
				dst[i] = float32(r.NormFloat64())
			}
			want := append([]float32(nil), dst...)
			for k, c := range coef {
				for j := range n {
					want[j] += float32(c * m[k*stride+j]) // rounded product, as documented
				}
			}
			AddScaledRows(dst[:n], coef, m, stride)
			for j := range dst {
				if math.Float32bits(dst[j]) != math.Float32bits(want[j]) {
					t.Fatalf("n %d rows %d stride %d: element %d = %v, want %v", n, rows, stride, j, dst[j], want[j])
				}
			}
		}
	}
	// Empty inputs do nothing; short rows panic before any write.
	AddScaledRows(nil, []float32{1}, nil, 0)
	AddScaledRows(make([]float32, 4), nil, nil, 0)
	defer func() {
		if recover() == nil {
			t.Error("short m: no panic")
		}
	}()
	AddScaledRows(make([]float32, 16), []float32{1, 2}, make([]float32, 20), 16)
}

// BenchmarkAddScaledRows measures the attention shapes: 64-element value
// rows, and 512 scores against 64 transposed key rows.
func BenchmarkAddScaledRows(b *testing.B) {
	for _, c := range []struct {
		name    string
		n, rows int
	}{{"values-64x512", 64, 512}, {"scores-512x64", 512, 64}} {
		b.Run(c.name, func(b *testing.B) {
			dst, coef, m := make([]float32, c.n), make([]float32, c.rows), make([]float32, c.n*c.rows)
			for i := range m {
				m[i] = float32(i%7) * 0.1
			}
			for b.Loop() {
				AddScaledRows(dst, coef, m, c.n)
			}
			b.ReportMetric(2*float64(c.n*c.rows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestScaleMul compares ScaleMul with the plain loop bit for bit over
// lengths around the vector widths, and checks it writes nothing past dst.
func TestScaleMul(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 40, 64, 100, 2048, 2049} {
		x, w := make([]float32, n+3), make([]float32, n+5)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 8)
		}
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		s := float32(r.NormFloat64())
		dst := make([]float32, n+1)
		dst[n] = 42 // a guard
		ScaleMul(dst[:n], x, w, s)
		for i := range n {
			if want := x[i] * s * w[i]; math.Float32bits(dst[i]) != math.Float32bits(want) {
				t.Fatalf("n %d: element %d = %v, want %v", n, i, dst[i], want)
			}
		}
		if dst[n] != 42 {
			t.Fatalf("n %d: wrote past dst", n)
		}
	}
}

// TestAddAndSquareSums checks Add and SquareSums8 against their plain
// loops, bit for bit, at every length to 80 (the 32- and 8-element steps
// and the tails), on values of mixed magnitude.
func TestAddAndSquareSums(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 80; n++ {
		x, y := ropeValues(r, n), ropeValues(r, n)
		got := make([]float32, n)
		Add(got, x, y)
		for i := range got {
			if want := x[i] + y[i]; math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("Add n=%d element %d: %v, want %v", n, i, got[i], want)
			}
		}
		s, m := SquareSums8(x)
		if m != n&^7 {
			t.Fatalf("SquareSums8 of %d elements covered %d", n, m)
		}
		var want [8]float64
		for i := range m {
			want[i%8] += float64(x[i] * x[i])
		}
		for j := range s {
			if math.Float64bits(s[j]) != math.Float64bits(want[j]) {
				t.Fatalf("SquareSums8 n=%d lane %d: %v, want %v", n, j, s[j], want[j])
			}
		}
	}
}
