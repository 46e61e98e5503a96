package quant

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func randRow(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// TestVecDotMatchesDequantized checks every weight format's dot product
// against dequantize-then-dot in float64 on random data.
func TestVecDotMatchesDequantized(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, typ := range dotTypes {
		for _, n := range []int{32, 256, 1024} {
			if typ.BlockSize() > n {
				continue
			}
			w := randRow(r, n, 0.5)
			a := randRow(r, n, 2)
			wb := make([]byte, must(typ.RowBytes(n)))
			if err := Quantize(typ, wb, w); err != nil {
				t.Fatal(err)
			}
			vt := VecDotType(typ)
			ab := make([]byte, must(vt.RowBytes(n)))
			q, _ := QuantizeRowFor(vt)
			q(ab, a)
			wd, ad := make([]float32, n), make([]float32, n)
			if err := Dequantize(typ, wb, wd); err != nil {
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
			// Q8_1's s = d·Σq is rounded to f16 from the unrounded d, so
			// the weights' minimum term may differ from the dequantized
			// one by up to about 2 half-precision ulps of m·s.
			var tol float64
			if vt == Q8_1 {
				wbb := typ.BlockBytes()
				for b := 0; b < n/QK; b++ {
					tol += math.Abs(float64(f16At(wb[b*wbb+2:]) * f16At(ab[b*q8_1Bytes+2:])))
				}
				tol *= 0x1p-10
			}
			got := float64(VecDot(typ, n, wb, ab))
			if math.Abs(got-want) > 1e-5*mag+tol {
				t.Errorf("%s n=%d: VecDot %g, dequantized dot %g", typ, n, got, want)
			}
		}
	}
}

// dotTypes are the weight types with a dot product.
var dotTypes = []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}

// TestDotTable checks that every quantized type has a dot product unless
// it is an activation-only format.
func TestDotTable(t *testing.T) {
	for _, typ := range quantTypes {
		_, err := DotFor(typ)
		switch typ {
		case Q8_1, Q8_K:
			if err == nil {
				t.Errorf("%s: activation-only format has a dot product", typ)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", typ, err)
			}
		}
	}
}

func must(n int, err error) int {
	if err != nil {
		panic(err)
	}
	return n
}

// TestQ4_KDotMatchesLanes checks the Q4_K kernel's inlined lanes against
// the generic kLanes on the unpacked block: the results must be
// bit-identical, the sums being exact integers.
func TestQ4_KDotMatchesLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	const n = 1024
	wb := make([]byte, must(Q4_K.RowBytes(n)))
	ab := make([]byte, must(Q8_K.RowBytes(n)))
	if err := Quantize(Q4_K, wb, randRow(r, n, 0.3)); err != nil {
		t.Fatal(err)
	}
	quantizeQ8_K(ab, randRow(r, n, 3))
	var q [QKK]int32
	var sc, m [8]int32
	var acc [8]float32
	var accM [4]float32
	for b := 0; b < n/QKK; b++ {
		x, y := wb[b*q4_KBytes:], ab[b*q8_KBytes:]
		d8 := f32At(y)
		unpackQ4_K(x, &q, &sc, &m)
		for k, p := range kMinSums32(y, &m) {
			accM[k] = fma32(-d8*f16At(x[2:]), float32(p), accM[k])
		}
		for u, l := range kLanes(&q, y, sc[:], 32) {
			acc[u] = fma32(d8*f16At(x), float32(l), acc[u])
		}
	}
	want := hsum8(&acc) + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
	if got := dotQ4_KQ8_K(n, wb, ab); got != want {
		t.Errorf("dotQ4_KQ8_K = %g, generic lanes %g", got, want)
	}
}

// TestAcceleratedMatchesReference checks every SIMD kernel selected on this
// CPU against the pure-Go reference on random rows of random lengths.
// The references follow llama.cpp's AVX2 reduction order, so the kernels
// must agree bit for bit.
func TestAcceleratedMatchesReference(t *testing.T) {
	forEachISA(t, testAcceleratedMatchesReference)
}

