package quant

import "math"

// Quantizers with an importance matrix: llama.cpp's quantize_row_<type>_impl
// for the legacy and K-quant formats, which llama-quantize runs when it is
// given an imatrix (without one it runs the reference quantizers of each
// format's file). Each takes one row and the row's importance weights qw
// (one per column) and follows the C float32 steps, so the bytes match.

// sqrt32 is sqrtf.
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// sumSquares is Σx² in order.
func sumSquares(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(v * v)
	}
	return s
}

// imWeights fills w with qw·√(sigma2+x²), the weights the searches get.
func imWeights(x, qw []float32, sigma2 float32, w []float32) {
	for j, v := range x {
		w[j] = qw[j] * sqrt32(sigma2+float32(v*v))
	}
}

// makeQXW is llama.cpp's make_qx_quants with rmse_type 1 and weights w
// (nil: x²): a symmetric scale for the levels -nmax..nmax-1 (stored in l
// offset by nmax), the best weighted least-squares fit of 19 inverse
// scales around -nmax/max.
func makeQXW(nmax int32, x, w []float32, l []uint8) float32 {
	vmax, amax := absMax(x)
	if amax < groupMaxEps {
		clear(l)
		return 0
	}
	weight := func(i int) float32 {
		if w != nil {
			return w[i]
		}
		return x[i] * x[i]
	}
	fit := func(iscale float32, set bool) (sumLX, sumL2 float32) {
		for i, v := range x {
			q := clampInt(nearestInt(iscale*v), -nmax, nmax-1)
			if set {
				l[i] = uint8(q + nmax)
			}
			wi, fq := weight(i), float32(q)
			sumLX += float32(float32(wi*v) * fq)
			sumL2 += float32(float32(wi*fq) * fq)
		}
		return sumLX, sumL2
	}
	iscale := -float32(nmax) / vmax
	sumLX, sumL2 := fit(iscale, true)
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale := -(float32(nmax) + float32(0.1*float32(is))) / vmax
		sumLX, sumL2 := fit(iscale, false)
		if sumL2 > 0 && sumLX*sumLX > best*sumL2 {
			fit(iscale, true)
			scale = sumLX / sumL2
			best = scale * sumLX
		}
	}
	return scale
}

// makeQP is llama.cpp's make_qp_quants: a scale for the non-negative x
// (group scales or minimums) on the levels 0..nmax under weights w, the
// best of 9 inverse scales refined level by level.
func makeQP(nmax int32, x []float32, l []uint8, w []float32) float32 {
	var vmax float32
	for _, v := range x {
		vmax = max(vmax, v)
	}
	if vmax < groupMaxEps {
		clear(l)
		return 0
	}
	iscale := float32(nmax) / vmax
	for i, v := range x {
		l[i] = uint8(nearestInt(iscale * v))
	}
	scale := 1 / iscale
	var best float32
	for i, v := range x {
		diff := v - float32(scale*float32(l[i]))
		best += float32(float32(w[i]*diff) * diff)
	}
	for is := -4; is <= 4; is++ {
		if is == 0 {
			continue
		}
		isc := (float32(0.1*float32(is)) + float32(nmax)) / vmax
		sc := 1 / isc
		var mse float32
		for i, v := range x {
			q := min(nmax, nearestInt(isc*v))
			diff := v - float32(sc*float32(q))
			mse += float32(float32(w[i]*diff) * diff)
		}
		if mse < best {
			best, iscale = mse, isc
		}
	}
	var sumLX, sumL2 float32
	for i, v := range x {
		q := min(nmax, nearestInt(iscale*v))
		l[i] = uint8(q)
		fq := float32(q)
		sumLX += float32(float32(w[i]*v) * fq)
		sumL2 += float32(float32(w[i]*fq) * fq)
	}
	for try := 0; try < 5; try++ {
		changed := 0
		for i, v := range x {
			wi, li := w[i], float32(l[i])
			slx := sumLX - float32(float32(wi*v)*li)
			sl2 := sumL2 - float32(float32(wi*li)*li)
			if !(slx > 0 && sl2 > 0) {
				continue
			}
			nl := min(nmax, nearestInt(float32(v*sl2)/slx))
			if nl == int32(l[i]) {
				continue
			}
			fn := float32(nl)
			slx += float32(float32(wi*v) * fn)
			sl2 += float32(float32(wi*fn) * fn)
			if float32(slx*slx)*sumL2 > float32(sumLX*sumLX)*sl2 {
				l[i], sumLX, sumL2 = uint8(nl), slx, sl2
				changed++
			}
		}
		if changed == 0 {
			break
		}
	}
	if sumL2 > 0 {
		return sumLX / sumL2
	}
	return 0
}

