package quant

import "math"

// The functions here are the f16 arithmetic of a llama.cpp CPU backend
// built for a CPU with AVX512-FP16 (-march=native on Intel Sapphire Rapids
// and later: GCC defines __AVX512FP16__, and ggml's F16 vector macros
// then compute in half precision, 32 lanes to a register, instead of
// converting to float32). It changes ggml_vec_dot_f16 (F16 matrices
// times one activation row, and flash attention's query·key),
// ggml_vec_mad_f16 and ggml_vec_scale_f16 (flash attention's f16 output
// accumulator). Vectors shorter than one vector step (128 halves) take
// the scalar code that follows the vector loop in each of them: the dot
// product then sums float32 products in float64, one element after the
// other. Read from the disassembly of such a build (docs/DESIGN.md,
// Numerics); each half-precision operation rounds once, to nearest even,
// with subnormals (AVX512-FP16 ignores MXCSR's DAZ and FTZ).

// fp16Step is the elements of one vector step of the half-precision
// macros: four registers of 32 halves.
const fp16Step = 128

// roundHalf64 rounds v to the nearest f16 (ties to even), subnormals and
// overflow to infinity included, on the bits of v.
func roundHalf64(v float64) uint16 {
	b := math.Float64bits(v)
	sign := uint16(b>>48) & 0x8000
	b &^= 1 << 63
	e := int(b>>52) - 1023
	switch {
	case e >= 16:
		if b > 0x7ff0000000000000 {
			return sign | 0x7e00 // NaN
		}
		return sign | 0x7c00
	case e < -25:
		return sign // below half the smallest subnormal
	}
	m := b&(1<<52-1) | 1<<52 // the 53-bit significand
	shift := uint(42)        // keeps 11 bits
	if e < -14 {
		shift += uint(-14 - e) // a subnormal keeps fewer
	}
	q, rem, half := m>>shift, m&(1<<shift-1), uint64(1)<<(shift-1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	if e < -14 {
		return sign | uint16(q) // 1024 is the smallest normal, as it should be
	}
	r := uint32(e+15)<<10 + uint32(q) - 1024 // a carry out of the significand raises the exponent
	if r >= 0x7c00 {
		return sign | 0x7c00
	}
	return sign | uint16(r)
}

// fmaHalf returns the f16 a·b + c rounded once: a·b of two halves is
// exact in float64, and so is the sum for every case where the rounding
// to f16 could depend on it (its lost bits lie far below the f16 ulp).
func fmaHalf(a, b, c uint16) uint16 {
	return roundHalf64(float64(halfTable[a])*float64(halfTable[b]) + float64(halfTable[c]))
}

// addHalf returns the f16 a + b rounded once.
func addHalf(a, b uint16) uint16 {
	return roundHalf64(float64(halfTable[a]) + float64(halfTable[b]))
}

// DotHalfFP16 returns ggml_vec_dot_f16 of x and y (equal lengths) as an
// AVX512-FP16 build computes it: four accumulators of 32 halves take
// half-precision fused multiply-adds over blocks of 128 elements, are
// added (0+2, 1+3, then the two) and reduced across lanes in halves
// (_mm512_reduce_add_ph: 16 lanes apart, then 8, 4, 2, 1); the result
// and then every element past the last full block (float32 products) are
// summed in float64, and the sum rounded to float32.
func DotHalfFP16(x, y []uint16) float32 {
	y = y[:len(x)]
	np := len(x) &^ (fp16Step - 1)
	var sum float64
	if np > 0 {
		var acc [4][32]uint16 // +0.0
		for i := 0; i < np; i += fp16Step {
			for j := range 4 {
				a := &acc[j]
				xs, ys := x[i+32*j:i+32*j+32], y[i+32*j:i+32*j+32]
				for l := range 32 {
					a[l] = fmaHalf(xs[l], ys[l], a[l])
				}
			}
		}
		var v [32]uint16
		for l := range 32 {
			v[l] = addHalf(addHalf(acc[0][l], acc[2][l]), addHalf(acc[1][l], acc[3][l]))
		}
		for w := 16; w >= 1; w /= 2 {
			for l := range w {
				v[l] = addHalf(v[l], v[l+w])
			}
		}
		sum = float64(halfTable[v[0]])
	}
	for i := np; i < len(x); i++ {
		sum += float64(halfTable[x[i]] * halfTable[y[i]])
	}
	return float32(sum)
}

// ScaleHalfFP16 is ggml_vec_scale_f16 of an AVX512-FP16 build: the
// elements of whole 128-element blocks times v rounded to f16 first, the
// rest times v in float32, each product rounded to f16.
func ScaleHalfFP16(y []uint16, v float32) {
	np := len(y) &^ (fp16Step - 1)
	vh := FP32ToFP16(v)
	for i := range np {
		y[i] = FP32ToFP16(halfTable[y[i]] * halfTable[vh]) // exact product, one rounding
	}
	for i := np; i < len(y); i++ {
		y[i] = FP32ToFP16(halfTable[y[i]] * v)
	}
}

// MadHalfFP16 is ggml_vec_mad_f16 of an AVX512-FP16 build: y += x·v, the
// elements of whole 128-element blocks with v rounded to f16 and one
// half-precision fused multiply-add, the rest as MadHalf.
func MadHalfFP16(y, x []uint16, v float32) {
	x = x[:len(y)]
	np := len(y) &^ (fp16Step - 1)
	vh := FP32ToFP16(v)
	for i := range np {
		y[i] = fmaHalf(x[i], vh, y[i])
	}
	for i := np; i < len(y); i++ {
		y[i] = FP32ToFP16(fma32(halfTable[x[i]], v, halfTable[y[i]]))
	}
}

// flashKeysFP16 is FlashKeys with the AVX512-FP16 build's f16 arithmetic
// (DotHalfFP16, ScaleHalfFP16, MadHalfFP16); the softmax is FlashKeys'
// but for the running sum, whose multiply-add that build's compiler
// fused (S = S·ms + vs in one rounding, read from its disassembly).
func flashKeysFP16(st *FlashState, q, k, v []uint16, stride, n int) {
	hd := len(q)
	acc := st.Acc[:hd]
	for i := range n {
		kr, vr := k[i*stride:i*stride+hd], v[i*stride:i*stride+hd]
		sc := DotHalfFP16(kr, q) * st.Scale
		if st.Softcap > 0 {
			sc = st.Softcap * float32(math.Tanh(float64(sc)))
		}
		ms, vs := float32(1), float32(1)
		if sc > st.Max {
			ms = Expf(st.Max - sc)
			st.Max = sc
			ScaleHalfFP16(acc, ms)
		} else {
			vs = Expf(sc - st.Max)
		}
		MadHalfFP16(acc, vr, vs)
		st.Sum = fma32(st.Sum, ms, vs) // fused in that build's code
	}
}

// DotF16GEMVFP16 multiplies F16 weight rows (rowBytes apart in w, n
// columns) with one f16 activation row a, writing rows results to dst:
// ggml_vec_dot_f16 of an AVX512-FP16 build, llama.cpp's product of an F16
// matrix with a single token.
func DotF16GEMVFP16(n int, w []byte, rowBytes int, a []uint16, rows int, dst []float32) {
	for r := range rows {
		row := w[r*rowBytes : r*rowBytes+2*n]
		dst[r] = DotHalfFP16(u16View(row), a[:n])
	}
}

// DotF16TinyBLAS returns the product of the F16 weight row w and the f16
// activation row a (n elements, a multiple of 16) in the order of
// llamafile's tinyBLAS for AVX-512, which llama.cpp runs for F16 matrices
// times two or more activation rows: both converted to float32, one
// chain of fused multiply-adds per lane over 16-element steps, then
// _mm512_reduce_add_ps.
func DotF16TinyBLAS(w, a []uint16) float32 {
	a = a[:len(w)]
	var acc [16]float32
	for i := 0; i+16 <= len(w); i += 16 {
		for l := range 16 {
			acc[l] = fma32(halfTable[w[i+l]], halfTable[a[i+l]], acc[l])
		}
	}
	return reduceAdd16(&acc)
}

// reduceAdd16 is GCC's _mm512_reduce_add_ps: lanes 8 apart, then 4, then
// 2, then the last two.
func reduceAdd16(a *[16]float32) float32 {
	var t [8]float32
	for l := range 8 {
		t[l] = a[l] + a[l+8]
	}
	t0, t1, t2, t3 := t[0]+t[4], t[1]+t[5], t[2]+t[6], t[3]+t[7]
	return (t0 + t2) + (t1 + t3)
}
