package quant

import (
	"math"
	"slices"
	"sync"
)

// The IQ3 quantizers are llama.cpp's quantize_iq3_xxs and quantize_iq3_s:
// per 32-weight chunk, the signs are taken off (IQ3_XXS keeps an even
// number of them, flipping the least important weight), then 31 (IQ3_S:
// 19) scales around max/15 are tried, each weight group of 4 rounded to
// the grid (a point off the grid replaced by its best neighbour among the
// nearest grid points), and the scale of the best weighted least-squares
// fit kept; the chunk scales are then quantized to 4 bits against the
// largest. The searches follow the C float32 steps, so the bytes match.

// iq3Search is the grid search state of one IQ3 grid: llama.cpp's
// iq3xs_init_impl computed from the grid itself. kmap maps a point's 3-bit
// coordinates (l = (v-1)/2, packed 3 bits each) to its grid index, or for
// points off the grid to -(offset+1) into neighbours, where a count n is
// followed by the n grid indexes nearest the point (within the nwant
// nearest distances, ties by index).
type iq3Search struct {
	grid       []uint32
	kmap       [4096]int32
	neighbours []uint16
}

var (
	iq3xxsSearchOnce, iq3sSearchOnce sync.Once
	iq3xxsSearch, iq3sSearch         *iq3Search
)

// iq3SearchFor returns the search of IQ3_XXS (xxs) or IQ3_S, built on
// first use. Both search in coordinates 2l+1 (l = 0..7): IQ3_S's grid
// stores them as they are, IQ3_XXS's as 8l+4 (62 for l = 7).
func iq3SearchFor(xxs bool) *iq3Search {
	if xxs {
		iq3xxsSearchOnce.Do(func() { iq3xxsSearch = newIQ3Search(iq3xxsGrid[:], 2, func(v uint32) uint32 { return 2*(v>>3) + 1 }) })
		return iq3xxsSearch
	}
	iq3sSearchOnce.Do(func() { iq3sSearch = newIQ3Search(iq3sGrid[:], 3, func(v uint32) uint32 { return v }) })
	return iq3sSearch
}

func newIQ3Search(points []uint32, nwant int, coord func(uint32) uint32) *iq3Search {
	grid := make([]uint32, len(points))
	for i, p := range points {
		for k := 0; k < 4; k++ {
			grid[i] |= coord(p>>(8*k)&0xff) << (8 * k)
		}
	}
	s := &iq3Search{grid: grid}
	for i := range s.kmap {
		s.kmap[i] = -1
	}
	for i, g := range grid {
		u := 0
		for k := 0; k < 4; k++ {
			u |= int((g>>(8*k)&0xff-1)/2) << (3 * k)
		}
		s.kmap[u] = int32(i)
	}
	type cand struct{ d2, j int }
	dist := make([]cand, len(grid))
	for u := range s.kmap {
		if s.kmap[u] >= 0 {
			continue
		}
		for j, g := range grid {
			d2 := 0
			for k := 0; k < 4; k++ {
				d := int(g>>(8*k)&0xff) - (2*(u>>(3*k)&7) + 1)
				d2 += d * d
			}
			dist[j] = cand{d2, j}
		}
		slices.SortFunc(dist, func(a, b cand) int {
			if a.d2 != b.d2 {
				return a.d2 - b.d2
			}
			return a.j - b.j
		})
		s.kmap[u] = -int32(len(s.neighbours) + 1)
		start := len(s.neighbours)
		s.neighbours = append(s.neighbours, 0)
		d2, have := dist[0].d2, 1
		for _, c := range dist {
			if c.d2 > d2 {
				if have == nwant {
					break
				}
				d2 = c.d2
				have++
			}
			s.neighbours = append(s.neighbours, uint16(c.j))
		}
		s.neighbours[start] = uint16(len(s.neighbours) - start - 1)
	}
	return s
}

// best replaces the 4 levels l of the group xval (weights w) by those of
// the neighbour grid point of u that fits best at scale, returning its
// index (llama.cpp's iq3_find_best_neighbour).
func (s *iq3Search) best(u int, xval, w []float32, scale float32, l []int8) int {
	nb := s.neighbours[-s.kmap[u]-1:]
	n := int(nb[0])
	bestD2, idx := float32(math.MaxFloat32), -1
	for _, j := range nb[1 : n+1] {
		g := s.grid[j]
		var d2 float32
		for i := 0; i < 4; i++ {
			diff := float32(scale*float32(g>>(8*i)&0xff)) - xval[i]
			d2 += float32(float32(w[i]*diff) * diff)
		}
		if d2 < bestD2 {
			bestD2, idx = d2, int(j)
		}
	}
	if idx < 0 {
		idx = int(nb[1]) // NaN distances: llama.cpp asserts; any point will do
	}
	g := s.grid[idx]
	for i := 0; i < 4; i++ {
		l[i] = int8((g>>(8*i)&0xff - 1) / 2)
	}
	return idx
}