func testAcceleratedMatchesReference(t *testing.T) {
	types, isa := Accelerated()
	t.Logf("kernels: %s %v", isa, types)
	rng := rand.New(rand.NewPCG(3, 9))
	for _, typ := range types {
		f := formats[typ]
		fast := accelerated[typ]
		bs := typ.BlockSize()
		act := activationEncoder(t, f.vecDot)
		for iter := 0; iter < 200; iter++ {
			n := bs * (1 + rng.IntN(24))
			if bs == 1 {
				n = 1 + rng.IntN(300) // float formats: any length
			}
			x, y := make([]float32, n), make([]float32, n)
			for i := range x {
				x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*3)
			}
			wb, _ := typ.RowBytes(n)
			ab, _ := f.vecDot.RowBytes(n)
			// Odd offsets inside larger buffers exercise unaligned loads.
			off := rng.IntN(8)
			w := make([]byte, wb+off)[off:]
			a := make([]byte, ab+off)[off:]
			if f.quant == nil {
				copy(w, randomIQBlocks(rng, typ, n/bs))
			} else if err := Quantize(typ, w, x); err != nil {
				t.Fatal(err)
			}
			act(a, y)
			want, got := f.dot(n, w, a), fast(n, w, a)
			if math.Float32bits(want) != math.Float32bits(got) {
				t.Fatalf("%s n=%d off=%d: kernel %v, reference %v", typ, n, off, got, want)
			}
		}
	}
}

// forEachISA runs f once per kernel instruction set this CPU has (AVX2
// and the VNNI levels on amd64), selecting each in turn and the best one
// again at the end; where there are none, once on the references.
func forEachISA(t *testing.T, f func(t *testing.T)) {
	isas := testISAs()
	if len(isas) == 0 {
		f(t)
		return
	}
	defer setISA(isas[len(isas)-1])
	for _, isa := range isas {
		setISA(isa)
		t.Run(isa, f)
	}
}

// activationEncoder returns the activation encoder of typ or fails.
func activationEncoder(t *testing.T, typ Type) RowFunc {
	t.Helper()
	if typ == F32 {
		return func(dst []byte, src []float32) { copy(f32View(dst), src) }
	}
	q, err := QuantizeRowFor(typ)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestMultiDotMatchesSingle checks the multi-row kernel of every type with
// a dot product against its single-row kernel, for 1 to MaxMultiRows rows.
func TestMultiDotMatchesSingle(t *testing.T) {
	forEachISA(t, testMultiDotMatchesSingle)
}

func testMultiDotMatchesSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	for typ, f := range formats {
		if f.dot == nil {
			continue
		}
		multi, err := MultiDotFor(typ)
		if err != nil {
			t.Fatal(err)
		}
		single, _ := DotFor(typ)
		act := activationEncoder(t, f.vecDot)
		bs := typ.BlockSize()
		for iter := 0; iter < 20; iter++ {
			n := bs * (1 + rng.IntN(12))
			rows := 1 + rng.IntN(MaxMultiRows)
			stride, _ := f.vecDot.RowBytes(n)
			stride += rng.IntN(3) * 4 // rows need not be packed
			wb := testWeights(t, rng, typ, n)
			a := make([]byte, rows*stride)
			for r := 0; r < rows; r++ {
				ab, _ := f.vecDot.RowBytes(n)
				act(a[r*stride:r*stride+ab], randRow(rng, n, 2))
			}
			got := make([]float32, rows)
			multi(n, wb, a, stride, got)
			for r := range got {
				if want := single(n, wb, a[r*stride:]); math.Float32bits(got[r]) != math.Float32bits(want) {
					t.Fatalf("%s n=%d rows=%d row %d: multi %v, single %v", typ, n, rows, r, got[r], want)
				}
			}
		}
	}
}

// TestHalfKernelsAllValues runs the F16 and BF16 kernels on every 16-bit
// pattern as a weight (infinities, NaNs and subnormals included), against
// random activations, in dot products of 8 and 11 elements (whole groups
// and a tail), and checks them against the references bit for bit.
func TestHalfKernelsAllValues(t *testing.T) {
	forEachISA(t, testHalfKernelsAllValues)
}

func testHalfKernelsAllValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, typ := range []Type{F16, BF16} {
		fast, ref := accelerated[typ], formats[typ].dot
		if fast == nil {
			t.Skipf("%s: no kernel on this CPU", typ)
		}
		w := make([]byte, 2<<16)
		for h := range 1 << 16 {
			le.PutUint16(w[2*h:], uint16(h))
		}
		a := make([]byte, 2<<16)
		if err := Quantize(typ, a, randRow(rng, 1<<16, 4)); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, n := range []int{8, 11} {
			for i := 0; i+n <= 1<<16; i += 8 {
				want, got := ref(n, w[2*i:], a[2*i:]), fast(n, w[2*i:], a[2*i:])
				if math.Float32bits(want) != math.Float32bits(got) {
					if bad++; bad <= 5 {
						t.Errorf("%s n=%d weights %#04x...: kernel %v (%#08x), reference %v (%#08x)",
							typ, n, i, got, math.Float32bits(got), want, math.Float32bits(want))
					}
				}
			}
		}
	}
}

