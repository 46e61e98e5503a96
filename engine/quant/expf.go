package quant

import (
	"math"
	"math/big"
)

// Expf returns e^x rounded to float32 exactly as glibc's expf does on
// x86-64 with FMA (the ARM optimized-routines algorithm glibc has used
// since 2.28): x·32/ln2 is split into an integer k and a remainder r, and
// e^x = 2^(k/32) · p(r) with a table of 2^(i/32) and a cubic evaluated in
// float64 with fused multiply-adds. Its error is under 0.502 ulp, so it
// differs from float32(math.Exp(x)) only in rare near-halfway cases; it
// is here because llama.cpp's attention calls expf once per key, and a
// model that must reproduce llama.cpp's tokens must round those the same.
func Expf(x float32) float32 {
	const (
		shift    = 0x1.8p+52
		invLn2N  = 0x1.71547652b82fep+0 * 32
		c0       = 0x1.c6af84b912394p-5 / 32 / 32 / 32
		c1       = 0x1.ebfce50fac4f3p-3 / 32 / 32
		c2       = 0x1.62e42ff0c52d6p-1 / 32
		overflow = 0x1.62e42ep6  // log(2^128)
		underflw = -0x1.9fe368p6 // log(2^-150)
	)
	if abstop := math.Float32bits(x) >> 20 & 0x7ff; abstop >= math.Float32bits(88)>>20 {
		switch {
		case math.IsInf(float64(x), -1):
			return 0
		case abstop >= math.Float32bits(float32(math.Inf(1)))>>20:
			return x + x
		case x > overflow:
			return float32(math.Inf(1))
		case x < underflw:
			return 0
		}
	}
	z := float64(invLn2N * float64(x)) // explicit conversions keep arm64 from fusing
	kd := z + shift
	ki := math.Float64bits(kd)
	kd -= shift
	r := z - kd
	t := expfTable[ki%32] + ki<<47
	s := math.Float64frombits(t)
	p := math.FMA(c0, r, c1)
	r2 := float64(r * r)
	y := math.FMA(c2, r, 1)
	y = math.FMA(p, r2, y)
	return float32(float64(y * s))
}

// expfTable[i] holds the bits of 2^(i/32) less i<<47, so that adding k<<47
// for k ≡ i (mod 32) gives 2^(k/32).
var expfTable = func() (t [32]uint64) {
	for i := range t {
		x := new(big.Float).SetPrec(200).SetMantExp(big.NewFloat(1), i)
		for range 5 {
			x.Sqrt(x)
		}
		f, _ := x.Float64()
		t[i] = math.Float64bits(f) - uint64(i)<<47
	}
	return t
}()
