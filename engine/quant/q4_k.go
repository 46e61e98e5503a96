package quant

// Q4_K: super-blocks of 256 values in 8 groups of 32 with 4-bit quants;
// each group has a 6-bit scale and 6-bit minimum (packed as scaleMinK4
// reads them), multiplied by the super-block's f16 d and dmin:
// x = d·sc·q - dmin·m. Layout: d, dmin (2+2 bytes), scales (12), qs (128).
// In qs, each 32 bytes hold two groups: group 2k in the low nibbles and
// group 2k+1 in the high nibbles. Activations are Q8_K.
const q4_KBytes = 144

// quantizeQ4_K is llama.cpp's quantize_row_q4_K_ref without importance
// matrix: a make_qkx2_quants search per group, then the group scales and
// minimums quantized to 6 bits and the values requantized with them.
func quantizeQ4_K(dst []byte, src []float32) {
	var laux [32]uint8
	var levels [QKK]uint8
	var w [32]float32
	var scales, mins [8]float32
	for b := 0; b < len(src)/QKK; b++ {
		x := src[b*QKK : (b+1)*QKK]
		out := dst[b*q4_KBytes : (b+1)*q4_KBytes]
		var maxScale, maxMin float32
		for j := 0; j < 8; j++ {
			g := x[32*j : 32*j+32]
			kQuantWeights(g, w[:])
			scales[j], mins[j] = makeQKX2(15, g, w[:], levels[32*j:32*j+32], laux[:], -1, 0.1, 20, false)
			maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
		}
		packKScales(out[4:16], out, &scales, &mins, maxScale, maxMin)
		requantK(x, out[4:16], f16At(out), f16At(out[2:]), 15, levels[:])
		qs := out[16:144]
		for j := 0; j < 4; j++ {
			for i := 0; i < 32; i++ {
				qs[32*j+i] = levels[64*j+i] | levels[64*j+32+i]<<4
			}
		}
	}
}

// packKScales quantizes 8 group scales and minimums to 6 bits relative to
// their maximums and writes them, with d and dmin, in the Q4_K/Q5_K layout
// (hdr[0:2] d, hdr[2:4] dmin).
func packKScales(s, hdr []byte, scales, mins *[8]float32, maxScale, maxMin float32) {
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	clear(s)
	for j := 0; j < 8; j++ {
		ls := uint8(min(63, nearestInt(invScale*scales[j])))
		lm := uint8(min(63, nearestInt(invMin*mins[j])))
		packScaleMinK4(j, s, ls, lm)
	}
	le.PutUint16(hdr, FP32ToFP16(maxScale/63))
	le.PutUint16(hdr[2:], FP32ToFP16(maxMin/63))
}

// requantK chooses the levels 0..nmax of the 8 groups of x with the
// stored (rounded) scales and minimums.
func requantK(x []float32, s []byte, d, dmin float32, nmax int32, levels []uint8) {
	for j := 0; j < 8; j++ {
		sc, m := scaleMinK4(j, s)
		dj := d * float32(sc)
		if dj == 0 {
			// keep the search's levels, as llama.cpp does
			continue
		}
		dm := float32(dmin * float32(m))
		for i := 0; i < 32; i++ {
			levels[32*j+i] = uint8(clampInt(nearestInt((x[32*j+i]+dm)/dj), 0, nmax))
		}
	}
}

func dequantizeQ4_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/QKK; b++ {
		in := src[b*q4_KBytes : (b+1)*q4_KBytes]
		d, dmin := f16At(in), f16At(in[2:])
		s, qs := in[4:16], in[16:144]
		y := dst[b*QKK : (b+1)*QKK]
		for j := 0; j < 4; j++ {
			sc1, m1 := scaleMinK4(2*j, s)
			sc2, m2 := scaleMinK4(2*j+1, s)
			d1, dm1 := d*float32(sc1), float32(dmin*float32(m1))
			d2, dm2 := d*float32(sc2), float32(dmin*float32(m2))
			for i := 0; i < 32; i++ {
				q := qs[32*j+i]
				y[64*j+i] = float32(d1*float32(q&0xf)) - dm1
				y[64*j+32+i] = float32(d2*float32(q>>4)) - dm2
			}
		}
	}
}

// unpackQ4_K writes the 256 quants of block x (0..15) and its group
// scales and minimums: the plain form of the layout, which the tests
// check dotQ4_KQ8_K's inlined lanes against.
func unpackQ4_K(x []byte, q *[QKK]int32, sc, m *[8]int32) {
	s, qs := x[4:16], x[16:144]
	for j := 0; j < 8; j++ {
		a, b := scaleMinK4(j, s)
		sc[j], m[j] = int32(a), int32(b)
	}
	for j := 0; j < 4; j++ {
		for i := 0; i < 32; i++ {
			q[64*j+i] = int32(qs[32*j+i] & 0xf)
			q[64*j+32+i] = int32(qs[32*j+i] >> 4)
		}
	}
}

// dotQ4_KQ8_K mirrors llama.cpp's AVX2 ggml_vec_dot_q4_K_q8_K: the scaled
// quant products in kLanes' 8 lanes, fused-multiply-added with d = d8·d;
// the minimum term in 4 lanes (pairs of groups) with -d8·dmin; at the end
// hsum8 of the first plus the 4 lanes added as (0+2)+(1+3).
func dotQ4_KQ8_K(n int, w, a []byte) float32 {
	var sc, m [8]int32
	var acc [8]float32
	var accM [4]float32
	for b := 0; b < n/QKK; b++ {
		x := w[b*q4_KBytes : (b+1)*q4_KBytes : (b+1)*q4_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes : (b+1)*q8_KBytes]
		d8 := f32At(y)
		d, dmin := d8*f16At(x), -d8*f16At(x[2:])
		for j := 0; j < 8; j++ {
			a, b := scaleMinK4(j, x[4:16])
			sc[j], m[j] = int32(a), int32(b)
		}
		for k, p := range kMinSums32(y, &m) {
			accM[k] = fma32(dmin, float32(p), accM[k])
		}
		// kLanes inlined for the 4-bit layout: byte i of chunk pair j holds
		// element 64j+i (low nibble) and 64j+32+i (high nibble).
		var lanes [8]int32
		for j := 0; j < 4; j++ {
			qs := x[16+32*j : 48+32*j : 48+32*j]
			lo, hi := y[4+64*j:36+64*j:36+64*j], y[36+64*j:68+64*j:68+64*j]
			for u := 0; u < 8; u++ {
				var sl, sh int32
				for k := 4 * u; k < 4*u+4; k++ {
					sl += int32(qs[k]&0xf) * int32(int8(lo[k]))
					sh += int32(qs[k]>>4) * int32(int8(hi[k]))
				}
				lanes[u] += sc[2*j]*sl + sc[2*j+1]*sh
			}
		}
		for u, l := range lanes {
			acc[u] = fma32(d, float32(l), acc[u])
		}
	}
	return hsum8(&acc) + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
}

func init() {
	formats[Q4_K] = &format{dequant: dequantizeQ4_K, quant: quantizeQ4_K, vecDot: Q8_K, dot: dotQ4_KQ8_K}
}
