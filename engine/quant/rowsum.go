package quant

// AddScaledRows adds a weighted sum of rows to dst:
// dst[j] += coef[0]·m[j] + coef[1]·m[stride+j] + … for j < len(dst),
// each term a product rounded to float32 and then added, rows in order.
// m holds len(coef) rows of at least len(dst) elements, stride elements
// apart. It is the inner loop of attention: scores against transposed
// keys (coef the query) and the probability-weighted sum of values (coef
// the probabilities). Every element is summed in the same order as the
// plain loop, so the vector path's results equal it bit for bit on amd64,
// where Go never fuses a multiply and an add.
func AddScaledRows(dst, coef, m []float32, stride int) {
	if len(dst) == 0 || len(coef) == 0 {
		return
	}
	_ = m[(len(coef)-1)*stride+len(dst)-1] // bounds, before any vector code
	j := addScaledRowsVector(dst, coef, m, stride)
	if j == len(dst) {
		return
	}
	for r, c := range coef {
		row := m[r*stride+j : r*stride+len(dst)]
		d := dst[j:len(dst)]
		d = d[:len(row)]
		for i, v := range row {
			d[i] += float32(c * v) // rounded: no fused multiply-add on arm64
		}
	}
}

// ScaleMul sets dst[i] = x[i]·s·w[i] for i < len(dst), the product
// rounded to float32 after each multiplication, as the plain loop (so the
// vector path's results equal it bit for bit): the last step of an RMS
// normalization. x and w hold at least len(dst) elements.
func ScaleMul(dst, x, w []float32, s float32) {
	if len(dst) == 0 {
		return
	}
	x, w = x[:len(dst)], w[:len(dst)]
	i := scaleMulVector(dst, x, w, s)
	for ; i < len(dst); i++ {
		dst[i] = x[i] * s * w[i]
	}
}

// Add sets dst[i] = x[i] + y[i] for i < len(dst); x and y hold at least
// len(dst) elements.
func Add(dst, x, y []float32) {
	if len(dst) == 0 {
		return
	}
	x, y = x[:len(dst)], y[:len(dst)]
	i := addVector(dst, x, y)
	for ; i < len(dst); i++ {
		dst[i] = x[i] + y[i]
	}
}

// SquareSums8 returns, for each lane j < 8, the sum of in[8k+j]² over the
// longest multiple of 8 elements of in, each square rounded to float32
// and added in float64 in element order, and how many elements that was:
// the eight partial sums of an RMS normalization's default order.
func SquareSums8(in []float32) (s [8]float64, n int) {
	n = len(in) &^ 7
	if n == 0 {
		return s, 0
	}
	if squareSums8Vector(&s, in[:n]) {
		return s, n
	}
	for i := 0; i < n; i += 8 {
		v := in[i : i+8 : i+8]
		for j := range s {
			s[j] += float64(v[j] * v[j])
		}
	}
	return s, n
}
