// Package gemm multiplies dense row-major matrices of float32 or float64,
// the products a trainer needs: C += A·B (NN), C += A·Bᵀ (NT) and
// C += Aᵀ·B (TN). Float64 runs portable Go (gradient checks want its
// precision, not its speed); float32 runs AVX-512 or AVX2 register-tiled
// kernels on amd64 and the same portable Go elsewhere.
//
// Every function adds to C and reads A and B through row strides, so a
// caller multiplies views (one attention head's columns, a block of
// rows) without copying. The functions are single-threaded: callers split
// C into column or row ranges to use several cores. Shapes are programming
// errors, not input: a slice too short for the shape panics.
package gemm

// Float is an element type the products take.
type Float interface{ float32 | float64 }

// NN adds A·B to C: C is m×n (row stride ldc), A is m×k (lda), B is k×n
// (ldb).
func NN[F Float](m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	check(m, k, a, lda)
	check(k, n, b, ldb)
	check(m, n, c, ldc)
	if a32, ok := any(a).([]float32); ok && level != isaNone {
		nn32(m, n, k, a32, lda, any(b).([]float32), ldb, any(c).([]float32), ldc)
		return
	}
	nnGo(m, n, k, a, lda, b, ldb, c, ldc)
}

// NT adds A·Bᵀ to C: C is m×n (ldc), A is m×k (lda), B is n×k (ldb).
func NT[F Float](m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	check(m, k, a, lda)
	check(n, k, b, ldb)
	check(m, n, c, ldc)
	if a32, ok := any(a).([]float32); ok && level != isaNone {
		nt32(m, n, k, a32, lda, any(b).([]float32), ldb, any(c).([]float32), ldc)
		return
	}
	ntGo(m, n, k, a, lda, b, ldb, c, ldc)
}

// TN adds Aᵀ·B to C: C is m×n (ldc), A is k×m (lda), B is k×n (ldb).
func TN[F Float](m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	check(k, m, a, lda)
	check(k, n, b, ldb)
	check(m, n, c, ldc)
	if a32, ok := any(a).([]float32); ok && level != isaNone {
		tn32(m, n, k, a32, lda, any(b).([]float32), ldb, any(c).([]float32), ldc)
		return
	}
	tnGo(m, n, k, a, lda, b, ldb, c, ldc)
}

// Transpose writes the transpose of the r×c matrix src (row stride lds)
// into dst (c×r, row stride ldd).
func Transpose[F Float](r, c int, src []F, lds int, dst []F, ldd int) {
	if r == 0 || c == 0 {
		return
	}
	check(r, c, src, lds)
	check(c, r, dst, ldd)
	transpose(r, c, src, lds, dst, ldd)
}

// check panics unless x holds rows×cols elements at row stride ld.
func check[F Float](rows, cols int, x []F, ld int) {
	if rows < 0 || cols < 0 || ld < cols {
		panic("gemm: bad shape")
	}
	_ = x[(rows-1)*ld+cols-1]
}

// transpose is Transpose without the checks, in 8×8 tiles so both sides
// stay in cache lines.
func transpose[F Float](r, c int, src []F, lds int, dst []F, ldd int) {
	const t = 8
	for i0 := 0; i0 < r; i0 += t {
		i1 := min(i0+t, r)
		for j0 := 0; j0 < c; j0 += t {
			j1 := min(j0+t, c)
			for i := i0; i < i1; i++ {
				row := src[i*lds+j0 : i*lds+j1]
				for j, v := range row {
					dst[(j0+j)*ldd+i] = v
				}
			}
		}
	}
}

