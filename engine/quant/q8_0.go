package quant

import "math"

// Q8_0: blocks of 32 int8 values with one f16 scale d; x = q·d.
const q8_0Bytes = 34

// quantizeQ8_0 is llama.cpp's reference quantizer (quantize_row_q8_0_ref),
// used for weights.
func quantizeQ8_0(dst []byte, src []float32) {
	for b := 0; b < len(src)/QK; b++ {
		x := src[b*QK : (b+1)*QK]
		out := dst[b*q8_0Bytes : (b+1)*q8_0Bytes]
		var amax float32
		for _, v := range x {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		le.PutUint16(out, FP32ToFP16(d))
		for i, v := range x {
			out[2+i] = byte(int8(math.Round(float64(v * id))))
		}
	}
}

// quantizeActQ8_0 quantizes activations exactly as llama.cpp's AVX2/NEON
// path does before a dot product: the inverse scale is 127/amax (not
// 1/d) and values round half to even. Matching it keeps greedy decoding on
// llama.cpp's tokens where two candidates are nearly tied.
func quantizeActQ8_0(dst []byte, src []float32) {
	nb := len(src) / QK
	for b := 0; b < nb; {
		// The vector path stops before a block it leaves to the scalar
		// one (non-finite or tiny values).
		b += quantizeActQ8_0Vector(dst[b*q8_0Bytes:], src[b*QK:], nb-b)
		if b < nb {
			quantizeActQ8_0Block(dst[b*q8_0Bytes:(b+1)*q8_0Bytes], src[b*QK:(b+1)*QK])
			b++
		}
	}
}

// quantizeActQ8_0Block is quantizeActQ8_0 of one block.
func quantizeActQ8_0Block(out []byte, x []float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	id := float32(0)
	if amax != 0 {
		id = 127 / amax
	}
	le.PutUint16(out, FP32ToFP16(amax/127))
	for i, v := range x {
		out[2+i] = byte(int8(roundHalfEven(float32(v * id))))
	}
}

func dequantizeQ8_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK; b++ {
		in := src[b*q8_0Bytes : (b+1)*q8_0Bytes]
		d := f16At(in)
		out := dst[b*QK : (b+1)*QK]
		for i := range out {
			out[i] = float32(int8(in[2+i])) * d
		}
	}
}

// dotQ8_0Q8_0 reproduces the reduction order of llama.cpp's x86 kernels
// (ggml_vec_dot_q8_0_q8_0 and tinyBLAS): each group of 4 products is summed
// exactly as an integer, scaled by d_w·d_a and accumulated into one of 8
// float lanes with a fused multiply-add, and the lanes are added in the
// order of hsum. Models this small are sensitive enough that another order
// changes greedy tokens.
func dotQ8_0Q8_0(n int, w, a []byte) float32 {
	var acc [8]float32
	for b := 0; b < n/QK; b++ {
		x := w[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		d := f16At(x) * f16At(y)
		qx, qy := x[2:34:34], y[2:34:34]
		for j := 0; j < 8; j++ {
			s := int32(int8(qx[4*j]))*int32(int8(qy[4*j])) + int32(int8(qx[4*j+1]))*int32(int8(qy[4*j+1])) +
				int32(int8(qx[4*j+2]))*int32(int8(qy[4*j+2])) + int32(int8(qx[4*j+3]))*int32(int8(qy[4*j+3]))
			acc[j] = fma32(d, float32(s), acc[j])
		}
	}
	return hsum8(&acc)
}

// fma32 is a float32 fused multiply-add, rounded once as VFMADD231PS
// rounds. The product of two float32 is exact in float64; their sum s is
// rounded to float64 first, which matters only when s falls exactly
// halfway between two float32 values: then the exact sum's error (from
// Knuth's TwoSum) says on which side the unrounded sum lay.
func fma32(a, b, c float32) float32 {
	p, cd := float64(a)*float64(b), float64(c)
	s := p + cd
	if math.Float64bits(s)&(1<<29-1) != 1<<28 {
		return float32(s) // not a float32 midpoint: one rounding
	}
	bp := s - cd
	e := (p - bp) + (cd - (s - bp))
	if e == 0 {
		return float32(s) // a true tie
	}
	return float32(math.Nextafter(s, math.Copysign(math.Inf(1), e)))
}

// hsum8 adds 8 lanes in the order of ggml's hsum_float_8.
func hsum8(x *[8]float32) float32 {
	r0, r1, r2, r3 := x[4]+x[0], x[5]+x[1], x[6]+x[2], x[7]+x[3]
	return (r0 + r2) + (r1 + r3)
}

func init() {
	formats[Q8_0] = &format{dequant: dequantizeQ8_0, quant: quantizeQ8_0, act: quantizeActQ8_0, vecDot: Q8_0, dot: dotQ8_0Q8_0}
}

// roundHalfEven rounds x to the nearest integer, ties to even, for
// |x| < 2^22 (activations scaled into ±127): adding and subtracting
// 1.5·2^23 leaves no fraction bits, and float32 addition rounds to
// nearest even. It is math.RoundToEven without the float64 round trip,
// several times faster in the activation quantizers that run before
// every matrix product.
func roundHalfEven(x float32) float32 {
	const magic = 1.5 * (1 << 23)
	return float32(float32(x+magic) - magic)
}
