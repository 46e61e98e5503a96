package quant

// Q5_1: blocks of 32 5-bit values with an f16 scale d and f16 minimum m;
// x = q·d + m. Bits are packed as in Q5_0 after the two halves (d, m, qh,
// qs). Activations are Q8_1.
const q5_1Bytes = 24

// quantizeQ5_1 follows llama.cpp's reference: [min, max] in 31 steps.
func quantizeQ5_1(dst []byte, src []float32) {
	for b := 0; b < len(src)/QK; b++ {
		x := src[b*QK : (b+1)*QK]
		out := dst[b*q5_1Bytes : (b+1)*q5_1Bytes]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		le.PutUint16(out, FP32ToFP16(d))
		le.PutUint16(out[2:], FP32ToFP16(lo))
		var qh uint32
		for i := 0; i < 16; i++ {
			q0 := uint8(float32((x[i]-lo)*id) + 0.5)
			q1 := uint8(float32((x[i+16]-lo)*id) + 0.5)
			out[8+i] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1) << i
			qh |= uint32(q1>>4&1) << (i + 16)
		}
		le.PutUint32(out[4:], qh)
	}
}

func unpackQ5_1(in []byte, q *[32]int32) {
	qh := le.Uint32(in[4:])
	for i := 0; i < 16; i++ {
		q[i] = int32(in[8+i]&0xf | byte(qh>>i&1)<<4)
		q[i+16] = int32(in[8+i]>>4 | byte(qh>>(i+16)&1)<<4)
	}
}

func dequantizeQ5_1(src []byte, dst []float32) {
	var q [32]int32
	for b := 0; b < len(dst)/QK; b++ {
		in := src[b*q5_1Bytes : (b+1)*q5_1Bytes]
		d, m := f16At(in), f16At(in[2:])
		unpackQ5_1(in, &q)
		for i, v := range q {
			dst[b*QK+i] = float32(v)*d + m
		}
	}
}

// dotQ5_1Q8_1 mirrors llama.cpp's AVX2 ggml_vec_dot_q5_1_q8_1 (dot32
// lanes plus the scalar sum of m·s).
func dotQ5_1Q8_1(n int, w, a []byte) float32 {
	var acc [8]float32
	var q [32]int32
	var summs float32
	for b := 0; b < n/QK; b++ {
		x := w[b*q5_1Bytes : (b+1)*q5_1Bytes : (b+1)*q5_1Bytes]
		y := a[b*q8_1Bytes : (b+1)*q8_1Bytes : (b+1)*q8_1Bytes]
		summs = fma32(f16At(x[2:]), f16At(y[2:]), summs)
		unpackQ5_1(x, &q)
		dot32(&acc, f16At(x)*f16At(y), &q, y[4:])
	}
	return hsum8(&acc) + summs
}

func init() {
	formats[Q5_1] = &format{dequant: dequantizeQ5_1, quant: quantizeQ5_1, vecDot: Q8_1, dot: dotQ5_1Q8_1}
}