// nnGo is the portable NN: 4×4 tiles of C held in variables while k
// runs, then the edges element by element.
func nnGo[F Float](m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	m4, n4 := m&^3, n&^3
	for i := 0; i < m4; i += 4 {
		a0, a1, a2, a3 := a[i*lda:i*lda+k], a[(i+1)*lda:(i+1)*lda+k], a[(i+2)*lda:(i+2)*lda+k], a[(i+3)*lda:(i+3)*lda+k]
		for j := 0; j < n4; j += 4 {
			var s [4][4]F
			for p := range a0 {
				br := b[p*ldb+j : p*ldb+j+4 : p*ldb+j+4]
				b0, b1, b2, b3 := br[0], br[1], br[2], br[3]
				x0, x1, x2, x3 := a0[p], a1[p], a2[p], a3[p]
				s[0][0] += x0 * b0
				s[0][1] += x0 * b1
				s[0][2] += x0 * b2
				s[0][3] += x0 * b3
				s[1][0] += x1 * b0
				s[1][1] += x1 * b1
				s[1][2] += x1 * b2
				s[1][3] += x1 * b3
				s[2][0] += x2 * b0
				s[2][1] += x2 * b1
				s[2][2] += x2 * b2
				s[2][3] += x2 * b3
				s[3][0] += x3 * b0
				s[3][1] += x3 * b1
				s[3][2] += x3 * b2
				s[3][3] += x3 * b3
			}
			for r := range 4 {
				cr := c[(i+r)*ldc+j : (i+r)*ldc+j+4 : (i+r)*ldc+j+4]
				cr[0] += s[r][0]
				cr[1] += s[r][1]
				cr[2] += s[r][2]
				cr[3] += s[r][3]
			}
		}
	}
	// Right edge of the tiled rows, then the bottom rows: row by row, as
	// axpys over B's rows.
	if n4 < n {
		nnRows(0, m4, n4, n, k, a, lda, b, ldb, c, ldc)
	}
	nnRows(m4, m, 0, n, k, a, lda, b, ldb, c, ldc)
}

// nnRows adds rows [i0,i1) × columns [j0,j1) of A·B to C.
func nnRows[F Float](i0, i1, j0, j1, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	for i := i0; i < i1; i++ {
		cr := c[i*ldc+j0 : i*ldc+j1]
		for p, x := range a[i*lda : i*lda+k] {
			if x == 0 {
				continue
			}
			br := b[p*ldb+j0 : p*ldb+j1]
			br = br[:len(cr)]
			for j, v := range br {
				cr[j] += x * v
			}
		}
	}
}

// ntGo is the portable NT: dot products of A's and B's rows, four of
// each at a time.
func ntGo[F Float](m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	for i := 0; i < m; i++ {
		ar := a[i*lda : i*lda+k]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0, b1, b2, b3 := b[j*ldb:j*ldb+k], b[(j+1)*ldb:(j+1)*ldb+k], b[(j+2)*ldb:(j+2)*ldb+k], b[(j+3)*ldb:(j+3)*ldb+k]
			b0, b1, b2, b3 = b0[:len(ar)], b1[:len(ar)], b2[:len(ar)], b3[:len(ar)]
			var s0, s1, s2, s3 F
			for p, x := range ar {
				s0 += x * b0[p]
				s1 += x * b1[p]
				s2 += x * b2[p]
				s3 += x * b3[p]
			}
			cr := c[i*ldc+j : i*ldc+j+4 : i*ldc+j+4]
			cr[0] += s0
			cr[1] += s1
			cr[2] += s2
			cr[3] += s3
		}
		for ; j < n; j++ {
			br := b[j*ldb : j*ldb+k]
			br = br[:len(ar)]
			var s F
			for p, x := range ar {
				s += x * br[p]
			}
			c[i*ldc+j] += s
		}
	}
}

// tnGo is the portable TN: for each row p of A and B, C += A[p]ᵀ·B[p].
func tnGo[F Float](m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	for p := 0; p < k; p++ {
		ar := a[p*lda : p*lda+m]
		br := b[p*ldb : p*ldb+n]
		for i, x := range ar {
			if x == 0 {
				continue
			}
			cr := c[i*ldc : i*ldc+n]
			cr = cr[:len(br)]
			for j, v := range br {
				cr[j] += x * v
			}
		}
	}
}
