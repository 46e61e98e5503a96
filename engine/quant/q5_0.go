package quant

// Q5_0: blocks of 32 5-bit values with an f16 scale d; x = (q-16)·d. The
// low 4 bits are packed like Q4_0 (element i low nibble, i+16 high nibble
// of byte i); bit i of the little-endian uint32 qh is the fifth bit of
// element i.
const q5_0Bytes = 22

// quantizeQ5_0 follows llama.cpp's reference: the value of largest
// magnitude maps to -16.
func quantizeQ5_0(dst []byte, src []float32) {
	for b := 0; b < len(src)/QK; b++ {
		x := src[b*QK : (b+1)*QK]
		out := dst[b*q5_0Bytes : (b+1)*q5_0Bytes]
		vmax, _ := absMax(x)
		d := vmax / -16
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		le.PutUint16(out, FP32ToFP16(d))
		var qh uint32
		for i := 0; i < 16; i++ {
			q0 := uint8(min(31, int8(float32(x[i]*id)+16.5)))
			q1 := uint8(min(31, int8(float32(x[i+16]*id)+16.5)))
			out[6+i] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4) << i
			qh |= uint32(q1>>4) << (i + 16)
		}
		le.PutUint32(out[2:], qh)
	}
}

func unpackQ5_0(in []byte, q *[32]int32) {
	qh := le.Uint32(in[2:])
	for i := 0; i < 16; i++ {
		q[i] = int32(in[6+i]&0xf|byte(qh>>i&1)<<4) - 16
		q[i+16] = int32(in[6+i]>>4|byte(qh>>(i+16)&1)<<4) - 16
	}
}

func dequantizeQ5_0(src []byte, dst []float32) {
	var q [32]int32
	for b := 0; b < len(dst)/QK; b++ {
		in := src[b*q5_0Bytes : (b+1)*q5_0Bytes]
		d := f16At(in)
		unpackQ5_0(in, &q)
		for i, v := range q {
			dst[b*QK+i] = float32(v) * d
		}
	}
}

// dotQ5_0Q8_0 mirrors llama.cpp's AVX2 ggml_vec_dot_q5_0_q8_0 (dot32).
func dotQ5_0Q8_0(n int, w, a []byte) float32 {
	var acc [8]float32
	var q [32]int32
	for b := 0; b < n/QK; b++ {
		x := w[b*q5_0Bytes : (b+1)*q5_0Bytes : (b+1)*q5_0Bytes]
		y := a[b*q8_0Bytes : (b+1)*q8_0Bytes : (b+1)*q8_0Bytes]
		unpackQ5_0(x, &q)
		dot32(&acc, f16At(x)*f16At(y), &q, y[2:])
	}
	return hsum8(&acc)
}

func init() {
	formats[Q5_0] = &format{dequant: dequantizeQ5_0, quant: quantizeQ5_0, vecDot: Q8_0, dot: dotQ5_0Q8_0}
}
