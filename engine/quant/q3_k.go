package quant

// Q3_K: super-blocks of 256 values in 16 groups of 16 with 3-bit quants
// and 6-bit signed group scales, times the f16 d: x = d·(sc-32)·(q-4).
// Layout: hmask (32), qs (64), scales (12), d (2). Element 128n+32k+i
// (i < 32) has its low 2 bits at bits 2k of qs[32n+i] and its high bit at
// bit 4n+k of hmask[i]. Scale g has its low 4 bits in the low (g < 8) or
// high (g >= 8) nibble of scales[g%8] and its top 2 bits at bits 2(g/4) of
// scales[8+g%4]. Activations are Q8_K.
const q3_KBytes = 110

// quantizeQ3_K is llama.cpp's quantize_row_q3_K_ref: make_q3_quants per
// group, 6-bit group scales against the one of largest magnitude, then
// requantization.
func quantizeQ3_K(dst []byte, src []float32) {
	var levels [QKK]uint8
	var scales [16]float32
	for b := 0; b < len(src)/QKK; b++ {
		x := src[b*QKK : (b+1)*QKK]
		out := dst[b*q3_KBytes : (b+1)*q3_KBytes]
		var maxScale, amax float32
		for j := 0; j < 16; j++ {
			scales[j] = makeQ3(4, x[16*j:16*j+16], levels[16*j:16*j+16])
			if a := abs32(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}
		clear(out)
		s := out[96:108]
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := 0; j < 16; j++ {
				l := uint8(clampInt(nearestInt(iscale*scales[j]), -32, 31) + 32)
				if j < 8 {
					s[j] = l & 0xf
				} else {
					s[j-8] |= (l & 0xf) << 4
				}
				s[8+j%4] |= (l >> 4) << (2 * (j / 4))
			}
			le.PutUint16(out[108:], FP32ToFP16(1/iscale))
		}
		d := f16At(out[108:])
		for j := 0; j < 16; j++ {
			dj := d * float32(q3KScale(s, j))
			if dj == 0 {
				continue // keep the search's levels, as llama.cpp does
			}
			for i := 16 * j; i < 16*j+16; i++ {
				levels[i] = uint8(clampInt(nearestInt(x[i]/dj), -4, 3) + 4)
			}
		}
		hmask, qs := out[0:32], out[32:96]
		for i, l := range levels {
			if l > 3 {
				hmask[i%32] |= 1 << (i / 32)
				levels[i] = l - 4
			}
		}
		for n := 0; n < 2; n++ {
			for i := 0; i < 32; i++ {
				l := levels[128*n+i:]
				qs[32*n+i] = l[0] | l[32]<<2 | l[64]<<4 | l[96]<<6
			}
		}
	}
}

// q3KScale returns group g's signed scale from Q3_K's 12 packed bytes.
func q3KScale(s []byte, g int) int32 {
	lo := s[g%8] & 0xf
	if g >= 8 {
		lo = s[g%8] >> 4
	}
	return int32(lo|(s[8+g%4]>>(2*(g/4))&3)<<4) - 32
}

// unpackQ3_K writes the 256 quants of block x (-4..3) and its scales.
func unpackQ3_K(x []byte, q *[QKK]int32, sc *[16]int32) {
	hmask, qs, s := x[0:32], x[32:96], x[96:108]
	for g := 0; g < 16; g++ {
		sc[g] = q3KScale(s, g)
	}
	for n := 0; n < 2; n++ {
		for k := 0; k < 4; k++ {
			for i := 0; i < 32; i++ {
				v := int32(qs[32*n+i] >> (2 * k) & 3)
				if hmask[i]>>(4*n+k)&1 == 0 {
					v -= 4
				}
				q[128*n+32*k+i] = v
			}
		}
	}
}

func dequantizeQ3_K(src []byte, dst []float32) {
	var q [QKK]int32
	var sc [16]int32
	for b := 0; b < len(dst)/QKK; b++ {
		in := src[b*q3_KBytes : (b+1)*q3_KBytes]
		d := f16At(in[108:])
		unpackQ3_K(in, &q, &sc)
		for i := range q {
			dst[b*QKK+i] = d * float32(sc[i/16]) * float32(q[i])
		}
	}
}

// dotQ3_KQ8_K mirrors llama.cpp's AVX2 ggml_vec_dot_q3_K_q8_K: kLanes'
// 8 lanes fused-multiply-added with d = d8·d, then hsum8.
func dotQ3_KQ8_K(n int, w, a []byte) float32 {
	var q [QKK]int32
	var sc [16]int32
	var acc [8]float32
	for b := 0; b < n/QKK; b++ {
		x := w[b*q3_KBytes : (b+1)*q3_KBytes : (b+1)*q3_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes : (b+1)*q8_KBytes]
		d := f32At(y) * f16At(x[108:])
		unpackQ3_K(x, &q, &sc)
		for u, l := range kLanes(&q, y, sc[:], 16) {
			acc[u] = fma32(d, float32(l), acc[u])
		}
	}
	return hsum8(&acc)
}

func init() {
	formats[Q3_K] = &format{dequant: dequantizeQ3_K, quant: quantizeQ3_K, vecDot: Q8_K, dot: dotQ3_KQ8_K}
}
