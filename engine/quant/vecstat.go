package quant

import "math"

// MaxMin returns the largest element of x, the smallest other than −Inf,
// and whether x holds a NaN or +Inf (special); where it does, the largest
// and smallest are unspecified. −Inf (a banned token's logit) is no
// special value: with nothing else, x gives −Inf and +Inf.
func MaxMin(x []float32) (hi, lo float32, special bool) {
	hi, lo = float32(math.Inf(-1)), float32(math.Inf(1))
	i := maxMinVector(x, &hi, &lo, &special)
	for _, v := range x[i:] {
		switch {
		case v != v || v > math.MaxFloat32:
			special = true
		case v < -math.MaxFloat32: // −Inf
		default:
			hi, lo = max(hi, v), min(lo, v)
		}
	}
	return hi, lo, special
}

// ExpShift sets dst[i] = e^(src[i]·scale − m) for every element of src
// (len(dst) ≥ len(src); dst may be src), each step rounded to float32 and
// the exponential as Exp computes it: float32(math.Exp(float64(
// float32(src[i]*scale) − m))). It returns the sum of the results in
// float64, in eight lanes: lane k adds the elements of index k modulo 8
// in index order, and the lanes are added as ((l0+l4) + (l2+l6)) +
// ((l1+l5) + (l3+l7)). It is a softmax's exponentials and their sum.
func ExpShift(dst, src []float32, scale, m float32) float64 {
	var lanes [8]float64
	expShiftLanes(dst[:len(src)], src, scale, m, &lanes)
	return LaneSum(&lanes)
}

// ExpShiftSum is ExpShift's sum without its exponentials.
func ExpShiftSum(src []float32, scale, m float32) float64 {
	var buf [1024]float32 // a multiple of 8: each part's lanes go on from the last's
	var lanes [8]float64
	for i := 0; i < len(src); i += len(buf) {
		part := src[i:min(len(src), i+len(buf))]
		expShiftLanes(buf[:len(part)], part, scale, m, &lanes)
	}
	return LaneSum(&lanes)
}

// expShiftLanes is ExpShift adding to lanes (len(dst) = len(src)).
func expShiftLanes(dst, src []float32, scale, m float32, lanes *[8]float64) {
	i := expShiftVector(dst, src, scale, m, lanes)
	for ; i < len(src); i++ {
		e := float32(math.Exp(float64(float32(src[i]*scale) - m)))
		dst[i] = e
		lanes[i&7] += float64(e)
	}
}

// LaneSum adds eight lane sums in ExpShift's order.
func LaneSum(l *[8]float64) float64 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

// IndexAbove returns the index of the first element of x greater than v,
// or len(x) when there is none (a NaN is never greater).
func IndexAbove(x []float32, v float32) int {
	i, found := indexAboveVector(x, v)
	if found {
		return i
	}
	for ; i < len(x); i++ {
		if x[i] > v {
			return i
		}
	}
	return len(x)
}

// IndexEqual returns the index of the first element of x equal to v, or
// len(x) when there is none.
func IndexEqual(x []float32, v float32) int {
	i, found := indexEqualVector(x, v)
	if found {
		return i
	}
	for ; i < len(x); i++ {
		if x[i] == v {
			return i
		}
	}
	return len(x)
}

// SetWhereClear sets x[i] = v for every i whose bit in bits is clear (bit
// i%64 of word i/64; words past the end of bits count as clear).
func SetWhereClear(x []float32, bits []uint64, v float32) {
	n := min(len(x), 64*len(bits))
	i := setWhereClearVector(x[:n], bits, v)
	for ; i < len(x); i++ {
		if i >= n || bits[i>>6]&(1<<(i&63)) == 0 {
			x[i] = v
		}
	}
}
