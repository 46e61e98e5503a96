package cpu

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// TestColdTierAttention writes a prefix, moves some of its blocks to the
// cold tier, and attends over it: the result must be the same bits as
// attending over hot blocks holding the cold blocks' values decoded
// (CopyBlock from a cold block), and close to attending over the original
// f16 values. Saving and restoring a cold block must give its bytes back.
func TestColdTierAttention(t *testing.T) {
	for _, tc := range []struct {
		typ            quant.Type
		heads, kvHeads int
		window         int
		tol            float64 // largest difference from the f16 result
	}{
		{quant.Q8_0, 4, 2, 0, 0.02},
		{quant.Q4_0, 4, 2, 0, 0.25},
		{quant.Q8_0, 6, 3, 50, 0.02}, // the window starts inside a cold block
	} {
		t.Run(fmt.Sprintf("%s/h%d-kv%d-w%d", tc.typ, tc.heads, tc.kvHeads, tc.window), func(t *testing.T) {
			const bs, hd, n = 16, 64, 70
			r := rand.New(rand.NewPCG(uint64(tc.heads), 3))
			b := New(Options{Threads: 2})
			defer b.Close()
			qd, kd := tc.heads*hd, tc.kvHeads*hd
			a := compute.Attention{Heads: tc.heads, KVHeads: tc.kvHeads, HeadDim: hd, Scale: 0.125, Window: tc.window}
			cfg := compute.KVConfig{Layers: 2, Blocks: 12, BlockSize: bs, KVHeads: tc.kvHeads, HeadDim: hd, Type: quant.F16,
				ColdType: tc.typ, ColdBlocks: 4}
			st, err := b.NewKVStore(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tensor := func(v []float32, rows, cols int) compute.Tensor {
				x := b.New(rows, cols)
				b.Upload(x, v)
				return x
			}
			var tree []int32 // the span's tree, when set
			attend := func(blocks []int32, pos int, q, k, v []float32, rows int) []float32 {
				dst := b.New(rows, qd)
				for l := range cfg.Layers {
					a.Layer = l
					b.Attend(dst, tensor(q, rows, qd), tensor(k, rows, kd), tensor(v, rows, kd), st,
						[]compute.Span{{N: rows, Pos: pos, Blocks: blocks, Tree: tree}}, a)
				}
				return append([]float32(nil), F32(dst)...)
			}
			// The prefix in hot blocks 0-4 (70 positions).
			hot := []int32{0, 1, 2, 3, 4}
			attend(hot, 0, randRows(r, n, qd), randRows(r, n, kd), randRows(r, n, kd), n)
			q, k, v := randRows(r, 2, qd), randRows(r, 2, kd), randRows(r, 2, kd)
			// Reference on the f16 values: a copy of the prefix in blocks 5-9.
			f16Copy := []int32{5, 6, 7, 8, 9}
			for i := range hot {
				st.CopyBlock(f16Copy[i], hot[i])
			}
			exact := attend(f16Copy, n, q, k, v, 2)
			// Blocks 0-2 go cold (ids 12-14); their decoded values are
			// copied hot into blocks 10, 11 and 5 for the bitwise reference.
			tiered := st.(compute.TieredKV)
			coldIDs := []int32{12, 13, 14}
			for i, c := range coldIDs {
				tiered.DemoteBlock(c, hot[i])
			}
			decoded := []int32{10, 11, 5, 3, 4}
			for i, c := range coldIDs {
				st.CopyBlock(decoded[i], c)
			}
			got := attend([]int32{12, 13, 14, 3, 4}, n, q, k, v, 2)
			want := attend(decoded, n, q, k, v, 2)
			var worst float64
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: cold blocks %v, their decoded values hot %v", i, got[i], want[i])
				}
				worst = max(worst, math.Abs(float64(got[i]-exact[i])))
			}
			// A speculation tree's span (two branches) reads them alike.
			tree = []int32{-1, 0, 0}
			tq, tk, tv := randRows(r, 3, qd), randRows(r, 3, kd), randRows(r, 3, kd)
			gotTree := attend([]int32{12, 13, 14, 3, 4}, n, tq, tk, tv, 3)
			wantTree := attend(decoded, n, tq, tk, tv, 3)
			for i := range gotTree {
				if math.Float32bits(gotTree[i]) != math.Float32bits(wantTree[i]) {
					t.Fatalf("tree, element %d: cold blocks %v, their decoded values hot %v", i, gotTree[i], wantTree[i])
				}
			}
			tree = nil
			if worst > tc.tol {
				t.Fatalf("cold tier differs from f16 by up to %g (tolerance %g)", worst, tc.tol)
			}
			t.Logf("largest difference from the f16 cache: %.2g", worst)
			// Snapshots carry a cold block's quantized bytes as they are.
			buf := make([]byte, tiered.ColdBlockBytes())
			if err := st.ReadBlock(12, buf); err != nil {
				t.Fatal(err)
			}
			if err := st.WriteBlock(15, buf); err != nil {
				t.Fatal(err)
			}
			again := make([]byte, len(buf))
			if err := st.ReadBlock(15, again); err != nil || !bytes.Equal(buf, again) {
				t.Fatalf("cold block round trip: %v, equal %v", err, bytes.Equal(buf, again))
			}
			if err := st.ReadBlock(12, make([]byte, st.BlockBytes())); err == nil {
				t.Fatal("reading a cold block into a hot block's buffer did not fail")
			}
			if want := 2 * 2 * bs * tc.kvHeads * hd / 32 * map[quant.Type]int{quant.Q8_0: 34, quant.Q4_0: 18}[tc.typ]; tiered.ColdBlockBytes() != want {
				t.Fatalf("ColdBlockBytes %d, want %d", tiered.ColdBlockBytes(), want)
			}
		})
	}
}

