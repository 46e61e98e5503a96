//go:build amd64 && !noasm

package quant

// maxMinVector handles the longest multiple of 16 elements of x, folding
// them into hi, lo and special, and returns how many it handled.
func maxMinVector(x []float32, hi, lo *float32, special *bool) int {
	n := len(x) &^ 15
	if !hasAVX512F || n == 0 {
		return 0
	}
	h, l, s := maxMinAVX512(&x[0], n)
	*hi, *lo, *special = h, l, s
	return n
}

// expShiftVector handles the longest multiple of 8 elements of src,
// adding to lanes, and returns how many it handled.
func expShiftVector(dst, src []float32, scale, m float32, lanes *[8]float64) int {
	n := len(src) &^ 7
	if !hasAVX512F || n == 0 {
		return 0
	}
	expShiftAVX512(&dst[0], &src[0], n, scale, m, lanes)
	return n
}

// indexAboveVector looks for the first element of x greater than v among
// the longest multiple of 16 elements: its index and true, or how many it
// looked at and false.
func indexAboveVector(x []float32, v float32) (int, bool) {
	n := len(x) &^ 15
	if !hasAVX512F || n == 0 {
		return 0, false
	}
	i := indexCmpAVX512(&x[0], n, v, false)
	return i, i < n
}

// indexEqualVector is indexAboveVector for the first element equal to v.
func indexEqualVector(x []float32, v float32) (int, bool) {
	n := len(x) &^ 15
	if !hasAVX512F || n == 0 {
		return 0, false
	}
	i := indexCmpAVX512(&x[0], n, v, true)
	return i, i < n
}

//go:noescape
func indexCmpAVX512(x *float32, n int, v float32, equal bool) int

//go:noescape
func maxMinAVX512(x *float32, n int) (hi, lo float32, special bool)

//go:noescape
func expShiftAVX512(dst, src *float32, n int, scale, m float32, lanes *[8]float64)

// setWhereClearVector handles the longest multiple of 64 elements of x
// (whose bits are whole words) and returns how many it handled.
func setWhereClearVector(x []float32, bits []uint64, v float32) int {
	n := len(x) &^ 63
	if !hasAVX512F || n == 0 {
		return 0
	}
	setWhereClearAVX512(&x[0], &bits[0], n, v)
	return n
}

//go:noescape
func setWhereClearAVX512(x *float32, bits *uint64, n int, v float32)
