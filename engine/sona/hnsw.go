package sona

import (
	"math"
	"math/rand/v2"
	"slices"
)

// hnsw is a hierarchical navigable small-world graph (Malkov & Yashunin,
// 2016) over unit vectors, for approximate nearest neighbours by cosine
// similarity: each node sits on levels 0..L (L drawn geometrically), is
// linked to its nearest neighbours on each, and a search descends greedily
// from the top level's entry point, widening to ef candidates on level 0.
type hnsw struct {
	m, m0, efC int     // links per node (level 0: m0), construction breadth
	mult       float64 // level multiplier 1/ln(m)
	vecs       [][]float32
	links      [][][]int32 // node → level → neighbours
	entry      int32
	top        int
	rng        *rand.Rand
}

func newHNSW(m, efC int, seed uint64) *hnsw {
	return &hnsw{m: m, m0: 2 * m, efC: efC, mult: 1 / math.Log(float64(m)), entry: -1,
		rng: rand.New(rand.NewPCG(seed, 0x4a5)), top: -1}
}

// hit is a node and its similarity to the query.
type hit struct {
	id  int32
	sim float32
}

func dot(a, b []float32) float32 {
	var s float32
	b = b[:len(a)]
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// add inserts unit vector v and returns its id.
func (h *hnsw) add(v []float32) int32 {
	id := int32(len(h.vecs))
	level := int(-math.Log(1-h.rng.Float64()) * h.mult)
	level = min(level, 16)
	h.vecs = append(h.vecs, v)
	h.links = append(h.links, make([][]int32, level+1))
	if h.entry < 0 {
		h.entry, h.top = id, level
		return id
	}
	ep := []hit{{h.entry, dot(v, h.vecs[h.entry])}}
	for lc := h.top; lc > level; lc-- {
		ep = h.searchLevel(v, ep, 1, lc)
	}
	for lc := min(level, h.top); lc >= 0; lc-- {
		found := h.searchLevel(v, ep, h.efC, lc)
		max := h.m
		if lc == 0 {
			max = h.m0
		}
		neigh := h.selectNeighbours(found, h.m)
		h.links[id][lc] = neigh
		for _, n := range neigh {
			h.links[n][lc] = append(h.links[n][lc], id)
			if len(h.links[n][lc]) > max {
				h.links[n][lc] = h.shrink(n, h.links[n][lc], max)
			}
		}
		ep = found
	}
	if level > h.top {
		h.entry, h.top = id, level
	}
	return id
}

// selectNeighbours keeps up to m of the candidates (best first), skipping
// one that is closer to an already kept neighbour than to the new node
// (the paper's heuristic, which keeps links spread in all directions),
// then filling up with the closest skipped ones.
func (h *hnsw) selectNeighbours(cands []hit, m int) []int32 {
	var kept, skipped []int32
	for _, c := range cands {
		if len(kept) >= m {
			break
		}
		good := true
		for _, k := range kept {
			if dot(h.vecs[c.id], h.vecs[k]) > c.sim {
				good = false
				break
			}
		}
		if good {
			kept = append(kept, c.id)
		} else {
			skipped = append(skipped, c.id)
		}
	}
	for _, s := range skipped {
		if len(kept) >= m {
			break
		}
		kept = append(kept, s)
	}
	return kept
}

// shrink keeps node n's max best links.
func (h *hnsw) shrink(n int32, links []int32, max int) []int32 {
	cands := make([]hit, len(links))
	for i, l := range links {
		cands[i] = hit{l, dot(h.vecs[n], h.vecs[l])}
	}
	slices.SortFunc(cands, func(a, b hit) int { return cmpSim(a, b) })
	return h.selectNeighbours(cands, max)
}

// cmpSim orders hits by descending similarity, then id.
func cmpSim(a, b hit) int {
	switch {
	case a.sim > b.sim:
		return -1
	case a.sim < b.sim:
		return 1
	}
	return int(a.id - b.id)
}

// searchLevel returns up to ef nodes of level lc nearest to q, best
// first, starting from eps.
func (h *hnsw) searchLevel(q []float32, eps []hit, ef, lc int) []hit {
	visited := make(map[int32]bool, ef*4)
	cands := slices.Clone(eps) // to expand, best first
	var res []hit              // best ef so far, best first
	for _, e := range eps {
		visited[e.id] = true
		res = insertHit(res, e, ef)
	}
	slices.SortFunc(cands, cmpSim)
	for len(cands) > 0 {
		c := cands[0]
		cands = cands[1:]
		if len(res) >= ef && c.sim < res[len(res)-1].sim {
			break
		}
		if lc >= len(h.links[c.id]) {
			continue
		}
		for _, n := range h.links[c.id][lc] {
			if visited[n] {
				continue
			}
			visited[n] = true
			s := dot(q, h.vecs[n])
			if len(res) < ef || s > res[len(res)-1].sim {
				res = insertHit(res, hit{n, s}, ef)
				cands = insertHit(cands, hit{n, s}, math.MaxInt)
			}
		}
	}
	return res
}

// insertHit inserts x into the best-first list hs, keeping at most max.
func insertHit(hs []hit, x hit, max int) []hit {
	i, _ := slices.BinarySearchFunc(hs, x, cmpSim)
	hs = slices.Insert(hs, i, x)
	if len(hs) > max {
		hs = hs[:max]
	}
	return hs
}

// search returns the k nodes most similar to unit vector q, best first.
func (h *hnsw) search(q []float32, k, ef int) []hit {
	if h.entry < 0 {
		return nil
	}
	ep := []hit{{h.entry, dot(q, h.vecs[h.entry])}}
	for lc := h.top; lc > 0; lc-- {
		ep = h.searchLevel(q, ep, 1, lc)
	}
	res := h.searchLevel(q, ep, max(ef, k), 0)
	if len(res) > k {
		res = res[:k]
	}
	return res
}