func TestColdTierConfig(t *testing.T) {
	b := New(Options{Threads: 1})
	defer b.Close()
	base := compute.KVConfig{Layers: 1, Blocks: 2, BlockSize: 16, KVHeads: 1, HeadDim: 64, Type: quant.F16, ColdBlocks: 2}
	for _, tc := range []struct {
		name string
		edit func(*compute.KVConfig)
		ok   bool
	}{
		{"q8_0", func(c *compute.KVConfig) { c.ColdType = quant.Q8_0 }, true},
		{"q4_0", func(c *compute.KVConfig) { c.ColdType = quant.Q4_0 }, true},
		{"q4_k cold", func(c *compute.KVConfig) { c.ColdType = quant.Q4_K }, false},
		{"f32 hot", func(c *compute.KVConfig) { c.ColdType, c.Type = quant.Q8_0, quant.F32 }, false},
		{"head size 48", func(c *compute.KVConfig) { c.ColdType, c.HeadDim = quant.Q8_0, 48 }, false},
	} {
		cfg := base
		tc.edit(&cfg)
		if _, err := b.NewKVStore(cfg); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

// BenchmarkAttendDecode is one decode step's attention (6 query heads, 2
// KV heads of 64, 2048 positions) over an f16 cache and over one whose
// blocks are all in the cold tier.
func BenchmarkAttendDecode(b *testing.B) { benchAttendOverPrefix(b, 2048, 1) }

// TestColdTierStoreTakesDefaultArithmetic: in the default mode a store
// with a cold tier attends with the same tiled arithmetic as one without:
// over blocks that are all hot, prompts, decode steps and tree spans give
// the same bits. It took the per-key flash path for every position (the
// tiled kernel read only transposed keys), which was 1.5-2.3 times
// slower on prompts over a long context and scored unlike f16 with
// nothing quantized (soak S).
func TestColdTierStoreTakesDefaultArithmetic(t *testing.T) {
	const bs, hd, heads, kvHeads, n = 16, 64, 4, 2, 150
	b := New(Options{Threads: 2})
	defer b.Close()
	a := compute.Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: 0.125, Layer: 0}
	blocks := make([]int32, (n+8+bs-1)/bs)
	for i := range blocks {
		blocks[i] = int32(i)
	}
	r := rand.New(rand.NewPCG(7, 8))
	prompt := [3][]float32{randRows(r, n, heads*hd), randRows(r, n, kvHeads*hd), randRows(r, n, kvHeads*hd)}
	step := [3][]float32{randRows(r, 1, heads*hd), randRows(r, 1, kvHeads*hd), randRows(r, 1, kvHeads*hd)}
	tree := [3][]float32{randRows(r, 3, heads*hd), randRows(r, 3, kvHeads*hd), randRows(r, 3, kvHeads*hd)}
	run := func(cold quant.Type) [][]float32 {
		cfg := compute.KVConfig{Layers: 1, Blocks: len(blocks), BlockSize: bs, KVHeads: kvHeads, HeadDim: hd, Type: quant.F16}
		if cold != 0 {
			cfg.ColdType, cfg.ColdBlocks = cold, 4
		}
		st, err := b.NewKVStore(cfg)
		if err != nil {
			t.Fatal(err)
		}
		up := func(v []float32, rows, cols int) compute.Tensor { x := b.New(rows, cols); b.Upload(x, v); return x }
		attend := func(x [3][]float32, rows, pos int, tr []int32) []float32 {
			dst := b.New(rows, heads*hd)
			b.Attend(dst, up(x[0], rows, heads*hd), up(x[1], rows, kvHeads*hd), up(x[2], rows, kvHeads*hd), st,
				[]compute.Span{{N: rows, Pos: pos, Blocks: blocks, Tree: tr}}, a)
			return append([]float32(nil), F32(dst)...)
		}
		return [][]float32{attend(prompt, n, 0, nil), attend(step, 1, n, nil), attend(tree, 3, n+1, []int32{-1, 0, 0})}
	}
	want := run(0)
	for _, cold := range []quant.Type{quant.Q8_0, quant.Q4_0} {
		got := run(cold)
		for c, name := range []string{"prompt", "decode step", "tree"} {
			for i := range want[c] {
				if math.Float32bits(got[c][i]) != math.Float32bits(want[c][i]) {
					t.Fatalf("%s cold tier, %s, element %d: %v, without a cold tier %v", cold, name, i, got[c][i], want[c][i])
				}
			}
		}
	}
}

// BenchmarkAttendPrompt is a 512-token prompt attending over a cached
// prefix of 1536 positions (6 heads / 2 KV heads of 64, one layer), the
// prefix in f16 or, for q8_0 and q4_0, in the cold tier: the cost of a
// new question over a long cached document.
func BenchmarkAttendPrompt(b *testing.B) { benchAttendOverPrefix(b, 1536, 512) }

// benchAttendOverPrefix times n query rows attending over a cached prefix
// of prefix positions (6 heads / 2 KV heads of 64, one layer), the prefix
// in f16 or, for q8_0 and q4_0, in the cold tier.
func benchAttendOverPrefix(b *testing.B, prefix, n int) {
	for _, typ := range []quant.Type{0, quant.Q8_0, quant.Q4_0} {
		name := "f16"
		if typ != 0 {
			name = typ.String()
		}
		b.Run(name, func(b *testing.B) {
			const bs, hd, heads, kvHeads = 16, 64, 6, 2
			be := New(Options{Threads: 2})
			defer be.Close()
			nb := (prefix + n + bs - 1) / bs
			cfg := compute.KVConfig{Layers: 1, Blocks: nb, BlockSize: bs, KVHeads: kvHeads, HeadDim: hd, Type: quant.F16}
			if typ != 0 {
				cfg.ColdType, cfg.ColdBlocks = typ, prefix/bs
			}
			st, err := be.NewKVStore(cfg)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			a := compute.Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: 0.125}
			blocks := make([]int32, nb)
			for i := range blocks {
				blocks[i] = int32(i)
			}
			up := func(v []float32, rows, cols int) compute.Tensor { x := be.New(rows, cols); be.Upload(x, v); return x }
			be.Attend(be.New(prefix, heads*hd), up(randRows(r, prefix, heads*hd), prefix, heads*hd), up(randRows(r, prefix, kvHeads*hd), prefix, kvHeads*hd),
				up(randRows(r, prefix, kvHeads*hd), prefix, kvHeads*hd), st, []compute.Span{{N: prefix, Blocks: blocks}}, a)
			if typ != 0 {
				for i := 0; i < prefix/bs; i++ {
					st.(compute.TieredKV).DemoteBlock(int32(cfg.Blocks+i), int32(i))
					blocks[i] = int32(cfg.Blocks + i)
				}
			}
			q, k, v, dst := up(randRows(r, n, heads*hd), n, heads*hd), up(randRows(r, n, kvHeads*hd), n, kvHeads*hd), up(randRows(r, n, kvHeads*hd), n, kvHeads*hd), be.New(n, heads*hd)
			sp := []compute.Span{{N: n, Pos: prefix, Blocks: blocks}}
			b.ResetTimer()
			for range b.N {
				be.Attend(dst, q, k, v, st, sp, a)
			}
		})
	}
}
