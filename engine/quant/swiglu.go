package quant

import "math"

// SwiGLU sets dst[i] = silu(g[i])·u[i] with the arithmetic of llama.cpp's
// ggml_vec_swiglu_f32 on this machine: blocks of 16 (AVX-512) or 8 (AVX2
// and elsewhere) elements take ggml's vector exponential, a polynomial
// of its own that is not the correctly rounded e^x, then silu(x) =
// x/(1+e^-x); the elements past the last full block take expf. The
// model's greedy tokens depend on these roundings.
func SwiGLU(dst, g, u []float32) {
	g, u = g[:len(dst)], u[:len(dst)]
	lanes := halfDotLanes
	np := len(dst) / lanes * lanes
	i := swigluVector(dst[:np], g[:np], u[:np])
	exp := expGGML8
	if lanes == 16 {
		exp = expGGML16
	}
	for ; i < np; i++ {
		x := g[i]
		dst[i] = x / (1 + exp(0-x)) * u[i]
	}
	for ; i < len(dst); i++ {
		x := g[i]
		dst[i] = x / (1 + Expf(-x)) * u[i]
	}
}

// ggml_v_expf's constants: rounding shift, log2(e), ln 2 in two parts and
// the polynomial.
const (
	gvShift = 0x1.8p23
	gvLog2e = 0x1.715476p+0
	gvLn2Hi = 0x1.62e4p-1
	gvLn2Lo = 0x1.7f7d1cp-20
	gvP0    = 0x1.0e4020p-7
	gvP1    = 0x1.573e2ep-5
	gvP2    = 0x1.555e66p-3
	gvP3    = 0x1.fffdb6p-2
	gvP4    = 0x1.ffffecp-1
)

// expGGMLReduce returns n = round(x·log2 e) and b = x − n·ln 2 as ggml
// computes them, with z the float whose low mantissa bits hold n.
func expGGMLReduce(x float32) (z, n, b float32) {
	z = fma32(x, gvLog2e, gvShift)
	n = z - gvShift
	b = fma32(-n, gvLn2Lo, fma32(-n, gvLn2Hi, x))
	return z, n, b
}

// expGGML16 is ggml_v_expf's AVX-512 formula for one lane: the polynomial
// includes the 1 and the result is scaled by 2^n exactly (VSCALEFPS).
func expGGML16(x float32) float32 {
	_, n, b := expGGMLReduce(x)
	if abs32(n) > 192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	u := b * b
	j := fma32(fma32(fma32(gvP0, b, gvP1), u, fma32(gvP2, b, gvP3)), u, fma32(gvP4, b, 1))
	return float32(math.Ldexp(float64(j), int(n)))
}

// expGGML8 is ggml_v_expf's AVX2 formula for one lane: the polynomial
// leaves out the 1, 2^n is built in the exponent bits, and k·j + k is
// fused; |n| > 126 takes the two-factor scaling.
func expGGML8(x float32) float32 {
	z, n, b := expGGMLReduce(x)
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + math.Float32bits(1))
	u := b * b
	j := fma32(fma32(fma32(gvP0, b, gvP1), u, fma32(gvP2, b, gvP3)), u, gvP4*b)
	an := abs32(n)
	if !(an > 126) {
		return fma32(k, j, k)
	}
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	if an > 192 {
		return s1 * s1
	}
	s2 := math.Float32frombits(e - g)
	return fma32(s2, j, s2) * s1
}
