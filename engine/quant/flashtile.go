package quant

import (
	"fmt"
	"math"
)

// FlashTile is the number of keys of one tile of the tiled float32 flash
// attention (the default mode's attention): llama.cpp's CPU backend runs
// this algorithm, with tiles of 64 keys aligned to the start of the cache,
// for batches of 64 query tokens or more. Per query row it keeps a running
// maximum M, a sum S and a float32 output accumulator, and for each tile
// that holds keys the row sees:
//
//	scores  s_j = q·k_j (FlashScores), times the softmax scale, masked keys −∞
//	m      = max_j s_j; when m > M: acc and S are multiplied by expf(M−m), M = m
//	p_j    = e^(s_j−M) and S += Σ p_j (FlashSoftmax)
//	acc   += Σ_j p_j·v_j (FlashPV)
//
// and the output is acc·(1/S). Each row's result depends only on its own
// keys and the tile boundaries, so a prompt, a batch and a single decoding
// token get the same bits.
const FlashTile = 64

// FlashScores sets s[r·FlashTile+j] to the dot product of query row r
// (q[r·ldq:], dk values) and key j of a tile held transposed in kt
// (kt[d·FlashTile+j]), for rows r < rows: one fused-multiply-add chain over
// d from zero, as llama.cpp's simd_gemm computes it.
func FlashScores(s, q []float32, ldq int, kt []float32, dk, rows int) {
	checkFlashScores(s, q, ldq, kt, dk, rows)
	if flashTileAsm {
		for r := 0; r < rows; r += 4 {
			flashScores4(&s[r*FlashTile], &q[r*ldq], ldq, &kt[0], dk, min(4, rows-r))
		}
		return
	}
	flashScoresRef(s, q, ldq, kt, dk, rows)
}

func flashScoresRef(s, q []float32, ldq int, kt []float32, dk, rows int) {
	for r := range rows {
		for j := range FlashTile {
			var acc float32
			for d := range dk {
				acc = fma32(kt[d*FlashTile+j], q[r*ldq+d], acc)
			}
			s[r*FlashTile+j] = acc
		}
	}
}

func checkFlashScores(s, q []float32, ldq int, kt []float32, dk, rows int) {
	if rows < 1 || dk < 1 || ldq < dk {
		panic(fmt.Sprintf("quant: FlashScores of %d rows of %d (stride %d)", rows, dk, ldq))
	}
	_ = s[rows*FlashTile-1]
	_ = q[(rows-1)*ldq+dk-1]
	_ = kt[dk*FlashTile-1]
}

// FlashPV adds the tile's values weighted by p to the output accumulators:
// acc[r·ldacc+e] += Σ_j p[r·FlashTile+j]·v[j·dv+e] for rows r < rows, one
// fused-multiply-add chain over j from the accumulator's value (simd_gemm).
func FlashPV(acc []float32, ldacc int, p, v []float32, dv, rows int) {
	checkFlashPV(acc, ldacc, p, v, dv, rows)
	if flashTileAsm && dv%64 == 0 {
		for r := 0; r < rows; r += 4 {
			for e := 0; e < dv; e += 64 {
				flashPV4(&acc[r*ldacc+e], ldacc, &p[r*FlashTile], &v[e], dv, min(4, rows-r))
			}
		}
		return
	}
	flashPVRef(acc, ldacc, p, v, dv, rows)
}

func flashPVRef(acc []float32, ldacc int, p, v []float32, dv, rows int) {
	for r := range rows {
		for e := range dv {
			a := acc[r*ldacc+e]
			for j := range FlashTile {
				a = fma32(v[j*dv+e], p[r*FlashTile+j], a)
			}
			acc[r*ldacc+e] = a
		}
	}
}

func checkFlashPV(acc []float32, ldacc int, p, v []float32, dv, rows int) {
	if rows < 1 || dv < 1 || ldacc < dv {
		panic(fmt.Sprintf("quant: FlashPV of %d rows of %d (stride %d)", rows, dv, ldacc))
	}
	_ = acc[(rows-1)*ldacc+dv-1]
	_ = p[rows*FlashTile-1]
	_ = v[FlashTile*dv-1]
}

// FlashSoftmax replaces the FlashTile scores x by e^(x−m) and returns their
// sum, as llama.cpp's ggml_vec_soft_max_f32 computes them on this CPU:
// ggml's vector exponential over blocks of 16 lanes (AVX-512) or 8 (AVX2
// and elsewhere), each block added across (_mm512_reduce_add_ps's order,
// or the AVX2 one) in float32 and the blocks' sums in float64. A masked
// score of −∞ gives 0.
func FlashSoftmax(x []float32, m float32) float64 {
	x = x[:FlashTile]
	if flashSoftmaxAsm && halfDotLanes == 16 {
		return flashSoftmax64(&x[0], m)
	}
	return flashSoftmaxRef(x, m, halfDotLanes)
}