// iq3Level rounds id·x to a level 0..7 of the grid coordinates 2l+1.
func iq3Level(id, x float32) int8 {
	return int8(clampInt(nearestInt(float32(0.5*float32(float32(id*x)-1))), 0, 7))
}

// iq3Chunk quantizes one 32-weight chunk x with weights w (and their
// square roots waux): the signs (7-bit codes with IQ3_XXS's implied
// parity when xxs, else 8 bits per 8 weights), the grid indexes of its 8
// groups and its scale; zero reports a chunk of (near) zeros, which
// llama.cpp skips without writing anything.
func iq3Chunk(s *iq3Search, xxs bool, x, w, waux []float32, signs *[4]uint8, idx *[8]int) (scale float32, zero bool) {
	var xval [32]float32
	var l, laux [32]int8
	var onGrid, onGridAux [8]bool
	for k := 0; k < 4; k++ {
		var sg uint8
		nflip := 0
		for i := 0; i < 8; i++ {
			v := x[8*k+i]
			if v >= 0 {
				xval[8*k+i] = v
			} else {
				xval[8*k+i] = -v
				nflip++
				sg |= 1 << i
			}
		}
		if xxs {
			if nflip%2 == 1 {
				imin := 0
				vmin := float32(float32(w[8*k]*x[8*k]) * x[8*k])
				for i := 1; i < 8; i++ {
					if a := float32(float32(w[8*k+i]*x[8*k+i]) * x[8*k+i]); a < vmin {
						vmin, imin = a, i
					}
				}
				xval[8*k+imin] = -xval[8*k+imin]
				sg ^= 1 << imin
			}
			sg &= 127
		}
		signs[k] = sg
	}
	vmax := xval[0]
	for _, v := range xval[1:] {
		if v > vmax {
			vmax = v
		}
	}
	if xxs && vmax < 1e-8 || !xxs && vmax == 0 {
		return 0, true
	}
	var best float32
	scale = vmax / 15
	try := 9
	if xxs {
		try = 15
		for k := range onGrid {
			onGrid[k] = true
		}
	}
	for is := -try; is <= try; is++ {
		id := (15 + float32(float32(is)*0.2)) / vmax
		this := 1 / id
		for k := 0; k < 8; k++ {
			u := 0
			for i := 0; i < 4; i++ {
				laux[4*k+i] = iq3Level(id, xval[4*k+i])
				u |= int(laux[4*k+i]) << (3 * i)
			}
			onGridAux[k] = s.kmap[u] >= 0
			if !onGridAux[k] {
				s.best(u, xval[4*k:], waux[4*k:], this, laux[4*k:4*k+4])
			}
		}
		var sumQX, sumQ2 float32
		for i := range xval {
			q := float32(2*int32(laux[i]) + 1)
			sumQX += float32(float32(w[i]*xval[i]) * q)
			sumQ2 += float32(float32(w[i]*q) * q)
		}
		if sumQ2 > 0 && sumQX*sumQX > best*sumQ2 {
			scale = sumQX / sumQ2
			best = scale * sumQX
			l = laux
			onGrid = onGridAux
		}
	}
	off := 0
	for _, g := range onGrid {
		if !g {
			off++
		}
	}
	if off > 0 && scale > 0 {
		id := 1 / scale
		for k := 0; k < 8; k++ {
			if xxs && onGrid[k] {
				continue
			}
			u := 0
			for i := 0; i < 4; i++ {
				u |= int(iq3Level(id, xval[4*k+i])) << (3 * i)
			}
			gi := int(s.kmap[u])
			if gi < 0 {
				gi = s.best(u, xval[4*k:], waux[4*k:], scale, l[4*k:4*k+4])
			}
			g := s.grid[gi]
			for i := 0; i < 4; i++ {
				l[4*k+i] = int8((g>>(8*i)&0xff - 1) / 2)
			}
		}
		var sumQX, sumQ2 float32
		for i := range xval {
			q := float32(2*int32(l[i]) + 1)
			sumQX += float32(float32(w[i]*xval[i]) * q)
			sumQ2 += float32(float32(w[i]*q) * q)
		}
		if sumQ2 > 0 {
			scale = sumQX / sumQ2
		}
	}
	if scale < 0 {
		scale = -scale
		for k := range signs {
			signs[k] = ^signs[k]
			if xxs {
				signs[k] &= 127
			}
		}
	}
	for k := range idx {
		idx[k] = s.fit(l[4*k : 4*k+4])
	}
	return scale, false
}

// fit returns the grid index of the levels l (a grid point by
// construction; 0 if not, which only NaN input can cause).
func (s *iq3Search) fit(l []int8) int {
	for _, v := range l[:4] {
		if v < 0 || v > 7 {
			return 0
		}
	}
	u := 0
	for i := 0; i < 4; i++ {
		u |= int(l[i]) << (3 * i)
	}
	if g := s.kmap[u]; g >= 0 {
		return int(g)
	}
	return 0
}

