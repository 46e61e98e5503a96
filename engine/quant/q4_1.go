package quant

// Q4_1: blocks of 32 4-bit values with an f16 scale d and an f16 minimum
// m; x = q·d + m. Byte i holds element i in its low nibble and element
// i+16 in its high nibble. Activations are Q8_1.
const q4_1Bytes = 20

// quantizeQ4_1 follows llama.cpp's reference (quantize_row_q4_1_ref): the
// block's range [min, max] is split into 15 steps.
func quantizeQ4_1(dst []byte, src []float32) {
	for b := 0; b < len(src)/QK; b++ {
		x := src[b*QK : (b+1)*QK]
		out := dst[b*q4_1Bytes : (b+1)*q4_1Bytes]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		le.PutUint16(out, FP32ToFP16(d))
		le.PutUint16(out[2:], FP32ToFP16(lo))
		for i := 0; i < 16; i++ {
			q0 := min(15, int8(float32((x[i]-lo)*id)+0.5))
			q1 := min(15, int8(float32((x[i+16]-lo)*id)+0.5))
			out[4+i] = byte(q0) | byte(q1)<<4
		}
	}
}

func dequantizeQ4_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QK; b++ {
		in := src[b*q4_1Bytes : (b+1)*q4_1Bytes]
		d, m := f16At(in), f16At(in[2:])
		out := dst[b*QK : (b+1)*QK]
		for i := 0; i < 16; i++ {
			out[i] = float32(in[4+i]&0xf)*d + m
			out[i+16] = float32(in[4+i]>>4)*d + m
		}
	}
}

// dotQ4_1Q8_1 mirrors llama.cpp's AVX2 ggml_vec_dot_q4_1_q8_1: the q·q8
// part in dot32's lanes, the minimum's part m·s summed as a scalar
// (summs += m·s, which C compilers targeting AVX2 fuse into an FMA) and
// added after the lanes.
func dotQ4_1Q8_1(n int, w, a []byte) float32 {
	var acc [8]float32
	var q [32]int32
	var summs float32
	for b := 0; b < n/QK; b++ {
		x := w[b*q4_1Bytes : (b+1)*q4_1Bytes : (b+1)*q4_1Bytes]
		y := a[b*q8_1Bytes : (b+1)*q8_1Bytes : (b+1)*q8_1Bytes]
		summs = fma32(f16At(x[2:]), f16At(y[2:]), summs)
		for i := 0; i < 16; i++ {
			q[i] = int32(x[4+i] & 0xf)
			q[i+16] = int32(x[4+i] >> 4)
		}
		dot32(&acc, f16At(x)*f16At(y), &q, y[4:])
	}
	return hsum8(&acc) + summs
}

func init() {
	formats[Q4_1] = &format{dequant: dequantizeQ4_1, quant: quantizeQ4_1, vecDot: Q8_1, dot: dotQ4_1Q8_1}
}