// flashSoftmaxRef is FlashSoftmax in Go, for lanes 16 or 8.
func flashSoftmaxRef(x []float32, m float32, lanes int) float64 {
	var sum float64
	if lanes == 16 {
		var v [16]float32
		for b := 0; b < FlashTile; b += 16 {
			for l := range 16 {
				v[l] = expGGML16(x[b+l] - m)
				x[b+l] = v[l]
			}
			sum += float64(reduce16(&v))
		}
		return sum
	}
	var v [8]float32
	for b := 0; b < FlashTile; b += 8 {
		for l := range 8 {
			v[l] = expGGML8(x[b+l] - m)
			x[b+l] = v[l]
		}
		sum += float64(reduce8(&v))
	}
	return sum
}

// reduce16 adds 16 lanes as _mm512_reduce_add_ps does: halves of 8, of
// 4, then (0+2) + (1+3).
func reduce16(v *[16]float32) float32 {
	var t [8]float32
	for l := range 8 {
		t[l] = v[8+l] + v[l]
	}
	t0, t1, t2, t3 := t[4]+t[0], t[5]+t[1], t[6]+t[2], t[7]+t[3]
	return (t0 + t2) + (t1 + t3)
}

// reduce8 adds 8 lanes as ggml_vec_soft_max_f32's AVX2 path does: halves
// of 4, then (0+2) + (1+3).
func reduce8(v *[8]float32) float32 {
	t0, t1, t2, t3 := v[4]+v[0], v[5]+v[1], v[6]+v[2], v[7]+v[3]
	return (t0 + t2) + (t1 + t3)
}

// FlashRescale multiplies acc by s, as ggml_vec_scale_f32.
func FlashRescale(acc []float32, s float32) {
	for i := range acc {
		acc[i] *= s
	}
}

// FlashMax returns the largest of the FlashTile scores, −∞ when all are.
func FlashMax(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x[:FlashTile] {
		if v > m {
			m = v
		}
	}
	return m
}

// FlashScaleMask multiplies the FlashTile scores x by scale (as
// ggml_vec_scale_f32), sets those outside columns [lo, hi] to −∞ (masked)
// and returns the largest, −∞ when none is left.
func FlashScaleMask(x []float32, scale float32, lo, hi int) float32 {
	x = x[:FlashTile]
	if flashSoftmaxAsm && lo >= 0 && hi < FlashTile && lo <= hi {
		return flashScaleMask64(&x[0], scale, lo, hi)
	}
	for c := range x {
		x[c] *= scale
		if c < lo || c > hi {
			x[c] = float32(math.Inf(-1))
		}
	}
	return FlashMax(x)
}

// FlashLoadKT converts one KV block of n ≤ FlashTile positions whose keys
// are stored transposed (src[d·n+p] is element d of position p; the
// default mode's cache layout) into columns j0..j0+n of a transposed tile:
// kt[d·FlashTile+j0+p] = src[d·n+p] for d < hd.
func FlashLoadKT(kt []float32, src []uint16, hd, n, j0 int) {
	if j0 < 0 || n < 1 || j0+n > FlashTile || hd < 1 {
		panic(fmt.Sprintf("quant: FlashLoadKT of %d positions at %d", n, j0))
	}
	_ = src[hd*n-1]
	_ = kt[(hd-1)*FlashTile+j0+n-1]
	if flashTileAsm && n == 16 {
		flashLoadKT16(&kt[j0], &src[0], hd)
		return
	}
	for d := range hd {
		for p := range n {
			kt[d*FlashTile+j0+p] = halfTable[src[d*n+p]]
		}
	}
}

// FlashLoadV converts n value rows of hd halves, stride halves apart in
// src, into n contiguous rows of dst.
func FlashLoadV(dst []float32, src []uint16, stride, n, hd int) {
	if n < 1 || hd < 1 || stride < hd {
		panic(fmt.Sprintf("quant: FlashLoadV of %d rows of %d (stride %d)", n, hd, stride))
	}
	_ = src[(n-1)*stride+hd-1]
	_ = dst[n*hd-1]
	if flashTileAsm && hd%16 == 0 {
		flashLoadV16(&dst[0], &src[0], stride, n, hd)
		return
	}
	for r := range n {
		HalfToFloat(dst[r*hd:(r+1)*hd], src[r*stride:r*stride+hd])
	}
}
