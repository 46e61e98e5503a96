package quant

import (
	"math"
	"sync"
	"sync/atomic"
)

// The IQ2 quantizers are llama.cpp's quantize_iq2_xxs, quantize_iq2_xs
// and quantize_iq2_s: per group of 32 (IQ2_XXS) or 16 weights, signs taken
// off (IQ2_XXS and IQ2_XS keep an even number, flipping the least
// important weight), a search over scales with every 8 weights rounded to
// the 2-bit grid or, off it, to the best of its nearest grid points, then
// the group scales quantized to 4 bits. IQ2_XXS and IQ2_XS need an
// importance matrix, as in llama.cpp.

// iq2Search is the grid search of one IQ2 (or IQ1) grid, llama.cpp's
// iq2xs_init_impl computed from the grid: coordinates 2l+1 (l = 0..2, the
// grid's 8, 25, 43), points packed 2 bits per coordinate; kmap maps a
// point on the grid to its index (-1 off it), and the neighbour list of a
// point off the grid (the grid points within its nwant nearest squared
// distances, by distance, then index) is computed when first asked for.
type iq2Search struct {
	grid  []uint64 // coordinates 2l+1
	kmap  []int32
	nwant int
	lists []atomic.Pointer[[]uint16]
}

var (
	iq2SearchOnce [3]sync.Once
	iq2Searches   [3]*iq2Search
)

// iq2SearchFor returns the search of IQ2_XXS (256 points), IQ2_XS (512)
// or IQ2_S (1024), built on first use.
func iq2SearchFor(t Type) *iq2Search {
	var i int
	var points []uint64
	nwant := 2
	switch t {
	case IQ2_XXS:
		i, points = 0, iq2xxsGrid[:]
	case IQ2_XS:
		i, points = 1, iq2xsGrid[:]
	default:
		i, points, nwant = 2, iq2sGrid[:], 1
	}
	iq2SearchOnce[i].Do(func() { iq2Searches[i] = newIQ2Search(points, nwant) })
	return iq2Searches[i]
}

func newIQ2Search(points []uint64, nwant int) *iq2Search {
	const size = 43692 // the largest packed point, 0b1010...10, plus 2
	s := &iq2Search{grid: make([]uint64, len(points)), kmap: make([]int32, size), nwant: nwant,
		lists: make([]atomic.Pointer[[]uint16], size)}
	for i := range s.kmap {
		s.kmap[i] = -1
	}
	for i, p := range points {
		u := 0
		for k := 0; k < 8; k++ {
			l := (p>>(8*k)&0xff - 8) / 17
			s.grid[i] |= (2*l + 1) << (8 * k)
			u |= int(l) << (2 * k)
		}
		s.kmap[u] = int32(i)
	}
	return s
}

// neighbours returns the neighbour list of point u (off the grid).
func (s *iq2Search) neighbours(u int) []uint16 {
	if p := s.lists[u].Load(); p != nil {
		return *p
	}
	d2s := make([]int, len(s.grid))
	var levels [3]int
	nl := 0
	for j, g := range s.grid {
		d2 := 0
		for k := 0; k < 8; k++ {
			d := int(g>>(8*k)&0xff) - (2*(u>>(2*k)&3) + 1)
			d2 += d * d
		}
		d2s[j] = d2
		// keep the nwant smallest distinct distances, sorted
		pos := 0
		for pos < nl && levels[pos] < d2 {
			pos++
		}
		if pos < nl && levels[pos] == d2 || pos == s.nwant {
			continue
		}
		copy(levels[pos+1:s.nwant], levels[pos:nl])
		levels[pos] = d2
		nl = min(nl+1, s.nwant)
	}
	var list []uint16
	for _, lv := range levels[:nl] {
		for j, d2 := range d2s {
			if d2 == lv {
				list = append(list, uint16(j))
			}
		}
	}
	s.lists[u].Store(&list)
	return list
}

