package cpu

import (
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TreeSpans implements compute.TreeAttender: RoPE and Attend honour
// Span.Tree, and the KV store moves positions (MoveRows). Only the exact
// mode offers them: the default mode's tiled attention has no tree mask
// and its store keeps keys transposed (kT), so its drafts are verified as
// chains.
func (b *Backend) TreeSpans() bool { return b.exact }

// anyTree reports whether a span of spans is a token tree.
func anyTree(spans []compute.Span) bool {
	for i := range spans {
		if spans[i].Tree != nil {
			return true
		}
	}
	return false
}

// MoveRows implements compute.RowMover.
func (s *kvStore) MoveRows(blocks []int32, dst, src []int) {
	if s.kT {
		panic("MoveRows: a store with transposed keys takes no tree spans")
	}
	re := s.rowElems
	for i := range dst {
		if dst[i] == src[i] {
			continue
		}
		for l := range s.cfg.Layers {
			d, o := s.offset(blocks, l, dst[i]), s.offset(blocks, l, src[i])
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
	st.N, st.Acc, st.Scale, st.Softcap = nh, acc16, a.Scale, a.Softcap
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
			clear(scores)
			quant.AddScaledRows(scores, qh, kt, ldk)
			maxScore := float32(math.Inf(-1))
			for t, dot := range scores {
				sc := dot * a.Scale
				if a.Softcap > 0 {
					sc = a.Softcap * float32(math.Tanh(float64(dot*a.Scale/a.Softcap)))
				}
				scores[t] = sc
				maxScore = max(maxScore, sc)
			}
			for t := range scores {
				scores[t] -= maxScore
			}
			quant.Exp(scores, scores)
			var sum float64
			for _, e := range scores {
				sum += float64(e)
			}
			inv := float32(1 / sum)
			for t := range scores {
				scores[t] *= inv
			}
			clear(acc)
			quant.AddScaledRows(acc, scores, vf, hd)
			copy(d.f32[row*d.cols+h*hd:row*d.cols+(h+1)*hd], acc)
		}
	}
	j.runs[wk] = runs
}
