package quant

import "math"

// halfTable holds every half value as float32: a derived table, computed
// once, that makes conversion one load.
var halfTable = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = fp16ToFP32(uint16(h))
	}
	return &t
}()

// FP16ToFP32 converts an IEEE 754 half-precision value to float32 exactly.
func FP16ToFP32(h uint16) float32 { return halfTable[h] }

func fp16ToFP32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or nan
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: normalise.
	e := uint32(113)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// FP32ToFP16 converts float32 to half precision, rounding to nearest even
// like the F16C instruction VCVTPS2PH; NaN stays NaN, overflow becomes inf.
func FP32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(h)
}

// BF16ToFP32 converts a bfloat16 value to float32 exactly.
func BF16ToFP32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// FP32ToBF16 converts float32 to bfloat16 rounding to nearest even; NaN is
// kept a (quiet) NaN.
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}
