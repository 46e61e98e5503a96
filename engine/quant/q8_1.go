package quant

import "math"

// Q8_1: blocks of 32 int8 values with an f16 scale d and an f16 s = d·Σq;
// x = q·d. It is the activation format of Q4_1 and Q5_1, whose dot
// products need Σq to apply the weights' minimum. llama.cpp has no dot
// product with Q8_1 weights, and neither does this package.
const q8_1Bytes = 36

// quantizeQ8_1 is llama.cpp's reference (quantize_row_q8_1_ref): 1/d as
// inverse scale, round half away from zero, s = Σq·d.
func quantizeQ8_1(dst []byte, src []float32) {
	for b := 0; b < len(src)/QK; b++ {
		x := src[b*QK : (b+1)*QK]
		out := dst[b*q8_1Bytes : (b+1)*q8_1Bytes]
		_, amax := absMax(x)
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		var sum int32
		for i, v := range x {
			q := int8(math.Round(float64(v * id)))
			out[4+i] = byte(q)
			sum += int32(q)
		}
		le.PutUint16(out, FP32ToFP16(d))
		le.PutUint16(out[2:], FP32ToFP16(float32(sum)*d))
	}
}

// quantizeActQ8_1 is llama.cpp's AVX2 quantize_row_q8_1: inverse scale
// 127/amax, round half to even, s = d·Σq.
func quantizeActQ8_1(dst []byte, src []float32) {
	for b := 0; b < len(src)/QK; b++ {
		x := src[b*QK : (b+1)*QK]
		out := dst[b*q8_1Bytes : (b+1)*q8_1Bytes]
		_, amax := absMax(x)
		d := amax / 127
		id := float32(0)
		if amax != 0 {
			id = 127 / amax
		}
		var sum int32
		for i, v := range x {
			q := int8(roundHalfEven(float32(v * id)))
			out[4+i] = byte(q)
			sum += int32(q)
		}
		le.PutUint16(out, FP32ToFP16(d))
		le.PutUint16(out[2:], FP32ToFP16(d*float32(sum)))
	}
}

func dequantizeQ8_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK; b++ {
		in := src[b*q8_1Bytes : (b+1)*q8_1Bytes]
		d := f16At(in)
		for i := 0; i < QK; i++ {
			dst[b*QK+i] = float32(int8(in[4+i])) * d
		}
	}
}

func init() {
	formats[Q8_1] = &format{dequant: dequantizeQ8_1, quant: quantizeQ8_1, act: quantizeActQ8_1, vecDot: Q8_1}
}