// rowSigma2 is Σx²/n over the row, the legacy formats' sigma2.
func rowSigma2(x []float32) float32 { return float32(sumSquares(x) / float32(len(x))) }

func quantizeQ4_0Weighted(dst []byte, src, qw []float32) {
	var w [QK]float32
	var l [QK]uint8
	sigma2 := rowSigma2(src)
	for b := 0; b < len(src)/QK; b++ {
		x, out := src[b*QK:(b+1)*QK], dst[b*q4_0Bytes:(b+1)*q4_0Bytes]
		imWeights(x, qw[b*QK:], sigma2, w[:])
		le.PutUint16(out, FP32ToFP16(makeQXW(8, x, w[:], l[:])))
		for j := 0; j < 16; j++ {
			out[2+j] = l[j] | l[j+16]<<4
		}
	}
}

func quantizeQ5_0Weighted(dst []byte, src, qw []float32) {
	var w [QK]float32
	var l [QK]uint8
	sigma2 := rowSigma2(src)
	for b := 0; b < len(src)/QK; b++ {
		x, out := src[b*QK:(b+1)*QK], dst[b*q5_0Bytes:(b+1)*q5_0Bytes]
		imWeights(x, qw[b*QK:], sigma2, w[:])
		le.PutUint16(out, FP32ToFP16(makeQXW(16, x, w[:], l[:])))
		le.PutUint32(out[2:], pack5(out[6:22], l[:]))
	}
}

// pack5 writes 32 5-bit levels as nibbles to qs (element j low, j+16
// high) and returns their fifth bits (bit j of element j).
func pack5(qs []byte, l []uint8) (qh uint32) {
	for j := 0; j < 16; j++ {
		qs[j] = l[j]&0xf | (l[j+16]&0xf)<<4
		qh |= uint32(l[j]>>4&1)<<j | uint32(l[j+16]>>4&1)<<(j+16)
	}
	return qh
}

func quantizeQ4_1Weighted(dst []byte, src, qw []float32) {
	var w [QK]float32
	var l, laux [QK]uint8
	sigma2 := rowSigma2(src)
	for b := 0; b < len(src)/QK; b++ {
		x, out := src[b*QK:(b+1)*QK], dst[b*q4_1Bytes:(b+1)*q4_1Bytes]
		imWeights(x, qw[b*QK:], sigma2, w[:])
		d, m := makeQKX2(15, x, w[:], l[:], laux[:], -0.9, 0.05, 36, false)
		le.PutUint16(out, FP32ToFP16(d))
		le.PutUint16(out[2:], FP32ToFP16(-m))
		for j := 0; j < 16; j++ {
			out[4+j] = l[j] | l[j+16]<<4
		}
	}
}

func quantizeQ5_1Weighted(dst []byte, src, qw []float32) {
	var w [QK]float32
	var l, laux [QK]uint8
	sigma2 := rowSigma2(src)
	for b := 0; b < len(src)/QK; b++ {
		x, out := src[b*QK:(b+1)*QK], dst[b*q5_1Bytes:(b+1)*q5_1Bytes]
		imWeights(x, qw[b*QK:], sigma2, w[:])
		d, m := makeQKX2(31, x, w[:], l[:], laux[:], -0.9, 0.05, 36, false)
		le.PutUint16(out, FP32ToFP16(d))
		le.PutUint16(out[2:], FP32ToFP16(-m))
		le.PutUint32(out[4:], pack5(out[8:24], l[:]))
	}
}

// packK2Bits writes 256 2-bit levels in the Q2_K/Q3_K order: element
// 128n+32k+i is bits 2k..2k+1 of qs[32n+i].
func packK2Bits(qs []byte, l []uint8) {
	for n := 0; n < 2; n++ {
		for i := 0; i < 32; i++ {
			v := l[128*n+i:]
			qs[32*n+i] = v[0] | v[32]<<2 | v[64]<<4 | v[96]<<6
		}
	}
}

