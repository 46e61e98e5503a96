package quant

import (
	"math"
	"slices"
	"sync"
)

// The IQ1 quantizers are llama.cpp's quantize_iq1_s and quantize_iq1_m:
// the weights of a group sorted by value, an exhaustive search of the two
// boundaries that split them into the levels -1, 0, 1 (shifted by ±1/8),
// each 8 rounded to the grid or its best neighbour, then the group scales
// quantized to 3 bits. IQ1_S needs an importance matrix, as in llama.cpp.
// llama.cpp sorts with qsort, which glibc implements as a merge sort for
// arrays this small: a stable sort, which ties (equal weights) need.

var (
	iq1SearchOnce sync.Once
	iq1Search     *iq2Search
)

// iq1SearchFor returns the search of the IQ1 grid (coordinates 2l+1 for
// the grid's -1, 0, 1; the 3 nearest distances as neighbours).
func iq1SearchFor() *iq2Search {
	iq1SearchOnce.Do(func() {
		// express the points in the 2-bit search's terms: l = v+1
		pts := make([]uint64, len(iq1sGrid))
		for i, p := range iq1sGrid {
			for k := 0; k < 8; k++ {
				l := uint64(int8(p>>(8*k))+1) & 3
				pts[i] |= (8 + 17*l) << (8 * k) // newIQ2Search reads l = (v-8)/17
			}
		}
		iq1Search = newIQ2Search(pts, 3)
	})
	return iq1Search
}

// iq1Levels are the grid values with the delta added (shift +1) or
// subtracted (-1).
var (
	iq1Plus  = [3]float32{-1 + iq1Delta, iq1Delta, 1 + iq1Delta}
	iq1Minus = [3]float32{-1 - iq1Delta, -iq1Delta, 1 - iq1Delta}
)

// iq1Best2 replaces the levels l of the 8 values x by those of the best
// neighbour of u at scale, the levels taking the values xx
// (llama.cpp's iq1_find_best_neighbour2).
func iq1Best2(s *iq2Search, u int, x, w []float32, scale float32, xx *[3]float32, l []int8) int {
	nb := s.neighbours(u)
	best, idx := float32(math.MaxFloat32), -1
	for _, j := range nb {
		g := s.grid[j]
		var d2 float32
		for i := 0; i < 8; i++ {
			q := xx[(g>>(8*i)&0xff-1)/2]
			diff := float32(scale*q) - x[i]
			d2 += float32(float32(w[i]*diff) * diff)
		}
		if d2 < best {
			best, idx = d2, int(j)
		}
	}
	if idx < 0 {
		idx = int(nb[0]) // NaN distances (llama.cpp asserts)
	}
	g := s.grid[idx]
	for i := 0; i < 8; i++ {
		l[i] = int8((g>>(8*i)&0xff - 1) / 2)
	}
	return idx
}

// iq1Sort returns the order of x by value, stable.
func iq1Sort(x []float32, order []int) {
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case x[a] < x[b]:
			return -1
		case x[a] > x[b]:
			return 1
		}
		return 0
	})
}

