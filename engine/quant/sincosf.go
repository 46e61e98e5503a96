package quant

import (
	"encoding/binary"
	"encoding/hex"
	"math"
)

// Sincosf returns sin(x) and cos(x) rounded to float32 exactly as glibc's
// sincosf does on x86-64 with FMA (the ARM optimized-routines algorithm,
// worst error 0.56 ulp): below π/4 a polynomial in float64, below 120 a
// reduction by one multiply-subtract of π/2, beyond that an exact
// fixed-point reduction against 192 bits of 2/π. float32(math.Sin(x))
// differs from it in about 2.6% of rotary-embedding angles; llama.cpp's
// rope cache is built with sincosf, so reproducing its tokens needs this.
func Sincosf(y float32) (sin, cos float32) {
	x := float64(y)
	top := abstop12(y)
	p := &sincosfTable[0]
	switch {
	case top < abstop12(math.Pi/4):
		if top < abstop12(0x1p-12) {
			return y, 1
		}
		return sincosfPoly(x, x*x, p, 0)
	case top < abstop12(120):
		r := float64(x * p.hpiInv)
		n := (int32(r) + 0x800000) >> 24
		x = math.FMA(-float64(n), p.hpi, x)
		s := sincosfSign[n&3]
		if n&2 != 0 {
			p = &sincosfTable[1]
		}
		return sincosfPoly(float64(x*s), float64(x*x), p, int(n))
	case top < abstop12(float32(math.Inf(1))):
		xi := math.Float32bits(y)
		sign := int(xi >> 31)
		x, n := sincosfReduceLarge(xi)
		s := sincosfSign[(n+sign)&3]
		if (n+sign)&2 != 0 {
			p = &sincosfTable[1]
		}
		return sincosfPoly(float64(x*s), float64(x*x), p, n)
	default:
		nan := y - y
		return nan, nan
	}
}

func abstop12(x float32) uint32 { return math.Float32bits(x) >> 20 & 0x7ff }

// sincosfCoeffs are the cosine (c0..c4) and sine (s1..s3) polynomials;
// the second table entry negates the cosine.
type sincosfCoeffs struct {
	hpiInv, hpi                    float64
	c0, c1, c2, c3, c4, s1, s2, s3 float64
}

var sincosfSign = [4]float64{1, -1, -1, 1}

var sincosfTable = [2]sincosfCoeffs{
	{0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0, 0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16, -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0, -0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16, -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// sincosfPoly evaluates both polynomials at x (x2 = x²), every a+b·c
// fused as the FMA build contracts it; an odd quadrant n swaps them.
func sincosfPoly(x, x2 float64, p *sincosfCoeffs, n int) (sin, cos float32) {
	x4 := float64(x2 * x2)
	x3 := float64(x2 * x)
	c2 := math.FMA(x2, p.c4, p.c3)
	s1 := math.FMA(x2, p.s3, p.s2)
	c1 := math.FMA(x2, p.c1, p.c0)
	x5 := float64(x3 * x2)
	x6 := float64(x4 * x2)
	s := math.FMA(x3, p.s1, x)
	c := math.FMA(x4, p.c2, c1)
	sin, cos = float32(math.FMA(x5, s1, s)), float32(math.FMA(x6, c2, c))
	if n&1 != 0 {
		sin, cos = cos, sin
	}
	return sin, cos
}

// invPio4 holds 32-bit windows, 8 bits apart, of the binary expansion of
// 2/π (the digits 0.a2f9836e…), for the large-argument reduction.
var invPio4 = func() (t [24]uint32) {
	b, _ := hex.DecodeString("000000a2f9836e4e441529fc2757d1f534ddc0db6295993c439041")
	for i := range t {
		t[i] = binary.BigEndian.Uint32(b[i:])
	}
	return t
}()

// sincosfReduceLarge reduces the float with bits xi (|x| ≥ 120) modulo
// π/2 with a 32×96-bit fixed-point product, returning the remainder in
// [-π/4, π/4] and the quadrant.
func sincosfReduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * 0x1.921FB54442D18p-62, int(n)
}
