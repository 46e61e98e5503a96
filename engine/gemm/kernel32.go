package gemm

// The float32 paths cut C into register tiles for the assembly kernels of
// the CPU's instruction set (level): an NN tile of 6 rows × 32 columns
// (16 under AVX2) adds A's rows broadcast element by element times B's
// rows, and an NT tile of 4 × 4 dot products (AVX-512 only) sums 16
// lanes at a time. Rows past the end of A point at its first row and
// write to a dummy row, so the kernels never branch on the shape; columns
// past the last whole tile run in Go.

// isa is an instruction-set level of the float32 kernels.
type isa int

const (
	isaNone isa = iota
	isaAVX2
	isaAVX512
)

const (
	mrNN = 6 // rows of an NN tile
	mrNT = 4 // rows (and columns) of an NT tile
	// ntMinK is the shortest product the NT kernel takes: below it the
	// lane reduction at the end of each tile costs more than transposing
	// a slice of B for the NN kernel.
	ntMinK = 128
	// chunkK bounds the slice of B (NT) or A (TN) transposed on the
	// stack at once.
	chunkK = 256
)

// nr is the column count of an NN tile.
func nr() int {
	if level == isaAVX2 {
		return 16
	}
	return 32
}

// nn32 is NN for float32 on the kernels.
func nn32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	w := nr()
	nFull := n / w * w
	var ap, cp [mrNN]*float32
	var dummy [32]float32
	for j := 0; j < nFull; j += w {
		for i0 := 0; i0 < m; i0 += mrNN {
			rows := min(mrNN, m-i0)
			for r := range mrNN {
				if r < rows {
					ap[r], cp[r] = &a[(i0+r)*lda], &c[(i0+r)*ldc+j]
				} else {
					ap[r], cp[r] = &a[i0*lda], &dummy[0]
				}
			}
			nnTile(k, &ap, &b[j], ldb, &cp)
		}
	}
	if nFull < n {
		nnRows(0, m, nFull, n, k, a, lda, b, ldb, c, ldc)
	}
}

// nt32 is NT for float32: the dot-product kernel for long products,
// otherwise slices of Bᵀ through the NN kernel.
func nt32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if level != isaAVX512 || k < ntMinK {
		ntViaNN(m, n, k, a, lda, b, ldb, c, ldc)
		return
	}
	const block = 64 // rows of B kept in cache while A's rows pass
	k16 := k &^ 15
	var ap, bp [mrNT]*float32
	var out [mrNT * mrNT]float32
	for jb := 0; jb < n; jb += block {
		je := min(jb+block, n)
		for i0 := 0; i0 < m; i0 += mrNT {
			rows := min(mrNT, m-i0)
			for r := range mrNT {
				ap[r] = &a[(i0+min(r, rows-1))*lda]
			}
			for j0 := jb; j0 < je; j0 += mrNT {
				cols := min(mrNT, je-j0)
				for s := range mrNT {
					bp[s] = &b[(j0+min(s, cols-1))*ldb]
				}
				ntTile(k16/16, &ap, &bp, &out)
				for r := range rows {
					ar := a[(i0+r)*lda : (i0+r)*lda+k]
					for s := range cols {
						v := out[r*mrNT+s]
						if k16 < k {
							br := b[(j0+s)*ldb : (j0+s)*ldb+k]
							for p := k16; p < k; p++ {
								v += ar[p] * br[p]
							}
						}
						c[(i0+r)*ldc+j0+s] += v
					}
				}
			}
		}
	}
}

// ntViaNN adds A·Bᵀ to C by transposing B a slice at a time onto the
// stack and running the NN kernel on it.
func ntViaNN(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	const cols = 32
	var buf [chunkK * cols]float32
	for j0 := 0; j0 < n; j0 += cols {
		nc := min(cols, n-j0)
		for p0 := 0; p0 < k; p0 += chunkK {
			kc := min(chunkK, k-p0)
			transpose(nc, kc, b[j0*ldb+p0:], ldb, buf[:], cols)
			nn32(m, nc, kc, a[p0:], lda, buf[:], cols, c[j0:], ldc)
		}
	}
}

// tn32 adds Aᵀ·B to C by transposing A six columns at a time onto the
// stack and running the NN kernel on them.
func tn32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	var buf [mrNN * chunkK]float32
	for i0 := 0; i0 < m; i0 += mrNN {
		rows := min(mrNN, m-i0)
		for p0 := 0; p0 < k; p0 += chunkK {
			kc := min(chunkK, k-p0)
			transpose(kc, rows, a[p0*lda+i0:], lda, buf[:], chunkK)
			nn32(rows, n, kc, buf[:], chunkK, b[p0*ldb:], ldb, c[i0*ldc:], ldc)
		}
	}
}
