package quant

// Q2_K: super-blocks of 256 values in 16 groups of 16 with 2-bit quants;
// byte g of scales holds group g's 4-bit scale (low nibble) and 4-bit
// minimum (high nibble), times the f16 d and dmin: x = d·sc·q - dmin·m.
// Layout: scales (16), qs (64), d (2), dmin (2). Element 128n+32k+i
// (i < 32) is bits 2k..2k+1 of qs[32n+i]. Activations are Q8_K.
const q2_KBytes = 84

// quantizeQ2_K is llama.cpp's quantize_row_q2_K_ref: make_qkx2_quants with
// absolute-deviation error and |x| weights per group, 4-bit group scales
// and minimums, then requantization.
func quantizeQ2_K(dst []byte, src []float32) {
	var levels [QKK]uint8
	var laux [16]uint8
	var w [16]float32
	var scales, mins [16]float32
	for b := 0; b < len(src)/QKK; b++ {
		x := src[b*QKK : (b+1)*QKK]
		out := dst[b*q2_KBytes : (b+1)*q2_KBytes]
		var maxScale, maxMin float32
		for j := 0; j < 16; j++ {
			g := x[16*j : 16*j+16]
			for i, v := range g {
				w[i] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2(3, g, w[:], levels[16*j:16*j+16], laux[:], -0.5, 0.1, 15, true)
			maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
		}
		clear(out)
		if maxScale > 0 {
			is := 15 / maxScale
			for j := 0; j < 16; j++ {
				out[j] = uint8(nearestInt(is * scales[j]))
			}
			le.PutUint16(out[80:], FP32ToFP16(maxScale/15))
		}
		if maxMin > 0 {
			is := 15 / maxMin
			for j := 0; j < 16; j++ {
				out[j] |= uint8(nearestInt(is*mins[j])) << 4
			}
			le.PutUint16(out[82:], FP32ToFP16(maxMin/15))
		}
		d, dmin := f16At(out[80:]), f16At(out[82:])
		for j := 0; j < 16; j++ {
			dj := d * float32(out[j]&0xf)
			if dj == 0 {
				continue // keep the search's levels, as llama.cpp does
			}
			dm := float32(dmin * float32(out[j]>>4))
			for i := 16 * j; i < 16*j+16; i++ {
				levels[i] = uint8(clampInt(nearestInt((x[i]+dm)/dj), 0, 3))
			}
		}
		qs := out[16:80]
		for n := 0; n < 2; n++ {
			for i := 0; i < 32; i++ {
				l := levels[128*n+i:]
				qs[32*n+i] = l[0] | l[32]<<2 | l[64]<<4 | l[96]<<6
			}
		}
	}
}

// unpackQ2_K writes the 256 quants of block x (0..3) and its group
// scales and minimums.
func unpackQ2_K(x []byte, q *[QKK]int32, sc, m *[16]int32) {
	for j := 0; j < 16; j++ {
		sc[j], m[j] = int32(x[j]&0xf), int32(x[j]>>4)
	}
	qs := x[16:80]
	for n := 0; n < 2; n++ {
		for k := 0; k < 4; k++ {
			for i := 0; i < 32; i++ {
				q[128*n+32*k+i] = int32(qs[32*n+i] >> (2 * k) & 3)
			}
		}
	}
}

func dequantizeQ2_K(src []byte, dst []float32) {
	var q [QKK]int32
	var sc, m [16]int32
	for b := 0; b < len(dst)/QKK; b++ {
		in := src[b*q2_KBytes : (b+1)*q2_KBytes]
		d, dmin := f16At(in[80:]), f16At(in[82:])
		unpackQ2_K(in, &q, &sc, &m)
		for i := range q {
			dst[b*QKK+i] = float32(d*float32(sc[i/16])*float32(q[i])) - float32(dmin*float32(m[i/16]))
		}
	}
}

// dotQ2_KQ8_K mirrors llama.cpp's AVX2 ggml_vec_dot_q2_K_q8_K: per
// super-block, lane u first takes the minimum term of groups 2u and 2u+1
// (m·bsums, fused-multiply-added with -d8·dmin), then kLanes' lane u
// (fused-multiply-added with d8·d); hsum8 at the end.
func dotQ2_KQ8_K(n int, w, a []byte) float32 {
	var q [QKK]int32
	var sc, m [16]int32
	var acc [8]float32
	for b := 0; b < n/QKK; b++ {
		x := w[b*q2_KBytes : (b+1)*q2_KBytes : (b+1)*q2_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes : (b+1)*q8_KBytes]
		d8 := f32At(y)
		d, dmin := d8*f16At(x[80:]), -d8*f16At(x[82:])
		unpackQ2_K(x, &q, &sc, &m)
		for u := 0; u < 8; u++ {
			p := m[2*u]*q8KBsum(y, 2*u) + m[2*u+1]*q8KBsum(y, 2*u+1)
			acc[u] = fma32(dmin, float32(p), acc[u])
		}
		for u, l := range kLanes(&q, y, sc[:], 16) {
			acc[u] = fma32(d, float32(l), acc[u])
		}
	}
	return hsum8(&acc)
}

func init() {
	formats[Q2_K] = &format{dequant: dequantizeQ2_K, quant: quantizeQ2_K, vecDot: Q8_K, dot: dotQ2_KQ8_K}
}