func quantizeIQ1_SWeighted(dst []byte, src, qw []float32) {
	s := iq1SearchFor()
	var w [32]float32
	var sumx, sumw [33]float32
	var order [32]int
	var l [32]int8
	var index [4]int
	var scales [8]float32
	var shifts [8]int
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*iq1_SBytes:(b+1)*iq1_SBytes]
		clear(out)
		sigma2 := float32(2 * sumSquares(x) / QKK)
		var maxScale float32
		for c := 0; c < 8; c++ {
			xb := x[32*c : 32*c+32]
			imWeights(xb, qw[b*QKK+32*c:], sigma2, w[:])
			vmax := abs32(xb[0])
			for _, v := range xb[1:] {
				vmax = max(vmax, abs32(v))
			}
			scales[c], shifts[c] = 0, 1
			if vmax < 1e-12 {
				continue
			}
			iq1Sort(xb, order[:])
			for j, i := range order {
				sumx[j+1] = sumx[j] + float32(w[i]*xb[i])
				sumw[j+1] = sumw[j] + w[i]
			}
			best, scale := float32(-math.MaxFloat32), vmax
			b1, b2, shift := -1, -1, 0
			for i1 := 0; i1 <= 32; i1++ {
				for i2 := i1; i2 <= 32; i2++ {
					for _, sh := range []int{1, -1} {
						xx := &iq1Plus
						if sh < 0 {
							xx = &iq1Minus
						}
						sumQX := float32(float32(sumx[i1]-sumx[0])*xx[0]) + float32(float32(sumx[i2]-sumx[i1])*xx[1])
						sumQX += float32(float32(sumx[32]-sumx[i2]) * xx[2])
						sumQ2 := float32(float32(float32(sumw[i1]-sumw[0])*xx[0])*xx[0]) + float32(float32(float32(sumw[i2]-sumw[i1])*xx[1])*xx[1])
						sumQ2 += float32(float32(float32(sumw[32]-sumw[i2])*xx[2]) * xx[2])
						if sumQ2 > 0 && sumQX*sumQX > best*sumQ2 {
							scale = sumQX / sumQ2
							best = scale * sumQX
							b1, b2, shift = i1, i2, sh
						}
					}
				}
			}
			if b1 < 0 || b2 < 0 || shift == 0 {
				continue
			}
			for j, i := range order {
				switch {
				case j < b1:
					l[i] = 0
				case j < b2:
					l[i] = 1
				default:
					l[i] = 2
				}
			}
			if scale < 0 {
				for j := range l {
					l[j] = 2 - l[j]
				}
				scale, shift = -scale, -shift
			}
			xx := &iq1Plus
			if shift < 0 {
				xx = &iq1Minus
			}
			onGrid := true
			for k := 0; k < 4; k++ {
				u := iq2Pack(l[8*k:])
				gi := int(s.kmap[u])
				if gi < 0 {
					onGrid = false
					gi = iq1Best2(s, u, xb[8*k:], w[8*k:], scale, xx, l[8*k:8*k+8])
				}
				index[k] = gi
			}
			if !onGrid {
				var sumQX, sumQ2 float32
				for k := 0; k < 4; k++ {
					g := s.grid[index[k]]
					for j := 0; j < 8; j++ {
						q := xx[(g>>(8*j)&0xff-1)/2]
						wq := float32(w[8*k+j] * q)
						sumQX += float32(wq * xb[8*k+j])
						sumQ2 += float32(wq * q)
					}
				}
				if sumQX > 0 && sumQ2 > 0 {
					scale = sumQX / sumQ2
				}
			}
			var h uint16
			for k := 0; k < 4; k++ {
				out[2+4*c+k] = byte(index[k])
				h |= uint16(index[k]>>8) << (3 * k)
			}
			le.PutUint16(out[34+2*c:], h)
			scales[c], shifts[c] = scale, shift
			maxScale = max(maxScale, scale)
		}
		if maxScale == 0 {
			continue
		}
		d := maxScale / 15
		le.PutUint16(out, FP32ToFP16(float32(d*1.125)))
		id := 1 / d
		for c := 0; c < 8; c++ {
			lv := uint16(clampInt(nearestInt(float32(0.5*float32(float32(id*scales[c])-1))), 0, 7))
			if shifts[c] == -1 {
				lv |= 8
			}
			le.PutUint16(out[34+2*c:], le.Uint16(out[34+2*c:])|lv<<12)
		}
	}
}

