package quant

import "math"

// Helpers shared by the K-quant reference quantizers. They follow the
// searches of llama.cpp's ggml-quants.c (make_qkx2_quants, make_q3_quants,
// make_qx_quants) without an importance matrix, in float32 arithmetic.

// groupMaxEps is the magnitude below which a group is treated as zero.
const groupMaxEps = 1e-15

// nearestInt rounds to the nearest integer, ties to even, as ggml's
// nearest_int does with its 1.5·2²³ trick.
func nearestInt(f float32) int32 { return int32(math.RoundToEven(float64(f))) }

func clampInt(v, lo, hi int32) int32 { return max(lo, min(hi, v)) }

// makeQKX2 finds a scale and a (non-positive) minimum for the levels
// 0..nmax of the values x under weights w, by trying nstep+1 inverse
// scales around nmax/(max-min) and solving weighted least squares for
// each. It writes the levels to l and returns the scale and -min. With
// mad the error measure is the weighted absolute deviation, otherwise the
// weighted squared one.
func makeQKX2(nmax int32, x, w []float32, l, laux []uint8, rmin, rdelta float32, nstep int, mad bool) (scale, negMin float32) {
	lo, hi := x[0], x[0]
	sumW, sumX := w[0], w[0]*x[0]
	for i := 1; i < len(x); i++ {
		lo, hi = min(lo, x[i]), max(hi, x[i])
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	lo = min(lo, 0)
	if hi == lo {
		clear(l)
		return 0, -lo
	}
	errOf := func(d float32) float32 {
		if mad {
			return float32(math.Abs(float64(d)))
		}
		return d * d
	}
	iscale := float32(nmax) / (hi - lo)
	scale = 1 / iscale
	var best float32
	for i, v := range x {
		q := clampInt(nearestInt(iscale*(v-lo)), 0, nmax)
		l[i] = uint8(q)
		best += float32(w[i] * errOf(float32(scale*float32(q))+lo-v))
	}
	for is := 0; is <= nstep; is++ {
		iscale := (rmin + float32(rdelta*float32(is)) + float32(nmax)) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			q := clampInt(nearestInt(iscale*(v-lo)), 0, nmax)
			laux[i] = uint8(q)
			fq := float32(q)
			sumL += float32(w[i] * fq)
			sumL2 += float32(w[i] * fq * fq)
			sumXL += float32(w[i] * fq * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D <= 0 {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var cur float32
		for i, v := range x {
			cur += float32(w[i] * errOf(float32(thisScale*float32(laux[i]))+thisMin-v))
		}
		if cur < best {
			copy(l, laux)
			best, scale, lo = cur, thisScale, thisMin
		}
	}
	return scale, -lo
}

// makeQ3 finds a symmetric scale for the levels -nmax..nmax-1 of x
// (stored in l offset by nmax), refining the levels one at a time to
// minimise the x²-weighted squared error, as llama.cpp's make_q3_quants
// with do_rmse.
func makeQ3(nmax int32, x []float32, l []uint8) float32 {
	vmax, amax := absMax(x)
	if amax < groupMaxEps {
		clear(l)
		return 0
	}
	iscale := -float32(nmax) / vmax
	var q [32]int32
	var sumLX, sumL2 float32
	for i, v := range x {
		q[i] = clampInt(nearestInt(iscale*v), -nmax, nmax-1)
		w := v * v
		sumLX += float32(w * v * float32(q[i]))
		sumL2 += float32(w * float32(q[i]) * float32(q[i]))
	}
	for try := 0; try < 5; try++ {
		changed := 0
		for i, v := range x {
			w := v * v
			slx := sumLX - float32(w*v*float32(q[i]))
			if slx <= 0 {
				continue
			}
			sl2 := sumL2 - float32(w*float32(q[i])*float32(q[i]))
			nq := clampInt(nearestInt(v*sl2/slx), -nmax, nmax-1)
			if nq == q[i] {
				continue
			}
			slx += float32(w * v * float32(nq))
			sl2 += float32(w * float32(nq) * float32(nq))
			if sl2 > 0 && slx*slx*sumL2 > sumLX*sumLX*sl2 {
				q[i], sumLX, sumL2 = nq, slx, sl2
				changed++
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range x {
		l[i] = uint8(q[i] + nmax)
	}
	if sumL2 <= 0 {
		return 0
	}
	return sumLX / sumL2
}

// makeQX finds a symmetric scale for the levels -nmax..nmax-1 of x
// (stored in l offset by nmax) by trying 18 inverse scales around
// -nmax/max and keeping the best x²-weighted least-squares fit, as
// llama.cpp's make_qx_quants with rmse_type 1.
func makeQX(nmax int32, x []float32, l []uint8) float32 {
	vmax, amax := absMax(x)
	if amax < groupMaxEps {
		clear(l)
		return 0
	}
	fit := func(iscale float32) (sumLX, sumL2 float32) {
		for _, v := range x {
			q := float32(clampInt(nearestInt(iscale*v), -nmax, nmax-1))
			w := v * v
			sumLX += float32(w * v * q)
			sumL2 += float32(w * q * q)
		}
		return sumLX, sumL2
	}
	set := func(iscale float32) {
		for i, v := range x {
			l[i] = uint8(nmax + clampInt(nearestInt(iscale*v), -nmax, nmax-1))
		}
	}
	iscale := -float32(nmax) / vmax
	set(iscale)
	sumLX, sumL2 := fit(iscale)
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
		sumLX, sumL2 := fit(iscale)
		if sumL2 > 0 && sumLX*sumLX > best*sumL2 {
			set(iscale)
			scale = sumLX / sumL2
			best = scale * sumLX
		}
	}
	return scale
}

// scaleMinK4 unpacks the 6-bit scale and minimum of sub-block j from the
// 12 packed bytes of Q4_K and Q5_K: sub-blocks 0-3 keep them in the low 6
// bits of bytes j and j+4; sub-blocks 4-7 in the nibbles of byte j+4 plus
// the top 2 bits of bytes j-4 and j.
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// packScaleMinK4 is the inverse of scaleMinK4 for 6-bit sc and m.
func packScaleMinK4(j int, s []byte, sc, m uint8) {
	if j < 4 {
		s[j] = sc
		s[j+4] = m
		return
	}
	s[j+4] = sc&0xf | (m&0xf)<<4
	s[j-4] |= (sc >> 4) << 6
	s[j] |= (m >> 4) << 6
}

// kQuantWeights are the weights make_qkx2_quants gets for Q4_K and Q5_K:
// the group's RMS plus each value's magnitude.
func kQuantWeights(x, w []float32) {
	var sumX2 float32
	for _, v := range x {
		sumX2 += float32(v * v)
	}
	av := float32(math.Sqrt(float64(sumX2 / float32(len(x)))))
	for i, v := range x {
		w[i] = av + float32(math.Abs(float64(v)))
	}
}

// q8KBsum returns bsums[j] of the Q8_K block y: the sum of its quants
// 16j..16j+15, which the K-quants' minimum terms multiply.
func q8KBsum(y []byte, j int) int32 { return int32(int16(le.Uint16(y[4+256+2*j:]))) }

func f32At(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) }

// kLanes returns the 8 integer lanes of llama.cpp's AVX2 K-quant dot
// products for one super-block: lane u adds sc[g]·q·q8 over the elements
// 32c+4u .. 32c+4u+3 of every 32-element chunk c, g being the element's
// group of the given size. The sums are exact; only the assignment of
// elements to lanes matters, because each lane is scaled and accumulated
// in float32 separately.
func kLanes(q *[QKK]int32, y []byte, sc []int32, size int) (l [8]int32) {
	q8 := y[4:260:260]
	for e := 0; e < QKK; e += 4 {
		s := q[e]*int32(int8(q8[e])) + q[e+1]*int32(int8(q8[e+1])) +
			q[e+2]*int32(int8(q8[e+2])) + q[e+3]*int32(int8(q8[e+3]))
		l[e/4%8] += sc[e/size] * s
	}
	return l
}

// kMinSums32 returns, for groups of 32, Σ over each pair of groups
// (2p, 2p+1) of m[g]·(sum of the group's activation quants) — the four
// lanes of the AVX2 Q4_K and Q5_K kernels' minimum term.
func kMinSums32(y []byte, m *[8]int32) (p [4]int32) {
	for k := 0; k < 4; k++ {
		s0 := q8KBsum(y, 4*k) + q8KBsum(y, 4*k+1)
		s1 := q8KBsum(y, 4*k+2) + q8KBsum(y, 4*k+3)
		p[k] = m[2*k]*s0 + m[2*k+1]*s1
	}
	return p
}