func quantizeQ2_KWeighted(dst []byte, src, qw []float32) {
	var l [QKK]uint8
	var laux, ls, lm [16]uint8
	var w, sw, scales, mins [16]float32
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*q2_KBytes:(b+1)*q2_KBytes]
		sigma2 := float32(sumSquares(x) / QKK)
		for j := 0; j < 16; j++ {
			g := x[16*j : 16*j+16]
			imWeights(g, qw[b*QKK+16*j:], sigma2, w[:])
			sw[j] = 0
			for _, v := range w {
				sw[j] += v
			}
			scales[j], mins[j] = makeQKX2(3, g, w[:], l[16*j:16*j+16], laux[:], -0.9, 0.05, 36, false)
		}
		dm := makeQP(15, scales[:], ls[:], sw[:])
		mm := makeQP(15, mins[:], lm[:], sw[:])
		le.PutUint16(out[80:], FP32ToFP16(dm))
		le.PutUint16(out[82:], FP32ToFP16(mm))
		dm, mm = f16At(out[80:]), f16At(out[82:])
		for j := 0; j < 16; j++ {
			out[j] = ls[j] | lm[j]<<4
		}
		for j := 0; j < 16; j++ {
			d := dm * float32(out[j]&0xf)
			if d == 0 {
				continue
			}
			m := float32(mm * float32(out[j]>>4))
			for i := 16 * j; i < 16*j+16; i++ {
				l[i] = uint8(clampInt(nearestInt((x[i]+m)/d), 0, 3))
			}
		}
		packK2Bits(out[16:80], l[:])
	}
}

func quantizeQ3_KWeighted(dst []byte, src, qw []float32) {
	var l [QKK]uint8
	var ls [16]uint8
	var w, sw, scales [16]float32
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*q3_KBytes:(b+1)*q3_KBytes]
		sigma2 := float32(2 * sumSquares(x) / QKK)
		for j := 0; j < 16; j++ {
			g := x[16*j : 16*j+16]
			imWeights(g, qw[b*QKK+16*j:], sigma2, w[:])
			sw[j] = 0
			for _, v := range w {
				sw[j] += v
			}
			scales[j] = makeQXW(4, g, w[:], l[16*j:16*j+16])
		}
		clear(out)
		s := out[96:108]
		dBlock := makeQXW(32, scales[:], sw[:], ls[:])
		for j := 0; j < 16; j++ {
			v := ls[j]
			if j < 8 {
				s[j] = v & 0xf
			} else {
				s[j-8] |= (v & 0xf) << 4
			}
			s[8+j%4] |= (v >> 4) << (2 * (j / 4))
		}
		le.PutUint16(out[108:], FP32ToFP16(dBlock))
		d16 := f16At(out[108:])
		for j := 0; j < 16; j++ {
			d := d16 * float32(q3KScale(s, j))
			if d == 0 {
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				l[i] = uint8(clampInt(nearestInt(x[i]/d), -4, 3) + 4)
			}
		}
		hmask := out[0:32]
		for i, v := range l {
			if v > 3 {
				hmask[i%32] |= 1 << (i / 32)
				l[i] = v - 4
			}
		}
		packK2Bits(out[32:96], l[:])
	}
}

// quantizeK4Weighted is the search shared by Q4_K (nmax 15) and Q5_K
// (31) with an importance matrix: per group of 32 a scale and minimum
// (make_qkx3_quants), both quantized to 6 bits with make_qp_quants and
// written with d and dmin to hdr (4 bytes) and s (12), then the levels
// requantized into l.
func quantizeK4Weighted(x, qw []float32, nmax int32, hdr, s []byte, l []uint8) {
	var laux, ls, lm [32]uint8
	var w [32]float32
	var sw, scales, mins [8]float32
	sigma2 := float32(2 * sumSquares(x) / QKK)
	for j := 0; j < 8; j++ {
		g := x[32*j : 32*j+32]
		imWeights(g, qw[32*j:], sigma2, w[:])
		sw[j] = 0
		for _, v := range w {
			sw[j] += v
		}
		scales[j], mins[j] = makeQKX2(nmax, g, w[:], l[32*j:32*j+32], laux[:], -0.9, 0.05, 36, false)
	}
	dBlock := makeQP(63, scales[:], ls[:8], sw[:])
	mBlock := makeQP(63, mins[:], lm[:8], sw[:])
	clear(s)
	for j := 0; j < 8; j++ {
		packScaleMinK4(j, s, min(63, ls[j]), min(63, lm[j]))
	}
	le.PutUint16(hdr, FP32ToFP16(dBlock))
	le.PutUint16(hdr[2:], FP32ToFP16(mBlock))
	requantK(x, s, f16At(hdr), f16At(hdr[2:]), nmax, l)
}