func quantizeIQ1_MWeighted(dst []byte, src, qw []float32) {
	s := iq1SearchFor()
	var w [16]float32
	var order [16]int
	var l [16]int8
	var index [2]int
	var scales [16]float32
	var shifts [16]int
	masks := [4]byte{0x00, 0x80, 0x08, 0x88}
	// xxOf is the level values of half k of a group with shift code sk
	// (0: ++, 1: +-, 2: -+, 3: --).
	xxOf := func(sk, k int) *[3]float32 {
		if k == 0 && sk < 2 || k == 1 && sk%2 == 0 {
			return &iq1Plus
		}
		return &iq1Minus
	}
	weights := func(xb, qwb []float32, sigma2 float32) {
		for i, v := range xb {
			if qwb != nil {
				w[i] = qwb[i] * sqrt32(sigma2+float32(v*v))
			} else {
				w[i] = v * v
			}
		}
	}
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*iq1_MBytes:(b+1)*iq1_MBytes]
		clear(out)
		sigma2 := float32(2 * sumSquares(x) / QKK)
		var maxScale float32
		qwOf := func(g int) []float32 {
			if qw == nil {
				return nil
			}
			return qw[b*QKK+16*g : b*QKK+16*g+16]
		}
		for g := 0; g < 16; g++ {
			xb := x[16*g : 16*g+16]
			weights(xb, qwOf(g), sigma2)
			vmax := abs32(xb[0])
			for _, v := range xb[1:] {
				vmax = max(vmax, abs32(v))
			}
			scales[g], shifts[g] = 0, 0
			if vmax < 1e-7 {
				continue
			}
			iq1Sort(xb, order[:])
			var px, pw [2][17]float32
			for j, i := range order {
				h := i / 8
				px[h][j+1] = px[h][j] + float32(w[i]*xb[i])
				px[1-h][j+1] = px[1-h][j]
				pw[h][j+1] = pw[h][j] + w[i]
				pw[1-h][j+1] = pw[1-h][j]
			}
			txs := [2]float32{px[0][16], px[1][16]}
			tws := [2]float32{pw[0][16], pw[1][16]}
			p2, m2 := iq1Plus[2], iq1Minus[2]
			sq := func(v float32) float32 { return float32(v * v) }
			cp1 := sq(iq1Plus[0]) - sq(iq1Plus[1])
			cp2 := sq(iq1Plus[1]) - sq(iq1Plus[2])
			cm1 := sq(iq1Minus[0]) - sq(iq1Minus[1])
			cm2 := sq(iq1Minus[1]) - sq(iq1Minus[2])
			best, scale := float32(-math.MaxFloat32), vmax
			b1, b2, bk := -1, -1, -1
			for i1 := 0; i1 <= 16; i1++ {
				for i2 := i1; i2 <= 16; i2++ {
					var qxp, qxm, q2p, q2m [2]float32
					for h := 0; h < 2; h++ {
						sx := px[h][i1] + px[h][i2]
						qxp[h] = float32(txs[h]*p2) - sx
						qxm[h] = float32(txs[h]*m2) - sx
						q2p[h] = float32(float32(float32(tws[h]*p2)*p2)+float32(pw[h][i1]*cp1)) + float32(pw[h][i2]*cp2)
						q2m[h] = float32(float32(float32(tws[h]*m2)*m2)+float32(pw[h][i1]*cm1)) + float32(pw[h][i2]*cm2)
					}
					sumQX := [4]float32{qxp[0] + qxp[1], qxp[0] + qxm[1], qxm[0] + qxp[1], qxm[0] + qxm[1]}
					sumQ2 := [4]float32{q2p[0] + q2p[1], q2p[0] + q2m[1], q2m[0] + q2p[1], q2m[0] + q2m[1]}
					for k := 0; k < 4; k++ {
						if sumQ2[k] > 0 && sumQX[k]*sumQX[k] > best*sumQ2[k] {
							scale = sumQX[k] / sumQ2[k]
							best = scale * sumQX[k]
							b1, b2, bk = i1, i2, k
						}
					}
				}
			}
			if b1 < 0 || b2 < 0 || bk < 0 {
				continue
			}
			for j, i := range order {
				switch {
				case j < b1:
					l[i] = 0
				case j < b2:
					l[i] = 1
				default:
					l[i] = 2
				}
			}
			if scale < 0 {
				for j := range l {
					l[j] = 2 - l[j]
				}
				scale = -scale
				bk = 3 - bk
			}
			onGrid := true
			for k := 0; k < 2; k++ {
				u := iq2Pack(l[8*k:])
				gi := int(s.kmap[u])
				if gi < 0 {
					onGrid = false
					gi = iq1Best2(s, u, xb[8*k:], w[8*k:], scale, xxOf(bk, k), l[8*k:8*k+8])
				}
				index[k] = gi
			}
			if !onGrid {
				var sumQX, sumQ2 float32
				for k := 0; k < 2; k++ {
					xx := xxOf(bk, k)
					gp := s.grid[index[k]]
					for j := 0; j < 8; j++ {
						q := xx[(gp>>(8*j)&0xff-1)/2]
						wq := float32(w[8*k+j] * q)
						sumQX += float32(wq * xb[8*k+j])
						sumQ2 += float32(wq * q)
					}
				}
				if sumQX > 0 && sumQ2 > 0 {
					scale = sumQX / sumQ2
				}
			}
			out[2*g] = byte(index[0])
			out[2*g+1] = byte(index[1])
			out[32+g] = byte(index[0]>>8) | byte(index[1]>>8)<<4
			scales[g], shifts[g] = scale, bk
			maxScale = max(maxScale, scale)
		}
		if maxScale == 0 {
			continue
		}
		d := maxScale / 15
		id := 1 / d
		var sumQX, sumQ2 float32
		var sc [4]uint16
		for g := 0; g < 16; g++ {
			lv := clampInt(nearestInt(float32(0.5*float32(float32(id*scales[g])-1))), 0, 7)
			sc[g/4] |= uint16(lv) << (3 * (g % 4))
			out[32+g] |= masks[shifts[g]]
			xb := x[16*g : 16*g+16]
			weights(xb, qwOf(g), sigma2)
			m := float32(2*lv + 1)
			for k := 0; k < 2; k++ {
				xx := xxOf(shifts[g], k)
				gi := int(out[2*g+k]) | int(out[32+g])<<(8-4*k)&0x700
				gp := s.grid[gi]
				for j := 0; j < 8; j++ {
					q := float32(xx[(gp>>(8*j)&0xff-1)/2] * m)
					wq := float32(w[8*k+j] * q)
					sumQX += float32(wq * xb[8*k+j])
					sumQ2 += float32(wq * q)
				}
			}
		}
		if sumQ2 > 0 {
			d = sumQX / sumQ2
		}
		h := FP32ToFP16(float32(d * 1.1125))
		sc[0] |= (h & 0x000f) << 12
		sc[1] |= (h & 0x00f0) << 8
		sc[2] |= (h & 0x0f00) << 4
		sc[3] |= h & 0xf000
		for k := range sc {
			le.PutUint16(out[48+2*k:], sc[k])
		}
	}
}

func quantizeIQ1_M(dst []byte, src []float32) { quantizeIQ1_MWeighted(dst, src, nil) }

func init() {
	fileQuants[IQ1_S] = fileQuant{weighted: quantizeIQ1_SWeighted, needs: true}
	fileQuants[IQ1_M] = fileQuant{row: quantizeIQ1_M, weighted: quantizeIQ1_MWeighted}
}