// best replaces the 8 levels l of xval by those of the best neighbour
// grid point of u at scale (llama.cpp's iq2_find_best_neighbour).
func (s *iq2Search) best(u int, xval, w []float32, scale float32, l []int8) int {
	nb := s.neighbours(u)
	bestD2, idx := float32(math.MaxFloat32), -1
	for _, j := range nb {
		g := s.grid[j]
		var d2 float32
		for i := 0; i < 8; i++ {
			diff := float32(scale*float32(g>>(8*i)&0xff)) - xval[i]
			d2 += float32(float32(w[i]*diff) * diff)
		}
		if d2 < bestD2 {
			bestD2, idx = d2, int(j)
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

// pack returns the packed point of 8 levels.
func iq2Pack(l []int8) int {
	u := 0
	for i := 0; i < 8; i++ {
		u |= int(l[i]) << (2 * i)
	}
	return u
}

// index returns the grid index of 8 levels on the grid (0 if they are
// not, which only NaN input can cause: llama.cpp aborts or reads past its
// map then).
func (s *iq2Search) index(l []int8) int {
	for _, v := range l[:8] {
		if v < 0 || v > 2 {
			return 0
		}
	}
	if g := s.kmap[iq2Pack(l)]; g >= 0 {
		return int(g)
	}
	return 0
}

// iq2Level rounds id·x to a level 0..2 of the coordinates 2l+1.
func iq2Level(id, x float32) int8 {
	return int8(clampInt(nearestInt(float32(0.5*float32(float32(id*x)-1))), 0, 2))
}

// iq2Signs takes the signs off the 8 values x into xval; with parity, an
// odd number of negative values flips the one of least weight·x² back,
// and the code keeps 7 bits.
func iq2Signs(x, w, xval []float32, parity bool) uint8 {
	var s uint8
	nflip := 0
	for i := 0; i < 8; i++ {
		if x[i] >= 0 {
			xval[i] = x[i]
		} else {
			xval[i] = -x[i]
			nflip++
			s |= 1 << i
		}
	}
	if !parity {
		return s
	}
	if nflip%2 == 1 {
		imin := 0
		vmin := float32(float32(w[0]*x[0]) * x[0])
		for i := 1; i < 8; i++ {
			if a := float32(float32(w[i]*x[i]) * x[i]); a < vmin {
				vmin, imin = a, i
			}
		}
		xval[imin] = -xval[imin]
		s ^= 1 << imin
	}
	return s & 127
}

// iq2Fit is the weighted least-squares fit Σw·x·q, Σw·q² of levels l.
func iq2Fit(xval, w []float32, l []int8) (sumQX, sumQ2 float32) {
	for i := range xval {
		q := float32(2*int32(l[i]) + 1)
		sumQX += float32(float32(w[i]*xval[i]) * q)
		sumQ2 += float32(float32(w[i]*q) * q)
	}
	return sumQX, sumQ2
}

// iq2Group searches the scale and grid points of one group of 16 weights
// (IQ2_XS, IQ2_S: xval without signs, weights w and their square roots
// waux), leaving the levels in l: the scale, or zero for a group llama.cpp
// skips.
func iq2Group16(s *iq2Search, xval, w, waux []float32, l []int8, eps float32) (scale float32, zero bool) {
	var laux [16]int8
	var onGrid, onGridAux [2]bool
	vmax := xval[0]
	for _, v := range xval[1:16] {
		if v > vmax {
			vmax = v
		}
	}
	clear(l[:16])
	if vmax < eps {
		return 0, true
	}
	var best float32
	scale = vmax / 5
	onGrid = [2]bool{true, true}
	for is := -9; is <= 9; is++ {
		id := (5 + float32(float32(is)*0.1)) / vmax
		this := 1 / id
		for k := 0; k < 2; k++ {
			for i := 0; i < 8; i++ {
				laux[8*k+i] = iq2Level(id, xval[8*k+i])
			}
			u := iq2Pack(laux[8*k:])
			onGridAux[k] = s.kmap[u] >= 0
			if !onGridAux[k] {
				s.best(u, xval[8*k:], waux[8*k:], this, laux[8*k:8*k+8])
			}
		}
		sumQX, sumQ2 := iq2Fit(xval[:16], w, laux[:])
		if sumQ2 > 0 && sumQX*sumQX > best*sumQ2 {
			scale = sumQX / sumQ2
			best = scale * sumQX
			copy(l[:16], laux[:])
			onGrid = onGridAux
		}
	}
	if (!onGrid[0] || !onGrid[1]) && scale > 0 {
		id := 1 / scale
		for k := 0; k < 2; k++ {
			if onGrid[k] {
				continue
			}
			for i := 0; i < 8; i++ {
				l[8*k+i] = iq2Level(id, xval[8*k+i])
			}
			if u := iq2Pack(l[8*k:]); s.kmap[u] < 0 {
				s.best(u, xval[8*k:], waux[8*k:], scale, l[8*k:8*k+8])
			}
		}
		if sumQX, sumQ2 := iq2Fit(xval[:16], w, l[:16]); sumQ2 > 0 {
			scale = sumQX / sumQ2
		}
	}
	return scale, false
}

// iq2Scale4 is the 4-bit code of a group scale against id = 31/max.
func iq2Scale4(id, scale float32) uint32 {
	return uint32(clampInt(nearestInt(float32(0.5*float32(float32(id*scale)-1))), 0, 15))
}

func quantizeIQ2_XXSWeighted(dst []byte, src, qw []float32) {
	s := iq2SearchFor(IQ2_XXS)
	var w, waux, xval [32]float32
	var l, laux [32]int8
	var lu [32]uint8
	var scales [8]float32
	var signs [4]uint8
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*iq2_XXSBytes:(b+1)*iq2_XXSBytes]
		clear(out)
		sigma2 := float32(sumSquares(x) / QKK)
		var maxScale float32
		for c := 0; c < 8; c++ {
			xc := x[32*c : 32*c+32]
			imWeights(xc, qw[b*QKK+32*c:], sigma2, w[:])
			for i := range waux {
				waux[i] = sqrt32(w[i])
			}
			for k := 0; k < 4; k++ {
				signs[k] = iq2Signs(xc[8*k:], w[8*k:], xval[8*k:], true)
			}
			vmax := xval[0]
			for _, v := range xval[1:] {
				if v > vmax {
					vmax = v
				}
			}
			scales[c] = 0
			if vmax < groupMaxEps {
				continue
			}
			scale := makeQP(4, xval[:], lu[:], w[:])
			effMax := float32(scale * 3)
			if effMax <= 0 {
				continue
			}
			for i := range l {
				l[i] = int8(lu[i])
			}
			var best float32
			for is := -6; is <= 6; is++ {
				id := (5 + float32(float32(is)*0.1)) / effMax
				this := 1 / id
				for k := 0; k < 4; k++ {
					for i := 0; i < 8; i++ {
						laux[8*k+i] = iq2Level(id, xval[8*k+i])
					}
					if u := iq2Pack(laux[8*k:]); s.kmap[u] < 0 {
						s.best(u, xval[8*k:], waux[8*k:], this, laux[8*k:8*k+8])
					}
				}
				sumQX, sumQ2 := iq2Fit(xval[:], w[:], laux[:])
				if sumQ2 > 0 && sumQX*sumQX > best*sumQ2 {
					scale = sumQX / sumQ2
					best = scale * sumQX
					l = laux
				}
			}
			if scale > 0 {
				id := 1 / scale
				for k := 0; k < 4; k++ {
					for i := 0; i < 8; i++ {
						laux[8*k+i] = iq2Level(id, xval[8*k+i])
					}
					u := iq2Pack(laux[8*k:])
					if g := s.kmap[u]; g >= 0 {
						p := s.grid[g]
						for i := 0; i < 8; i++ {
							l[8*k+i] = int8((p>>(8*i)&0xff - 1) / 2)
						}
					} else {
						s.best(u, xval[8*k:], waux[8*k:], scale, l[8*k:8*k+8])
					}
				}
				if sumQX, sumQ2 := iq2Fit(xval[:], w[:], l[:]); sumQ2 > 0 {
					scale = sumQX / sumQ2
				}
			}
			if scale < 0 {
				scale = -scale
				for k := range signs {
					signs[k] = ^signs[k] & 127
				}
			}
			var idx, sg uint32
			for k := 0; k < 4; k++ {
				idx |= uint32(s.index(l[8*k:])) << (8 * k)
				sg |= uint32(signs[k]) << (7 * k)
			}
			le.PutUint32(out[2+8*c:], idx)
			le.PutUint32(out[6+8*c:], sg)
			scales[c] = scale
			maxScale = max(maxScale, scale)
		}
		if maxScale == 0 {
			clear(out)
			continue
		}
		d := maxScale / 31
		le.PutUint16(out, FP32ToFP16(d))
		id := 1 / d
		for c := 0; c < 8; c++ {
			le.PutUint32(out[6+8*c:], le.Uint32(out[6+8*c:])|iq2Scale4(id, scales[c])<<28)
		}
	}
}

func quantizeIQ2_XSWeighted(dst []byte, src, qw []float32) {
	s := iq2SearchFor(IQ2_XS)
	var w, waux, xval [16]float32
	var l [16]int8
	var scales [16]float32
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*iq2_XSBytes:(b+1)*iq2_XSBytes]
		clear(out)
		sigma2 := float32(sumSquares(x) / QKK)
		var maxScale float32
		for g := 0; g < 16; g++ {
			xg := x[16*g : 16*g+16]
			imWeights(xg, qw[b*QKK+16*g:], sigma2, w[:])
			for i := range waux {
				waux[i] = sqrt32(w[i])
			}
			var signs [2]uint8
			for k := 0; k < 2; k++ {
				signs[k] = iq2Signs(xg[8*k:], w[8*k:], xval[8*k:], true)
			}
			scale, zero := iq2Group16(s, xval[:], w[:], waux[:], l[:], groupMaxEps)
			scales[g] = 0
			if zero {
				continue
			}
			if scale < 0 {
				scale = -scale
				for k := range signs {
					signs[k] = ^signs[k] & 127
				}
			}
			for k := 0; k < 2; k++ {
				le.PutUint16(out[2+4*g+2*k:], uint16(s.index(l[8*k:]))|uint16(signs[k])<<9)
			}
			scales[g] = scale
			maxScale = max(maxScale, scale)
		}
		if maxScale == 0 {
			clear(out)
			continue
		}
		d := maxScale / 31
		le.PutUint16(out, FP32ToFP16(d))
		id := 1 / d
		for g := 0; g < 16; g++ {
			out[66+g/2] |= byte(iq2Scale4(id, scales[g])) << (4 * (g % 2))
		}
	}
}

