package quant

// Q6_K: super-blocks of 256 values in 16 groups of 16 with 6-bit quants
// and int8 group scales, times the f16 d: x = d·sc·(q-32). Layout: ql
// (128), qh (64), scales (16), d (2). For each half n of 128 elements and
// i < 32, element 128n+32c+i has its low 4 bits in ql[64n+i] (c = 0 low
// nibble, c = 2 high) or ql[64n+32+i] (c = 1 low, c = 3 high), and its top
// 2 bits at bits 2c of qh[32n+i]. Activations are Q8_K.
const q6_KBytes = 210

// quantizeQ6_K is llama.cpp's quantize_row_q6_K_ref without importance
// matrix: make_qx_quants per group, group scales to int8 against the one
// of largest magnitude, then requantization.
func quantizeQ6_K(dst []byte, src []float32) {
	var levels [QKK]uint8
	var scales [16]float32
	for b := 0; b < len(src)/QKK; b++ {
		x := src[b*QKK : (b+1)*QKK]
		out := dst[b*q6_KBytes : (b+1)*q6_KBytes]
		var maxScale, maxAbs float32
		for j := 0; j < 16; j++ {
			scales[j] = makeQX(32, x[16*j:16*j+16], levels[16*j:16*j+16])
			if a := abs32(scales[j]); a > maxAbs {
				maxAbs, maxScale = a, scales[j]
			}
		}
		clear(out)
		if maxAbs < groupMaxEps {
			continue
		}
		iscale := -128 / maxScale
		le.PutUint16(out[208:], FP32ToFP16(1/iscale))
		d := f16At(out[208:])
		for j := 0; j < 16; j++ {
			sc := int8(min(127, nearestInt(iscale*scales[j])))
			out[192+j] = byte(sc)
			dj := d * float32(sc)
			if dj == 0 {
				// keep the search's levels, as llama.cpp does
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				levels[i] = uint8(clampInt(nearestInt(x[i]/dj), -32, 31) + 32)
			}
		}
		ql, qh := out[0:128], out[128:192]
		for n := 0; n < 2; n++ {
			for i := 0; i < 32; i++ {
				l := levels[128*n+i : 128*n+i+97 : 128*n+i+97]
				ql[64*n+i] = l[0]&0xf | (l[64]&0xf)<<4
				ql[64*n+32+i] = l[32]&0xf | (l[96]&0xf)<<4
				qh[32*n+i] = l[0]>>4 | (l[32]>>4)<<2 | (l[64]>>4)<<4 | (l[96]>>4)<<6
			}
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// unpackQ6_K writes the 256 quants of block x (-32..31) and its scales.
func unpackQ6_K(x []byte, q *[QKK]int32, sc *[16]int32) {
	ql, qh := x[0:128], x[128:192]
	for j := 0; j < 16; j++ {
		sc[j] = int32(int8(x[192+j]))
	}
	for n := 0; n < 2; n++ {
		for i := 0; i < 32; i++ {
			lo0, lo1, h := ql[64*n+i], ql[64*n+32+i], qh[32*n+i]
			q[128*n+i] = int32(lo0&0xf|(h&3)<<4) - 32
			q[128*n+32+i] = int32(lo1&0xf|(h>>2&3)<<4) - 32
			q[128*n+64+i] = int32(lo0>>4|(h>>4&3)<<4) - 32
			q[128*n+96+i] = int32(lo1>>4|(h>>6&3)<<4) - 32
		}
	}
}

func dequantizeQ6_K(src []byte, dst []float32) {
	var q [QKK]int32
	var sc [16]int32
	for b := 0; b < len(dst)/QKK; b++ {
		in := src[b*q6_KBytes : (b+1)*q6_KBytes]
		d := f16At(in[208:])
		unpackQ6_K(in, &q, &sc)
		for i := range q {
			dst[b*QKK+i] = d * float32(sc[i/16]) * float32(q[i])
		}
	}
}

// dotQ6_KQ8_K mirrors llama.cpp's AVX2 ggml_vec_dot_q6_K_q8_K: kLanes'
// 8 lanes fused-multiply-added with d = d8·d, then hsum8. The kernel
// multiplies the unsigned quants (0..63) and subtracts the offset per lane
// as 32·(sc[2u]·bsums[2u] + sc[2u+1]·bsums[2u+1]), whose elements are not
// the lane's own, so the lane integers (and the float rounding) differ
// from signed quants' lanes although the total is the same; a C oracle
// built from ggml's sources showed the difference.
func dotQ6_KQ8_K(n int, w, a []byte) float32 {
	var q [QKK]int32
	var sc [16]int32
	var acc [8]float32
	for b := 0; b < n/QKK; b++ {
		x := w[b*q6_KBytes : (b+1)*q6_KBytes : (b+1)*q6_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes : (b+1)*q8_KBytes]
		d := f32At(y) * f16At(x[208:])
		unpackQ6_K(x, &q, &sc)
		for i := range q {
			q[i] += 32
		}
		for u, l := range kLanes(&q, y, sc[:], 16) {
			l -= 32 * (q8KBsum(y, 2*u)*sc[2*u] + q8KBsum(y, 2*u+1)*sc[2*u+1])
			acc[u] = fma32(d, float32(l), acc[u])
		}
	}
	return hsum8(&acc)
}

func init() {
	formats[Q6_K] = &format{dequant: dequantizeQ6_K, quant: quantizeQ6_K, vecDot: Q8_K, dot: dotQ6_KQ8_K}
}