func quantizeQ4_KWeighted(dst []byte, src, qw []float32) {
	var l [QKK]uint8
	for b := 0; b < len(src)/QKK; b++ {
		out := dst[b*q4_KBytes : (b+1)*q4_KBytes]
		quantizeK4Weighted(src[b*QKK:(b+1)*QKK], qw[b*QKK:], 15, out[0:4], out[4:16], l[:])
		qs := out[16:144]
		for j := 0; j < 4; j++ {
			for i := 0; i < 32; i++ {
				qs[32*j+i] = l[64*j+i] | l[64*j+32+i]<<4
			}
		}
	}
}

func quantizeQ5_KWeighted(dst []byte, src, qw []float32) {
	var l [QKK]uint8
	for b := 0; b < len(src)/QKK; b++ {
		out := dst[b*q5_KBytes : (b+1)*q5_KBytes]
		quantizeK4Weighted(src[b*QKK:(b+1)*QKK], qw[b*QKK:], 31, out[0:4], out[4:16], l[:])
		qh, ql := out[16:48], out[48:176]
		clear(qh)
		for n := 0; n < 4; n++ {
			for j := 0; j < 32; j++ {
				l1, l2 := l[64*n+j], l[64*n+32+j]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= 1 << (2 * n)
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= 2 << (2 * n)
				}
				ql[32*n+j] = l1 | l2<<4
			}
		}
	}
}

func quantizeQ6_KWeighted(dst []byte, src, qw []float32) {
	var l [QKK]uint8
	var scales [16]float32
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*q6_KBytes:(b+1)*q6_KBytes]
		var maxScale, maxAbs float32
		for j := 0; j < 16; j++ {
			scales[j] = makeQXW(32, x[16*j:16*j+16], qw[b*QKK+16*j:b*QKK+16*j+16], l[16*j:16*j+16])
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
		d16 := f16At(out[208:])
		for j := 0; j < 16; j++ {
			out[192+j] = byte(int8(min(127, nearestInt(iscale*scales[j]))))
		}
		for j := 0; j < 16; j++ {
			d := d16 * float32(int8(out[192+j]))
			if d == 0 {
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				l[i] = uint8(clampInt(nearestInt(x[i]/d), -32, 31) + 32)
			}
		}
		ql, qh := out[0:128], out[128:192]
		for n := 0; n < 2; n++ {
			for i := 0; i < 32; i++ {
				v := l[128*n+i : 128*n+i+97 : 128*n+i+97]
				ql[64*n+i] = v[0]&0xf | (v[64]&0xf)<<4
				ql[64*n+32+i] = v[32]&0xf | (v[96]&0xf)<<4
				qh[32*n+i] = v[0]>>4 | (v[32]>>4)<<2 | (v[64]>>4)<<4 | (v[96]>>4)<<6
			}
		}
	}
}

func init() {
	fileQuants[Q4_0] = fileQuant{weighted: quantizeQ4_0Weighted}
	fileQuants[Q4_1] = fileQuant{weighted: quantizeQ4_1Weighted}
	fileQuants[Q5_0] = fileQuant{weighted: quantizeQ5_0Weighted}
	fileQuants[Q5_1] = fileQuant{weighted: quantizeQ5_1Weighted}
	fileQuants[Q2_K] = fileQuant{weighted: quantizeQ2_KWeighted}
	fileQuants[Q3_K] = fileQuant{weighted: quantizeQ3_KWeighted}
	fileQuants[Q4_K] = fileQuant{weighted: quantizeQ4_KWeighted}
	fileQuants[Q5_K] = fileQuant{weighted: quantizeQ5_KWeighted}
	fileQuants[Q6_K] = fileQuant{weighted: quantizeQ6_KWeighted}
}
