package quant

import "math"

// Q4_0: blocks of 32 4-bit values with one f16 scale d; x = (q-8)·d. Byte
// i holds element i in its low nibble and element i+16 in its high nibble.
const q4_0Bytes = 18

// quantizeQ4_0 follows llama.cpp's reference: the scale maps the value of
// largest magnitude to -8.
func quantizeQ4_0(dst []byte, src []float32) {
	for b := 0; b < len(src)/QK; b++ {
		x := src[b*QK : (b+1)*QK]
		out := dst[b*q4_0Bytes : (b+1)*q4_0Bytes]
		var amax, vmax float32
		for _, v := range x {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, vmax = a, v
			}
		}
		d := vmax / -8
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		le.PutUint16(out, FP32ToFP16(d))
		for i := 0; i < 16; i++ {
			q0 := min(15, int8(float32(x[i]*id)+8.5))
			q1 := min(15, int8(float32(x[i+16]*id)+8.5))
			out[2+i] = byte(q0) | byte(q1)<<4
		}
	}
}

func dequantizeQ4_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK; b++ {
		in := src[b*q4_0Bytes : (b+1)*q4_0Bytes]
		d := f16At(in)
		out := dst[b*QK : (b+1)*QK]
		for i := 0; i < 16; i++ {
			out[i] = float32(int(in[2+i]&0xf)-8) * d
			out[i+16] = float32(int(in[2+i]>>4)-8) * d
		}
	}
}

// dotQ4_0Q8_0 uses dotQ8_0Q8_0's reduction order (llama.cpp's x86 one).
func dotQ4_0Q8_0(n int, w, a []byte) float32 {
	var acc [8]float32
	var q [32]int32
	for b := 0; b < n/QK; b++ {
		x := w[b*q4_0Bytes : (b+1)*q4_0Bytes : (b+1)*q4_0Bytes]
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		for i := 0; i < 16; i++ {
			q[i] = int32(x[2+i]&0xf) - 8
			q[i+16] = int32(x[2+i]>>4) - 8
		}
		d := f16At(x) * f16At(y)
		qy := y[2:34:34]
		for j := 0; j < 8; j++ {
			s := q[4*j]*int32(int8(qy[4*j])) + q[4*j+1]*int32(int8(qy[4*j+1])) +
				q[4*j+2]*int32(int8(qy[4*j+2])) + q[4*j+3]*int32(int8(qy[4*j+3]))
			acc[j] = fma32(d, float32(s), acc[j])
		}
	}
	return hsum8(&acc)
}

func init() {
	formats[Q4_0] = &format{dequant: dequantizeQ4_0, quant: quantizeQ4_0, vecDot: Q8_0, dot: dotQ4_0Q8_0}
}