// iq3Weights fills w with the search weights of chunk x (x² without an
// importance matrix) and waux with their square roots.
func iq3Weights(x, qw []float32, sigma2 float32, w, waux []float32) {
	for i, v := range x {
		if qw != nil {
			w[i] = qw[i] * sqrt32(sigma2+float32(v*v))
		} else {
			w[i] = v * v
		}
		waux[i] = sqrt32(w[i])
	}
}

func quantizeIQ3_XXSWeighted(dst []byte, src, qw []float32) {
	s := iq3SearchFor(true)
	var w, waux [32]float32
	var scales [8]float32
	var signs [4]uint8
	var idx [8]int
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*iq3_XXSBytes:(b+1)*iq3_XXSBytes]
		clear(out)
		sigma2 := float32(2 * sumSquares(x) / QKK)
		var maxScale float32
		for c := 0; c < 8; c++ {
			xc := x[32*c : 32*c+32]
			var qwc []float32
			if qw != nil {
				qwc = qw[b*QKK+32*c : b*QKK+32*c+32]
			}
			iq3Weights(xc, qwc, sigma2, w[:], waux[:])
			var zero bool
			scales[c], zero = iq3Chunk(s, true, xc, w[:], waux[:], &signs, &idx)
			if zero {
				continue
			}
			for k := 0; k < 8; k++ {
				out[2+8*c+k] = byte(idx[k])
			}
			le.PutUint32(out[66+4*c:], uint32(signs[0])|uint32(signs[1])<<7|uint32(signs[2])<<14|uint32(signs[3])<<21)
			maxScale = max(maxScale, scales[c])
		}
		if maxScale == 0 {
			clear(out)
			continue
		}
		d := maxScale / 31
		le.PutUint16(out, FP32ToFP16(float32(d*1.0125)))
		id := 1 / d
		for c := 0; c < 8; c++ {
			l := clampInt(nearestInt(float32(0.5*float32(float32(id*scales[c])-1))), 0, 15)
			le.PutUint32(out[66+4*c:], le.Uint32(out[66+4*c:])|uint32(l)<<28)
		}
	}
}

func quantizeIQ3_SWeighted(dst []byte, src, qw []float32) {
	s := iq3SearchFor(false)
	var w, waux [32]float32
	var scales [8]float32
	var signs [4]uint8
	var idx [8]int
	for b := 0; b < len(src)/QKK; b++ {
		x, out := src[b*QKK:(b+1)*QKK], dst[b*iq3_SBytes:(b+1)*iq3_SBytes]
		clear(out)
		sigma2 := float32(2 * sumSquares(x) / QKK)
		var maxScale float32
		// llama.cpp's write positions of the indexes and signs advance
		// only past chunks that are not zero (the qh bits and scales go by
		// chunk number)
		pos := 0
		for c := 0; c < 8; c++ {
			xc := x[32*c : 32*c+32]
			var qwc []float32
			if qw != nil {
				qwc = qw[b*QKK+32*c : b*QKK+32*c+32]
			}
			iq3Weights(xc, qwc, sigma2, w[:], waux[:])
			var zero bool
			scales[c], zero = iq3Chunk(s, false, xc, w[:], waux[:], &signs, &idx)
			if zero {
				continue
			}
			for k := 0; k < 8; k++ {
				out[2+8*pos+k] = byte(idx[k])
				out[66+c] |= byte(idx[k]>>8) << k
			}
			copy(out[74+4*pos:78+4*pos], signs[:])
			pos++
			maxScale = max(maxScale, scales[c])
		}
		if maxScale == 0 {
			continue
		}
		d := maxScale / 31
		le.PutUint16(out, FP32ToFP16(float32(d*1.033)))
		id := 1 / d
		for c := 0; c < 8; c += 2 {
			l1 := clampInt(nearestInt(float32(0.5*float32(float32(id*scales[c])-1))), 0, 15)
			l2 := clampInt(nearestInt(float32(0.5*float32(float32(id*scales[c+1])-1))), 0, 15)
			out[106+c/2] = byte(l1 | l2<<4)
		}
	}
}

func quantizeIQ3_XXS(dst []byte, src []float32) { quantizeIQ3_XXSWeighted(dst, src, nil) }

func quantizeIQ3_S(dst []byte, src []float32) { quantizeIQ3_SWeighted(dst, src, nil) }

func init() {
	fileQuants[IQ3_XXS] = fileQuant{row: quantizeIQ3_XXS, weighted: quantizeIQ3_XXSWeighted}
	fileQuants[IQ3_S] = fileQuant{row: quantizeIQ3_S, weighted: quantizeIQ3_SWeighted}
}
