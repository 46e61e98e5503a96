package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// quantTypes are the types with a quantizer, in the table's order.
var quantTypes = []Type{F32, F16, BF16, Q8_0, Q8_1, Q8_K, Q6_K, Q5_0, Q5_1, Q5_K, Q4_0, Q4_1, Q4_K, Q3_K, Q2_K, IQ4_NL, IQ4_XS, IQ3_S, IQ3_XXS, IQ2_S, IQ1_M}

// rmseBound is the bound on the round trip's RMSE relative to the data's
// RMS on every test distribution, and on the largest error relative to
// the data's largest magnitude. The figures are a margin above what the
// reference quantizers reach (llama.cpp's own rmse from
// test-quantize-fns lies in the same range).
var rmseBound = map[Type]struct{ rmse, max float64 }{
	F32:  {0, 0},
	F16:  {3e-4, 4e-4},
	BF16: {2.5e-3, 4e-3},
	Q8_0: {0.015, 0.005}, Q8_1: {0.015, 0.005}, Q8_K: {0.035, 0.005},
	Q6_K: {0.036, 0.023},
	Q5_0: {0.067, 0.075}, Q5_1: {0.072, 0.041}, Q5_K: {0.056, 0.062},
	Q4_0: {0.134, 0.152}, Q4_1: {0.124, 0.082}, Q4_K: {0.105, 0.105},
	Q3_K:   {0.225, 0.30},
	Q2_K:   {0.44, 0.46},
	IQ4_NL: {0.10, 0.145}, IQ4_XS: {0.10, 0.145},
	IQ3_S: {0.38, 0.36}, IQ3_XXS: {0.41, 0.58},
	IQ2_S: {0.71, 0.56}, IQ1_M: {0.63, 1.19},
}

type distribution struct {
	name string
	gen  func(r *rand.Rand) float64
}

var distributions = []distribution{
	{"normal", func(r *rand.Rand) float64 { return r.NormFloat64() }},
	{"uniform", func(r *rand.Rand) float64 { return 2*r.Float64() - 1 }},
	{"laplace", func(r *rand.Rand) float64 { return r.ExpFloat64() * float64(1-2*r.IntN(2)) }},
	// Mostly small weights with rare large outliers, like LLM matrices.
	{"outliers", func(r *rand.Rand) float64 {
		if r.IntN(64) == 0 {
			return 8 * r.NormFloat64()
		}
		return 0.1 * r.NormFloat64()
	}},
	{"shifted", func(r *rand.Rand) float64 { return 1 + 0.2*r.NormFloat64() }},
}

// roundTrip quantizes and dequantizes x as t and returns the RMSE relative
// to x's RMS and the largest error relative to x's largest magnitude.
func roundTrip(t testing.TB, typ Type, x []float32) (relRMSE, relMax float64) {
	b := make([]byte, must(typ.RowBytes(len(x))))
	if err := Quantize(typ, b, x); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, len(x))
	if err := Dequantize(typ, b, y); err != nil {
		t.Fatal(err)
	}
	var se, ss, me, amax float64
	for i := range x {
		e := float64(y[i]) - float64(x[i])
		se += e * e
		ss += float64(x[i]) * float64(x[i])
		me = max(me, math.Abs(e))
		amax = max(amax, math.Abs(float64(x[i])))
	}
	return math.Sqrt(se / ss), me / amax
}

// TestRoundTripRMSE quantizes rows from several distributions with every
// format and checks the error against rmseBound; -v logs the table.
func TestRoundTripRMSE(t *testing.T) {
	const n = 4096
	r := rand.New(rand.NewPCG(7, 7))
	rows := make([][]float32, len(distributions))
	for i, d := range distributions {
		rows[i] = make([]float32, n)
		for j := range rows[i] {
			rows[i][j] = float32(d.gen(r))
		}
	}
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "%-6s", "type")
	for _, d := range distributions {
		fmt.Fprintf(&tbl, " %17s", d.name)
	}
	fmt.Fprintf(&tbl, "   (relative rmse / relative max error)\n")
	for _, typ := range quantTypes {
		bound := rmseBound[typ]
		fmt.Fprintf(&tbl, "%-6s", typ)
		for i, d := range distributions {
			rmse, mx := roundTrip(t, typ, rows[i])
			fmt.Fprintf(&tbl, "   %.5f/%.5f", rmse, mx)
			if rmse > bound.rmse || mx > bound.max {
				t.Errorf("%s on %s: relative rmse %.5f, max error %.5f; bound %.5f, %.5f", typ, d.name, rmse, mx, bound.rmse, bound.max)
			}
		}
		tbl.WriteByte('\n')
	}
	t.Logf("round trip of %d values per distribution:\n%s", n, tbl.String())

	// The K-quants' searched scales must beat the legacy formats of the
	// same width on Gaussian data, as they do in llama.cpp.
	for _, p := range []struct {
		k, legacy Type
		ratio     float64
	}{{Q4_K, Q4_0, 0.9}, {Q5_K, Q5_0, 0.9}, {Q4_K, Q4_1, 0.95}, {Q5_K, Q5_1, 0.98}} {
		k, _ := roundTrip(t, p.k, rows[0])
		legacy, _ := roundTrip(t, p.legacy, rows[0])
		if k > p.ratio*legacy {
			t.Errorf("%s rmse %.5f is not below %g × %s's %.5f", p.k, k, p.ratio, p.legacy, legacy)
		}
	}
}

// TestRoundTripDegenerate checks blocks that are all zero (which must come
// back exactly) and constant (which must come back within the bound).
func TestRoundTripDegenerate(t *testing.T) {
	for _, typ := range quantTypes {
		n := QKK
		x := make([]float32, n)
		b := make([]byte, must(typ.RowBytes(n)))
		y := make([]float32, n)
		if err := Quantize(typ, b, x); err != nil {
			t.Fatal(err)
		}
		if err := Dequantize(typ, b, y); err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%s: zero row dequantizes to %g at %d", typ, v, i)
			}
		}
		for _, c := range []float32{0.5, -3} {
			for i := range x {
				x[i] = c
			}
			if rmse, _ := roundTrip(t, typ, x); rmse > rmseBound[typ].rmse {
				t.Errorf("%s: constant %g row has relative rmse %.5f", typ, c, rmse)
			}
		}
	}
}