func quantizeIQ2_SWeighted(dst []byte, src, qw []float32) {
	s := iq2SearchFor(IQ2_S)
	var w, waux, xval [16]float32
	var l [16]int8
	var scales [16]float32
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*iq2_SBytes:(b+1)*iq2_SBytes]
		clear(out)
		sigma2 := float32(2 * sumSquares(x) / QKK)
		var maxScale float32
		for g := 0; g < 16; g++ {
			xg := x[16*g : 16*g+16]
			for i, v := range xg {
				if qw != nil {
					w[i] = qw[b*QKK+16*g+i] * sqrt32(sigma2+float32(v*v))
				} else {
					w[i] = float32(0.25*sigma2) + float32(v*v)
				}
				waux[i] = sqrt32(w[i])
			}
			var signs [2]uint8
			for k := 0; k < 2; k++ {
				signs[k] = iq2Signs(xg[8*k:], w[8*k:], xval[8*k:], false)
			}
			scale, zero := iq2Group16(s, xval[:], w[:], waux[:], l[:], 1e-8)
			scales[g] = 0
			if zero {
				continue
			}
			if scale < 0 {
				scale = -scale
				signs[0], signs[1] = ^signs[0], ^signs[1]
			}
			for k := 0; k < 2; k++ {
				i8 := 2*g + k
				gi := s.index(l[8*k:])
				out[2+i8] = byte(gi)
				out[66+i8/4] |= byte(gi>>8) << (2 * (i8 % 4))
				out[34+i8] = signs[k]
			}
			scales[g] = scale
			maxScale = max(maxScale, scale)
		}
		if maxScale == 0 {
			continue
		}
		d := maxScale / 31
		le.PutUint16(out, FP32ToFP16(float32(d*0.9875)))
		id := 1 / d
		for g := 0; g < 16; g++ {
			out[74+g/2] |= byte(iq2Scale4(id, scales[g])) << (4 * (g % 2))
		}
	}
}

func quantizeIQ2_S(dst []byte, src []float32) { quantizeIQ2_SWeighted(dst, src, nil) }

func init() {
	fileQuants[IQ2_XXS] = fileQuant{weighted: quantizeIQ2_XXSWeighted, needs: true}
	fileQuants[IQ2_XS] = fileQuant{weighted: quantizeIQ2_XSWeighted, needs: true}
	fileQuants[IQ2_S] = fileQuant{row: quantizeIQ2_S, weighted: quantizeIQ2_SWeighted}
}
