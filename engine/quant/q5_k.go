package quant

// Q5_K: like Q4_K with 5-bit quants: x = d·sc·q - dmin·m with q in 0..31.
// Layout: d, dmin (2+2 bytes), scales (12, as Q4_K), qh (32), qs (128).
// qs packs the low 4 bits as Q4_K does; the fifth bit of element 64k+i
// (i < 32) is bit 2k of qh[i], of element 64k+32+i bit 2k+1. Activations
// are Q8_K.
const q5_KBytes = 176

// quantizeQ5_K is llama.cpp's quantize_row_q5_K_ref without importance
// matrix (make_qkx2_quants with 31 levels, rmin -0.5, 16 steps).
func quantizeQ5_K(dst []byte, src []float32) {
	var laux [32]uint8
	var levels [QKK]uint8
	var w [32]float32
	var scales, mins [8]float32
	for b := 0; b < len(src)/QKK; b++ {
		x := src[b*QKK : (b+1)*QKK]
		out := dst[b*q5_KBytes : (b+1)*q5_KBytes]
		var maxScale, maxMin float32
		for j := 0; j < 8; j++ {
			g := x[32*j : 32*j+32]
			kQuantWeights(g, w[:])
			scales[j], mins[j] = makeQKX2(31, g, w[:], levels[32*j:32*j+32], laux[:], -0.5, 0.1, 15, false)
			maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
		}
		packKScales(out[4:16], out, &scales, &mins, maxScale, maxMin)
		requantK(x, out[4:16], f16At(out), f16At(out[2:]), 31, levels[:])
		qh, qs := out[16:48], out[48:176]
		clear(qh)
		for j := 0; j < 4; j++ {
			for i := 0; i < 32; i++ {
				l1, l2 := levels[64*j+i], levels[64*j+32+i]
				qh[i] |= (l1>>4)<<(2*j) | (l2>>4)<<(2*j+1)
				qs[32*j+i] = l1&0xf | (l2&0xf)<<4
			}
		}
	}
}

// unpackQ5_K writes the 256 quants of block x (0..31) and its group
// scales and minimums.
func unpackQ5_K(x []byte, q *[QKK]int32, sc, m *[8]int32) {
	s, qh, qs := x[4:16], x[16:48], x[48:176]
	for j := 0; j < 8; j++ {
		a, b := scaleMinK4(j, s)
		sc[j], m[j] = int32(a), int32(b)
	}
	for j := 0; j < 4; j++ {
		for i := 0; i < 32; i++ {
			q[64*j+i] = int32(qs[32*j+i]&0xf | (qh[i]>>(2*j)&1)<<4)
			q[64*j+32+i] = int32(qs[32*j+i]>>4 | (qh[i]>>(2*j+1)&1)<<4)
		}
	}
}

func dequantizeQ5_K(src []byte, dst []float32) {
	var q [QKK]int32
	var sc, m [8]int32
	for b := 0; b < len(dst)/QKK; b++ {
		in := src[b*q5_KBytes : (b+1)*q5_KBytes]
		d, dmin := f16At(in), f16At(in[2:])
		unpackQ5_K(in, &q, &sc, &m)
		for i := range q {
			dst[b*QKK+i] = float32(d*float32(sc[i/32])*float32(q[i])) - float32(dmin*float32(m[i/32]))
		}
	}
}

// dotQ5_KQ8_K mirrors llama.cpp's AVX2 ggml_vec_dot_q5_K_q8_K: the
// scaled quant products in kLanes' 8 lanes, fused-multiply-added with
// d = d8·d; the minimum term summed exactly per super-block and
// accumulated as a scalar (summs += dmin·Σ, which compilers fuse into an
// FMA); at the end hsum8 plus that scalar.
func dotQ5_KQ8_K(n int, w, a []byte) float32 {
	var q [QKK]int32
	var sc, m [8]int32
	var acc [8]float32
	var summs float32
	for b := 0; b < n/QKK; b++ {
		x := w[b*q5_KBytes : (b+1)*q5_KBytes : (b+1)*q5_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes : (b+1)*q8_KBytes]
		d8 := f32At(y)
		d, dmin := d8*f16At(x), -d8*f16At(x[2:])
		unpackQ5_K(x, &q, &sc, &m)
		p := kMinSums32(y, &m)
		summs = fma32(dmin, float32((p[0]+p[2])+(p[1]+p[3])), summs)
		for u, l := range kLanes(&q, y, sc[:], 32) {
			acc[u] = fma32(d, float32(l), acc[u])
		}
	}
	return hsum8(&acc) + summs
}

func init() {
	formats[Q5_K] = &format{dequant: dequantizeQ5_K, quant: quantizeQ5_K, vecDot: Q8_K, dot: dotQ5_KQ8_K}
}