// TestFMA32RoundsOnce checks fma32 against a*b+c computed exactly and
// rounded once to float32, on random operands and on sums whose float64
// rounding lands on a float32 midpoint (where rounding twice errs).
func TestFMA32RoundsOnce(t *testing.T) {
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	type abc struct{ a, b, c float32 }
	cases := []abc{
		// 2^24+3 - 2^-46 is below the midpoint 2^24+3 of 2^24+2 and 2^24+4,
		// but rounds to it in float64, whose tie goes to 2^24+4.
		{1 + 0x1p-23, 1 - 0x1p-23, 0x1p24 + 2},
		{1 + 0x1p-23, 1 + 0x1p-23, 0x1p24 + 2},
		{-(1 + 0x1p-23), 1 - 0x1p-23, -(0x1p24 + 2)},
		{3, 0x1p-25, 1}, // exact tie
	}
	rng := rand.New(rand.NewPCG(13, 13))
	for range 100000 {
		c := float32(rng.NormFloat64() * 1e3)
		// a product near half a float32 ulp of c, slightly off.
		ulp := math.Nextafter32(abs32(c), float32(math.Inf(1))) - abs32(c)
		a := ulp / 2 * float32(1+rng.IntN(7))
		b := 1 + float32(rng.IntN(5)-2)*0x1p-23
		cases = append(cases, abc{a, b, c}, abc{float32(rng.NormFloat64()), float32(rng.NormFloat64()), c})
	}
	for _, k := range cases {
		if got, want := fma32(k.a, k.b, k.c), exact(k.a, k.b, k.c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, exact rounding %g", k.a, k.b, k.c, got, want)
		}
	}
}

// TestDotDoesNotAllocate checks that the dot products of every type, one
// row and four, allocate nothing: they run once per output element of a
// matrix product, and an escaping accumulator once cost an allocation per
// call.
func TestDotDoesNotAllocate(t *testing.T) {
	const n = 512
	for _, typ := range dotTypes {
		vt := VecDotType(typ)
		w := make([]byte, must(typ.RowBytes(n)))
		stride := must(vt.RowBytes(n))
		a := make([]byte, MaxMultiRows*stride)
		dot, err := DotFor(typ)
		if err != nil {
			t.Fatal(err)
		}
		multi, err := MultiDotFor(typ)
		if err != nil {
			t.Fatal(err)
		}
		var dst [MaxMultiRows]float32
		if got := testing.AllocsPerRun(20, func() { dst[0] = dot(n, w, a) }); got != 0 {
			t.Errorf("%s: DotFor's kernel allocates %v times per call", typ, got)
		}
		if got := testing.AllocsPerRun(20, func() { multi(n, w, a, stride, dst[:]) }); got != 0 {
			t.Errorf("%s: MultiDotFor's kernel allocates %v times per call", typ, got)
		}
	}
}

// TestAcceleratedRandomWeightBytes checks every kernel against its
// reference on weight rows of random bytes, which reach every scale,
// minimum and quant bit pattern (f16 infinities and NaNs included) that
// the quantizers never produce. Activations come from their quantizer:
// the 32-element kernels' sign trick needs quants in -127..127.
func TestAcceleratedRandomWeightBytes(t *testing.T) {
	forEachISA(t, testAcceleratedRandomWeightBytes)
}

func testAcceleratedRandomWeightBytes(t *testing.T) {
	types, _ := Accelerated()
	rng := rand.New(rand.NewPCG(17, 19))
	for _, typ := range types {
		f := formats[typ]
		fast := accelerated[typ]
		act := activationEncoder(t, f.vecDot)
		for iter := 0; iter < 300; iter++ {
			n := typ.BlockSize() * (1 + rng.IntN(8))
			if typ.BlockSize() == 1 {
				n = 1 + rng.IntN(100)
			}
			w := make([]byte, must(typ.RowBytes(n)))
			for i := range w {
				w[i] = byte(rng.Uint32())
			}
			a := make([]byte, must(f.vecDot.RowBytes(n)))
			act(a, randRow(rng, n, 3))
			want, got := f.dot(n, w, a), fast(n, w, a)
			if math.Float32bits(want) != math.Float32bits(got) && !(want != want && got != got) {
				t.Fatalf("%s n=%d: kernel %v, reference %v", typ, n, got, want)
			}
		}
	}
}

// sameBits reports whether a and b hold the same float32 bit patterns.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
