package quant

import "math"

// The IQ4 quantizers are llama.cpp's quantize_iq4_nl and quantize_iq4_xs
// (what llama-quantize runs, 7 tries of the scale either side of the
// first guess), with or without an importance matrix, in the same float32
// steps so the bytes match.

// iq4BestIndex returns the index of the value of iq4nlValues nearest to
// x, the upper one on a tie, with llama.cpp's best_index_int8 comparisons
// (its binary search finds the first value above x; iq4Upper has that
// for every integer part of x).
func iq4BestIndex(x float32) uint8 {
	v := &iq4nlValues
	if x <= float32(v[0]) {
		return 0
	}
	if !(x < float32(v[15])) {
		return 15 // x >= 113, or NaN as the C search ends
	}
	hi := iq4Upper[int(128+math.Floor(float64(x)))]
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return hi - 1
	}
	return hi
}

// iq4Upper[128+k] is the index of the first value of iq4nlValues above k
// (for -127 <= k < 113): the value above every x in [k, k+1).
var iq4Upper = func() (t [256]uint8) {
	for k := -128; k < 128; k++ {
		i := uint8(0)
		for i < 15 && int(iq4nlValues[i]) <= k {
			i++
		}
		t[128+k] = i
	}
	return t
}()

// iq4Fit returns Σw·q·x and Σw·q² of the levels that inverse scale id
// gives the values x, writing the levels to l when it is not nil.
func iq4Fit(x, w []float32, id float32, l []uint8) (sumQX, sumQ2 float32) {
	for j, v := range x {
		k := iq4BestIndex(float32(id * v))
		if l != nil {
			l[j] = k
		}
		q := float32(iq4nlValues[k])
		sumQX += float32(float32(w[j]*q) * v)
		sumQ2 += float32(float32(w[j]*q) * q)
	}
	return sumQX, sumQ2
}

// iq4Block finds the scale of one 32-value block x under weights w,
// writing the first search's levels to l; ok is false for a block of
// (near) zeros, whose levels are left alone.
func iq4Block(x, w []float32, l []uint8, ntry int) (d float32, ok bool) {
	var amax, vmax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax < groupMaxEps {
		return 0, false
	}
	v0 := float32(iq4nlValues[0])
	if ntry > 0 {
		d = -vmax / v0
	} else {
		d = vmax / v0
	}
	sumQX, sumQ2 := iq4Fit(x, w, 1/d, l)
	d = 0
	if sumQ2 > 0 {
		d = sumQX / sumQ2
	}
	best := d * sumQX
	for t := -ntry; t <= ntry; t++ {
		id := float32(t+int(iq4nlValues[0])) / vmax
		sumQX, sumQ2 := iq4Fit(x, w, id, nil)
		if sumQ2 > 0 && sumQX*sumQX > best*sumQ2 {
			d = sumQX / sumQ2
			best = d * sumQX
		}
	}
	return d, true
}

// iq4Weights fills w with the search's weights for block xb of the
// super-block whose mean square (times 2) is sigma2: x² without an
// importance matrix, qw·√(sigma2+x²) with one.
func iq4Weights(xb, qw []float32, sigma2 float32, w []float32) {
	for j, v := range xb {
		if qw != nil {
			w[j] = qw[j] * float32(math.Sqrt(float64(sigma2+float32(v*v))))
		} else {
			w[j] = v * v
		}
	}
}

// iq4Sigma2 is 2/n·Σx², in the order of the C loop.
func iq4Sigma2(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(v * v)
	}
	return float32(s * (2 / float32(len(x))))
}

// packIQ4Nibbles writes the levels of 32-value chunks as IQ4_NL's nibbles.
func packIQ4Nibbles(q4 []byte, l []uint8) {
	for i := 0; i < len(l)/32; i++ {
		for j := 0; j < 16; j++ {
			q4[16*i+j] = l[32*i+j] | l[32*i+16+j]<<4
		}
	}
}

// quantizeIQ4_NLWeighted quantizes src to IQ4_NL blocks in dst, with
// importance weights qw (len(src) values) or none.
func quantizeIQ4_NLWeighted(dst []byte, src, qw []float32) {
	var l [QK]uint8
	var w [QK]float32
	for b := 0; b < len(src)/QK; b++ {
		x := src[b*QK : (b+1)*QK]
		out := dst[b*iq4_NLBytes : (b+1)*iq4_NLBytes]
		var bw []float32
		if qw != nil {
			bw = qw[b*QK : (b+1)*QK]
		}
		iq4Weights(x, bw, iq4Sigma2(x), w[:])
		d, _ := iq4Block(x, w[:], l[:], 7)
		le.PutUint16(out, FP32ToFP16(d))
		var id float32
		if d != 0 {
			id = 1 / d
		}
		for j, v := range x {
			l[j] = iq4BestIndex(float32(id * v))
		}
		packIQ4Nibbles(out[2:], l[:])
	}
}

// quantizeIQ4_XSWeighted quantizes src to IQ4_XS super-blocks in dst,
// with importance weights qw (len(src) values) or none.
func quantizeIQ4_XSWeighted(dst []byte, src, qw []float32) {
	var l [QKK]uint8
	var w [32]float32
	var scales [8]float32
	for b := 0; b < len(src)/QKK; b++ {
		x := src[b*QKK : (b+1)*QKK]
		out := dst[b*iq4_XSBytes : (b+1)*iq4_XSBytes]
		clear(out)
		sigma2 := iq4Sigma2(x)
		var maxScale, amaxScale float32
		for ib := 0; ib < 8; ib++ {
			xb := x[32*ib : 32*ib+32]
			var bw []float32
			if qw != nil {
				bw = qw[b*QKK+32*ib : b*QKK+32*ib+32]
			}
			iq4Weights(xb, bw, sigma2, w[:])
			d, ok := iq4Block(xb, w[:], l[32*ib:32*ib+32], 7)
			scales[ib] = d
			if !ok {
				continue
			}
			if a := abs32(d); a > amaxScale {
				amaxScale, maxScale = a, d
			}
		}
		d := -maxScale / 32
		le.PutUint16(out, FP32ToFP16(d))
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var sh uint16
		for ib := 0; ib < 8; ib++ {
			ls := clampInt(nearestInt(id*scales[ib]), -32, 31)
			dl := d * float32(ls)
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			for j, v := range x[32*ib : 32*ib+32] {
				l[32*ib+j] = iq4BestIndex(float32(idl * v))
			}
			ls += 32
			out[4+ib/2] |= uint8(ls&0xf) << (4 * (ib % 2))
			sh |= uint16(ls>>4) << (2 * ib)
		}
		le.PutUint16(out[2:], sh)
		packIQ4Nibbles(out[8:], l[:])
	}
}

func quantizeIQ4_NL(dst []byte, src []float32) { quantizeIQ4_NLWeighted(dst, src, nil) }

func quantizeIQ4_XS(dst []byte, src []float32) { quantizeIQ4_XSWeighted(dst, src, nil) }
