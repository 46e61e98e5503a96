package cpu

import (
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TreeSpans implements compute.TreeAttender: RoPE and Attend honour
// Span.Tree, and the KV store moves positions (MoveRows). A tree row's
// attention reads its path's keys in the order of a sequence holding it:
// flashTree and treeF32 in the exact mode, tiledTree in the default one.
func (b *Backend) TreeSpans() bool { return true }

// MoveRows implements compute.RowMover.
func (s *kvStore) MoveRows(blocks []int32, dst, src []int) {
	re, bs := s.rowElems, s.cfg.BlockSize
	for i := range dst {
		if dst[i] == src[i] {
			continue
		}
		for l := range s.cfg.Layers {
			d, o := s.offset(blocks, l, dst[i]), s.offset(blocks, l, src[i])
			if s.kT { // keys element-major per block, values by head
				kd, ko := s.kbase(blocks, l, dst[i])+dst[i]%bs, s.kbase(blocks, l, src[i])+src[i]%bs
				for e := range re {
					if s.f16 != nil {
						s.f16[kd+e*bs] = s.f16[ko+e*bs]
					} else {
						s.f32[kd+e*bs] = s.f32[ko+e*bs]
					}
				}
				hd := s.cfg.HeadDim
				for h := range s.cfg.KVHeads {
					vd, _ := s.vRow(blocks, l, dst[i], h)
					vo, _ := s.vRow(blocks, l, src[i], h)
					if s.f16 != nil {
						copy(s.f16[vd:vd+hd], s.f16[vo:vo+hd])
					} else {
						copy(s.f32[vd:vd+hd], s.f32[vo:vo+hd])
					}
				}
				continue
			}
			if s.f16 != nil {
				copy(s.f16[d:d+re], s.f16[o:o+re])
				copy(s.f16[d+s.perLayer:d+s.perLayer+re], s.f16[o+s.perLayer:o+s.perLayer+re])
			} else {
				copy(s.f32[d:d+re], s.f32[o:o+re])
				copy(s.f32[d+s.perLayer:d+s.perLayer+re], s.f32[o+s.perLayer:o+s.perLayer+re])
			}
		}
	}
}

// treeDepth returns the depth of row i of a tree span (0 for a row whose
// parent is -1).
func treeDepth(tree []int32, i int) int {
	d := 0
	for p := tree[i]; p >= 0; p = tree[p] {
		d++
	}
	return d
}

// keyRun is a run of n consecutive stored positions from pos.
type keyRun struct{ pos, n int }

// treeRuns returns, in position order, the stored positions that row i
// of tree span sp attends to: the positions before sp.Pos its window
// reaches, then the rows of its ancestors and its own, merged into runs
// that never cross a block boundary. It also returns the row's logical
// position, Pos+depth.
func (j *attendJob) treeRuns(dst []keyRun, sp *compute.Span, i int) ([]keyRun, int) {
	dst = dst[:0]
	depth := treeDepth(sp.Tree, i)
	qpos := sp.Pos + depth
	first := j.firstKey(qpos)
	if first < sp.Pos {
		dst = append(dst, keyRun{first, sp.Pos - first})
	}
	// Ancestors from the top: walk up, then reverse the appended part.
	top := len(dst)
	for r, d := i, depth; r >= 0; r, d = int(sp.Tree[r]), d-1 {
		if sp.Pos+d < first { // outside the window, and so is every ancestor above
			break
		}
		dst = append(dst, keyRun{sp.Pos + r, 1})
	}
	for a, b := top, len(dst)-1; a < b; a, b = a+1, b-1 {
		dst[a], dst[b] = dst[b], dst[a]
	}
	// Merge consecutive positions, then split at block boundaries.
	merged := dst[:0]
	for _, r := range dst {
		if k := len(merged) - 1; k >= 0 && merged[k].pos+merged[k].n == r.pos {
			merged[k].n += r.n
			continue
		}
		merged = append(merged, r)
	}
	bs := j.s.cfg.BlockSize
	out := merged
	for k := 0; k < len(out); k++ {
		r := out[k]
		if m := bs - r.pos%bs; r.n > m {
			out[k].n = m
			out = append(out, keyRun{})
			copy(out[k+2:], out[k+1:])
			out[k+1] = keyRun{r.pos + m, r.n - m}
		}
	}
	return out, qpos
}

// runsFor returns worker wk's run buffer (one per worker, New).
func (j *attendJob) runsFor(wk int) []keyRun {
	return j.runs[wk]
}

// flashTree is flash for an item of a tree span: each row reads the keys
// of its runs (treeRuns) in position order, with the arithmetic of
// FlashKeysHeads, which depends only on the keys' order, so a row's output
// is the same bits as at its logical position in a sequence of its path.
func (j *attendJob) flashTree(wk int, it attendItem) {
	a, qs, d := j.a, j.q, j.d
	hd := a.HeadDim
	sp := &j.spans[it.span]
	kvOff := (it.h0 / (a.Heads / a.KVHeads)) * hd
	nh := it.h1 - it.h0
	q16, acc16 := growHalf(j.q16[wk], nh*hd), growHalf(j.acc16[wk], nh*hd)
	j.q16[wk], j.acc16[wk] = q16, acc16
	st := &j.heads[wk]
	st.N, st.Acc, st.Scale, st.Softcap, st.FP16 = nh, acc16, a.Scale, a.Softcap, j.fp16
	if a.Softcap > 0 {
		st.Scale /= a.Softcap
	}
	runs := j.runsFor(wk)
	for i := it.i0; i < it.i1; i++ {
		row := sp.Row + i
		runs, _ = j.treeRuns(runs, sp, i)
		quant.FloatToHalf(q16, qs.f32[row*qs.cols+it.h0*hd:row*qs.cols+it.h1*hd])
		clear(acc16)
		for h := range nh {
			st.Max[h], st.Sum[h] = float32(math.Inf(-1)), 0
		}
		for _, r := range runs {
			k, v, stride := j.kvRows(wk, sp.Blocks, a.Layer, r.pos, r.n, kvOff)
			quant.FlashKeysHeads(st, q16, k, v, stride, r.n)
		}
		out := d.f32[row*d.cols+it.h0*hd : row*d.cols+it.h1*hd]
		quant.HalfToFloat(out, acc16)
		for h := range nh {
			inv := 1 / st.Sum[h]
			for e := range out[h*hd : (h+1)*hd] {
				out[h*hd+e] *= inv
			}
		}
	}
	j.runs[wk] = runs
	st.Acc = nil
}

// treeF32 is the f32-cache attention of an item of a tree span: for each
// row it gathers the keys of its runs, transposed, and the values, then
// computes scores and the weighted sum exactly as do does for a chunk of
// consecutive keys (every score sums in element order, every output
// element in key order), so the results do not depend on the gathering.
func (j *attendJob) treeF32(wk int, it attendItem) {
	s, a, qs, d := j.s, j.a, j.q, j.d
	hd := a.HeadDim
	sp := &j.spans[it.span]
	kvOff := (it.h0 / (a.Heads / a.KVHeads)) * hd
	qh, acc := grow(j.qh[wk], hd), grow(j.acc[wk], hd)
	j.qh[wk], j.acc[wk] = qh, acc
	runs := j.runsFor(wk)
	for i := it.i0; i < it.i1; i++ {
		row := sp.Row + i
		runs, _ = j.treeRuns(runs, sp, i)
		nk := 0
		for _, r := range runs {
			nk += r.n
		}
		ldk := (nk + 7) &^ 7
		kt := grow(j.kt[wk], hd*ldk)
		vf := grow(j.vf[wk], nk*hd)
		j.kt[wk], j.vf[wk] = kt, vf
		t := 0
		for _, r := range runs {
			for u := range r.n {
				o := s.offset(sp.Blocks, a.Layer, r.pos+u) + kvOff
				for e, x := range s.f32[o : o+hd] {
					kt[e*ldk+t] = x
				}
				copy(vf[t*hd:(t+1)*hd], s.f32[o+s.perLayer:o+s.perLayer+hd])
				t++
			}
		}
		for h := it.h0; h < it.h1; h++ {
			copy(qh, qs.f32[row*qs.cols+h*hd:row*qs.cols+(h+1)*hd])
			scores := grow(j.scores[wk], nk)
			j.scores[wk] = scores
			attendHead(d.f32[row*d.cols+h*hd:row*d.cols+(h+1)*hd], qh, kt, ldk, vf, scores, acc, a.Scale, a.Softcap)
		}
	}
	j.runs[wk] = runs
}

// tiledTree is tiled for an item of a tree span: each row reads the keys
// of its runs (treeRuns) at their logical positions, from the window's
// first to Pos+depth, in tiles aligned at position 0 as a plain span's
// are, so that a row's output is the same bits as at the end of a
// sequence holding its path (the default mode's batch invariance).
func (j *attendJob) tiledTree(wk int, it attendItem) {
	s, a, qs := j.s, j.a, j.q
	hd, bs := a.HeadDim, s.cfg.BlockSize
	const tile = quant.FlashTile
	sp := &j.spans[it.span]
	kvOff := (it.h0 / (a.Heads / a.KVHeads)) * hd
	nh := it.h1 - it.h0
	st := &j.tile[wk]
	st.kt, st.vt = grow(st.kt, hd*tile), grow(st.vt, tile*hd)
	st.sc, st.tmp = grow(st.sc, nh*tile), grow(st.tmp, hd)
	st.acc, st.ms, st.ss = grow(st.acc, nh*hd), grow(st.ms, nh), grow(st.ss, nh)
	runs := j.runsFor(wk)
	for i := it.i0; i < it.i1; i++ {
		var qpos int
		runs, qpos = j.treeRuns(runs, sp, i)
		first := j.firstKey(qpos)
		n := 0
		for _, r := range runs {
			n += r.n
		}
		if n != qpos-first+1 {
			panic("Attend: a tree row's keys do not cover its window")
		}
		clear(st.acc)
		for r := range st.ms {
			st.ms[r], st.ss[r] = float32(math.Inf(-1)), 0
		}
		for t0 := first / tile * tile; t0 <= qpos; t0 += tile {
			lo, hi := max(t0, first), min(t0+tile-1, qpos)
			clear(st.vt[:(lo-t0)*hd])
			clear(st.vt[(hi-t0+1)*hd:])
			l := first // the logical position of the run's first key
			for _, r := range runs {
				for x := max(l, lo); x <= min(l+r.n-1, hi); {
					p := r.pos + x - l
					m := min(bs-p%bs, min(l+r.n-1, hi)+1-x)
					j.tileLoad(wk, st, sp.Blocks, p, x-t0, m, kvOff, p+m <= sp.Pos)
					x += m
				}
				l += r.n
			}
			j.tileRow(st, qs.f32[(sp.Row+i)*qs.cols+it.h0*hd:], 0, nh, lo-t0, hi-t0)
		}
		j.tileOut(st, sp.Row+i, 0, it)
	}
	j.runs[wk] = runs
}

// tileLoad converts the keys (transposed) and values of the m stored
// positions p.. (one block) into columns col.. of st's tile. With block,
// the positions are those of the keys (before the tree) and a transposed
// store's whole block of keys is converted at once, as tiled does; the
// columns of its other positions are overwritten by later loads or masked.
func (j *attendJob) tileLoad(wk int, st *tileState, blocks []int32, p, col, m, kvOff int, block bool) {
	s, a := j.s, j.a
	hd, bs := a.HeadDim, s.cfg.BlockSize
	const tile = quant.FlashTile
	if s.coldT != nil {
		// A store with a cold tier keeps rows; a cold block's are decoded
		// to f16 first (kvRows), so both tiers take the same arithmetic.
		k, v, stride := j.kvRows(wk, blocks, a.Layer, p, m, kvOff)
		quant.FlashLoadV(st.vt[col*hd:], v, stride, m, hd)
		// The keys transposed in f16 first, then converted as a
		// transposed store's block is.
		kt := growHalf(st.kt16, hd*m)
		st.kt16 = kt
		for u := range m {
			row := k[u*stride : u*stride+hd]
			for e, x := range row {
				kt[e*m+u] = x
			}
		}
		quant.FlashLoadKT(st.kt, kt, hd, m, col)
		return
	}
	o := s.offset(blocks, a.Layer, p) + kvOff
	vo, vs := s.vRow(blocks, a.Layer, p, kvOff/hd)
	if s.f16 != nil {
		quant.FlashLoadV(st.vt[col*hd:], s.f16[vo:], vs, m, hd)
	} else {
		for u := range m {
			copy(st.vt[(col+u)*hd:(col+u+1)*hd], s.f32[vo+u*vs:])
		}
	}
	switch {
	case s.kT && block:
		p0 := p - p%bs
		kb := s.kHead(blocks, a.Layer, p, kvOff/hd)
		c0 := col - (p - p0)
		if s.f16 != nil {
			quant.FlashLoadKT(st.kt, s.f16[kb:kb+hd*bs], hd, bs, c0)
		} else {
			for e := range hd {
				copy(st.kt[e*tile+c0:e*tile+c0+bs], s.f32[kb+e*bs:])
			}
		}
	case s.kT:
		kb := s.kHead(blocks, a.Layer, p, kvOff/hd)
		for u := range m {
			q := (p + u) % bs
			for e := range hd {
				if s.f16 != nil {
					st.kt[e*tile+col+u] = quant.FP16ToFP32(s.f16[kb+e*bs+q])
				} else {
					st.kt[e*tile+col+u] = s.f32[kb+e*bs+q]
				}
			}
		}
	default:
		for u := range m {
			ko := o + u*s.rowElems
			if s.f16 != nil {
				quant.HalfToFloat(st.tmp, s.f16[ko:ko+hd])
			} else {
				copy(st.tmp, s.f32[ko:ko+hd])
			}
			for e, x := range st.tmp[:hd] {
				st.kt[e*tile+col+u] = x
			}
		}
	}
}
