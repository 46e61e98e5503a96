package testmodel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// ErrType is returned for a weight type the generator cannot encode.
var ErrType = errors.New("testmodel: unsupported weight type")

// encode writes src as type t into dst (len(dst) must be the encoded size).
//
// Only the float types are encoded here, by plain conversion, because
// engine/quant has no Quantize yet; once it does, every type (including
// these) should go through it instead.
func encode(t quant.Type, src []float32, dst []byte) error {
	le := binary.LittleEndian
	switch t {
	case quant.F32:
		for i, x := range src {
			le.PutUint32(dst[4*i:], math.Float32bits(x))
		}
	case quant.F16:
		for i, x := range src {
			le.PutUint16(dst[2*i:], toHalf(x))
		}
	case quant.BF16:
		for i, x := range src {
			le.PutUint16(dst[2*i:], toBFloat(x))
		}
	default:
		return fmt.Errorf("%w %s (f32, f16 and bf16 until engine/quant provides Quantize)", ErrType, t)
	}
	return nil
}

// supported reports whether encode handles t.
func supported(t quant.Type) bool {
	return t == quant.F32 || t == quant.F16 || t == quant.BF16
}

// toBFloat rounds to nearest even; the generator never produces NaN.
func toBFloat(x float32) uint16 {
	b := math.Float32bits(x)
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// toHalf converts to IEEE half precision with round-to-nearest-even. The
// generator's values are finite and far inside the half range, but
// overflow and subnormals are handled for completeness.
func toHalf(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp >= 0x1f: // overflow (or inf/nan) → inf
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is correct rounding
	}
	return sign | uint16(half)
}
