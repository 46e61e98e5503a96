package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// operand is a random matrix of rows×cols at row stride ld (ld ≥ cols),
// with garbage in the padding so a kernel reading past a row shows.
type operand struct {
	rows, cols, ld int
	v              []float64
}

func newOperand(rng *rand.Rand, rows, cols, pad int) operand {
	o := operand{rows: rows, cols: cols, ld: cols + pad}
	o.v = make([]float64, max(rows*o.ld, 1))
	for i := range o.v {
		o.v[i] = rng.Float64()*2 - 1
		if pad > 0 && i%o.ld >= cols {
			o.v[i] = 1e6
		}
	}
	return o
}

func (o operand) at(i, j int) float64 { return o.v[i*o.ld+j] }

func to32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// want computes C + op(A)·op(B) in float64, element by element.
func want(kind string, m, n, k int, a, b, c operand) []float64 {
	out := append([]float64(nil), c.v...)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				var x, y float64
				switch kind {
				case "NN":
					x, y = a.at(i, p), b.at(p, j)
				case "NT":
					x, y = a.at(i, p), b.at(j, p)
				case "TN":
					x, y = a.at(p, i), b.at(p, j)
				}
				s += x * y
			}
			out[i*c.ld+j] += s
		}
	}
	return out
}

func run[F Float](kind string, m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	switch kind {
	case "NN":
		NN(m, n, k, a, lda, b, ldb, c, ldc)
	case "NT":
		NT(m, n, k, a, lda, b, ldb, c, ldc)
	case "TN":
		TN(m, n, k, a, lda, b, ldb, c, ldc)
	}
}

// TestProducts checks every product at every kernel level this CPU has
// against a float64 loop, on shapes around the tile sizes, with and
// without row padding; the padding of C must come out untouched.
func TestProducts(t *testing.T) {
	defer func(l isa) { level = l }(level)
	shapes := [][3]int{
		{1, 1, 1}, {6, 32, 1}, {7, 33, 5}, {5, 31, 17}, {12, 64, 64}, {13, 70, 64},
		{24, 96, 128}, {4, 4, 144}, {9, 130, 300}, {64, 40, 513}, {2, 17, 1030},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, lv := range cpuLevels() {
		level = lv
		for _, kind := range []string{"NN", "NT", "TN"} {
			for _, sh := range shapes {
				for _, pad := range []int{0, 3} {
					m, n, k := sh[0], sh[1], sh[2]
					name := fmt.Sprintf("level%d/%s/%dx%dx%d/pad%d", lv, kind, m, n, k, pad)
					var a, b operand
					switch kind {
					case "NN":
						a, b = newOperand(rng, m, k, pad), newOperand(rng, k, n, pad)
					case "NT":
						a, b = newOperand(rng, m, k, pad), newOperand(rng, n, k, pad)
					case "TN":
						a, b = newOperand(rng, k, m, pad), newOperand(rng, k, n, pad)
					}
					c := newOperand(rng, m, n, pad)
					exp := want(kind, m, n, k, a, b, c)

					c64 := append([]float64(nil), c.v...)
					run(kind, m, n, k, a.v, a.ld, b.v, b.ld, c64, c.ld)
					c32 := to32(c.v)
					run(kind, m, n, k, to32(a.v), a.ld, to32(b.v), b.ld, c32, c.ld)
					for i := range exp {
						if math.Abs(c64[i]-exp[i]) > 1e-9*float64(k) {
							t.Fatalf("%s float64: element %d = %v, want %v", name, i, c64[i], exp[i])
						}
						// float32 sums of k products of magnitude ≤ 1.
						if math.Abs(float64(c32[i])-exp[i]) > 4e-6*float64(k+4) {
							t.Fatalf("%s float32: element %d = %v, want %v", name, i, c32[i], exp[i])
						}
					}
				}
			}
		}
	}
}

func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][2]int{{1, 1}, {3, 9}, {8, 8}, {17, 5}, {33, 70}} {
		src := newOperand(rng, sh[0], sh[1], 2)
		dst := make([]float64, sh[1]*(sh[0]+1))
		Transpose(sh[0], sh[1], src.v, src.ld, dst, sh[0]+1)
		for i := range sh[0] {
			for j := range sh[1] {
				if dst[j*(sh[0]+1)+i] != src.at(i, j) {
					t.Fatalf("%v: dst[%d][%d] = %v, want %v", sh, j, i, dst[j*(sh[0]+1)+i], src.at(i, j))
				}
			}
		}
	}
}

// TestShortOperandPanics: a slice too short for its shape is a
// programming error caught before any kernel reads past it.
func TestShortOperandPanics(t *testing.T) {
	for _, f := range []func(){
		func() { NN(2, 2, 2, make([]float32, 3), 2, make([]float32, 4), 2, make([]float32, 4), 2) },
		func() { NT(2, 2, 2, make([]float32, 4), 2, make([]float32, 4), 2, make([]float32, 3), 2) },
		func() { TN(2, 2, 2, make([]float32, 4), 1, make([]float32, 4), 2, make([]float32, 4), 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		}()
	}
}

func BenchmarkProducts(b *testing.B) {
	defer func(l isa) { level = l }(level)
	// A training step's shapes on the 19M llama: 64 tokens through a
	// 1024×384 projection, forward (NT) and backward (NN), and one
	// attention head (NT over 64).
	for _, lv := range cpuLevels() {
		level = lv
		for _, bc := range []struct {
			kind    string
			m, n, k int
		}{
			{"NT", 64, 1024, 384}, {"NN", 64, 384, 1024}, {"TN", 384, 64, 64}, {"NT", 64, 64, 64},
		} {
			b.Run(fmt.Sprintf("level%d/%s/%dx%dx%d", lv, bc.kind, bc.m, bc.n, bc.k), func(b *testing.B) {
				a := make([]float32, bc.m*bc.k+bc.k*bc.m)
				w := make([]float32, bc.n*bc.k+bc.k*bc.n)
				c := make([]float32, bc.m*bc.n)
				for i := range a {
					a[i] = float32(i%7) * 0.1
				}
				for i := range w {
					w[i] = float32(i%5) * 0.1
				}
				lda, ldb := bc.k, bc.n
				switch bc.kind {
				case "NT":
					ldb = bc.k
				case "TN":
					lda = bc.m
				}
				b.SetBytes(int64(2 * bc.m * bc.n * bc.k)) // flops, reported as MB/s
				for b.Loop() {
					run(bc.kind, bc.m, bc.n, bc.k, a, lda, w, ldb, c, bc.n)
				}
			})
		}
	}
}
