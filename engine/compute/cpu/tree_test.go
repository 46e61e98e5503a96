package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestTreeSpanMatchesPaths verifies a token tree in one Attend (and RoPE)
// call and checks every tree row against the same token computed as the
// last token of a plain span holding its path after the same prefix: the
// outputs must be the same bits, over f16 and f32 caches, with GQA,
// sliding windows and soft-capping, and with a tree that crosses a block
// boundary. MoveRows then compacts one path, and a plain decode step
// after it must read the moved rows as if the path had been decoded.
func TestTreeSpanMatchesPaths(t *testing.T) {
	// Parents of a 9-token tree: row 0 follows the prefix, two branches
	// below it, a second root-level alternative (row 5) and deeper chains.
	tree := []int32{-1, 0, 1, 0, 3, -1, 2, 6, 4}
	for _, tc := range []struct {
		kvType             quant.Type
		heads, kvHeads, hd int
		window             int
		softcap            float32
		prefix             int
	}{
		{quant.F16, 4, 2, 64, 0, 0, 29},
		{quant.F16, 6, 2, 64, 0, 0, 13}, // the tree crosses into a second block
		{quant.F32, 4, 2, 64, 0, 0, 20},
		{quant.F16, 3, 3, 36, 9, 30, 21},
		{quant.F32, 2, 1, 20, 5, 0, 17},
	} {
		t.Run(fmt.Sprintf("%s/h%d-kv%d-hd%d-w%d-p%d", tc.kvType, tc.heads, tc.kvHeads, tc.hd, tc.window, tc.prefix), func(t *testing.T) {
			const bs = 16
			r := rand.New(rand.NewPCG(uint64(tc.hd), uint64(tc.prefix)))
			b := New(Options{Threads: 2, Exact: true}) // trees: the exact mode only (TreeSpans)
			defer b.Close()
			qd, kd := tc.heads*tc.hd, tc.kvHeads*tc.hd
			a := compute.Attention{Heads: tc.heads, KVHeads: tc.kvHeads, HeadDim: tc.hd,
				Scale: float32(1 / math.Sqrt(float64(tc.hd))), Softcap: tc.softcap, Window: tc.window}
			rope := compute.RoPE{Mode: compute.RoPENormal, FreqBase: 10000}
			cfg := compute.KVConfig{Layers: 2, Blocks: 8, BlockSize: bs, KVHeads: tc.kvHeads, HeadDim: tc.hd, Type: tc.kvType}
			tensor := func(v []float32, rows, cols int) compute.Tensor {
				x := b.New(rows, cols)
				b.Upload(x, v)
				return x
			}
			n := len(tree)
			pq, pk, pv := randRows(r, tc.prefix, qd), randRows(r, tc.prefix, kd), randRows(r, tc.prefix, kd)
			tq, tk, tv := randRows(r, n, qd), randRows(r, n, kd), randRows(r, n, kd)
			// attend runs RoPE on q and k, then Attend, of one span, and
			// returns the output rows.
			attend := func(store compute.KVStore, q, k, v []float32, sp compute.Span) []float32 {
				qt, kt, vt := tensor(q, sp.N, qd), tensor(k, sp.N, kd), tensor(v, sp.N, kd)
				spans := []compute.Span{sp}
				b.RoPE(qt, spans, tc.heads, tc.hd, rope)
				b.RoPE(kt, spans, tc.kvHeads, tc.hd, rope)
				dst := b.New(sp.N, qd)
				for l := range cfg.Layers {
					a.Layer = l
					b.Attend(dst, qt, kt, vt, store, spans, a)
				}
				return append([]float32(nil), F32(dst)...)
			}
			newStore := func(blocks []int32) compute.KVStore {
				store, err := b.NewKVStore(cfg)
				if err != nil {
					t.Fatal(err)
				}
				attend(store, pq, pk, pv, compute.Span{N: tc.prefix, Blocks: blocks})
				return store
			}
			blocks := []int32{6, 1, 3}
			store := newStore(blocks)
			got := attend(store, tq, tk, tv, compute.Span{N: n, Pos: tc.prefix, Blocks: blocks, Tree: tree})
			for i := range n {
				var path []int
				for p := i; p >= 0; p = int(tree[p]) {
					path = append([]int{p}, path...)
				}
				var q, k, v []float32
				for _, p := range path {
					q = append(q, tq[p*qd:(p+1)*qd]...)
					k = append(k, tk[p*kd:(p+1)*kd]...)
					v = append(v, tv[p*kd:(p+1)*kd]...)
				}
				ref := newStore([]int32{2, 4, 0})
				want := attend(ref, q, k, v, compute.Span{N: len(path), Pos: tc.prefix, Blocks: []int32{2, 4, 0}})
				want = want[(len(path)-1)*qd:]
				for e := range qd {
					if math.Float32bits(got[i*qd+e]) != math.Float32bits(want[e]) {
						t.Fatalf("tree row %d element %d: %v, as the end of its path %v", i, e, got[i*qd+e], want[e])
					}
				}
			}
			// Accept the path 0, 3, 4, 8: move rows 3, 4, 8 to depths 1-3,
			// then decode one more token reading them.
			path := []int{0, 3, 4, 8}
			var dst, src []int
			for d, p := range path {
				dst, src = append(dst, tc.prefix+d), append(src, tc.prefix+p)
			}
			store.(compute.RowMover).MoveRows(blocks, dst, src)
			nq, nk, nv := randRows(r, 1, qd), randRows(r, 1, kd), randRows(r, 1, kd)
			got = attend(store, nq, nk, nv, compute.Span{N: 1, Pos: tc.prefix + len(path), Blocks: blocks})
			ref := newStore([]int32{2, 4, 0})
			var q, k, v []float32
			for _, p := range path {
				q = append(q, tq[p*qd:(p+1)*qd]...)
				k = append(k, tk[p*kd:(p+1)*kd]...)
				v = append(v, tv[p*kd:(p+1)*kd]...)
			}
			attend(ref, q, k, v, compute.Span{N: len(path), Pos: tc.prefix, Blocks: []int32{2, 4, 0}})
			want := attend(ref, nq, nk, nv, compute.Span{N: 1, Pos: tc.prefix + len(path), Blocks: []int32{2, 4, 0}})
			for e := range qd {
				if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
					t.Fatalf("after MoveRows, element %d: %v, decoded path %v", e, got[e], want[e])
				}
			}
		})
	}
}

func TestTreeDepthsAndValidity(t *testing.T) {
	for _, tc := range []struct {
		tree  []int32
		valid bool
		depth []int32
	}{
		{[]int32{-1, 0, 1, 0}, true, []int32{0, 1, 2, 1}},
		{[]int32{-1, -1, 1}, true, []int32{0, 0, 1}},
		{[]int32{0}, false, nil},
		{[]int32{-1, 2, 0}, false, nil},
		{[]int32{-2}, false, nil},
	} {
		if got := compute.ValidTree(tc.tree, len(tc.tree)); got != tc.valid {
			t.Errorf("ValidTree(%v) = %v, want %v", tc.tree, got, tc.valid)
		}
		if !tc.valid {
			continue
		}
		d := compute.TreeDepths(nil, tc.tree)
		for i := range d {
			if d[i] != tc.depth[i] || int(d[i]) != treeDepth(tc.tree, i) {
				t.Errorf("depths of %v = %v, want %v", tc.tree, d, tc.depth)
				break
			}
		}
	}
	if compute.ValidTree([]int32{-1}, 2) {
		t.Error("ValidTree accepted a tree of the wrong length")
	}
}
