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

// TestAttendChunkingBitExact runs the same attention three ways: a whole
// prompt in one Attend call (chunks of attendChunk tokens per item), one
// token per call (decode), and two sequences batched in one call; all
// must agree bit for bit, and with a float64 reference within the
// rounding of the KV type. Shapes cover GQA, head sizes that are not a
// multiple of the vector width, sliding windows and soft-capping, in both
// arithmetic modes.
func TestAttendChunkingBitExact(t *testing.T) {
	for _, exact := range []bool{true, false} {
		testAttendChunkingBitExact(t, exact)
	}
}

func testAttendChunkingBitExact(t *testing.T, exact bool) {
	for _, tc := range []struct {
		kvType             quant.Type
		heads, kvHeads, hd int
		window             int
		softcap            float32
		tol                float64
		n                  int // tokens (45 when 0)
	}{
		{quant.F32, 4, 2, 64, 0, 0, 1e-5, 0},
		{quant.F16, 4, 2, 64, 0, 0, 5e-3, 0}, // f16 keys, values and output accumulator
		{quant.F32, 2, 1, 20, 7, 0, 1e-5, 0},
		{quant.F16, 3, 3, 36, 19, 30, 5e-3, 0},
		{quant.F16, 6, 2, 32, 0, 0, 5e-3, 150},  // three tiles of keys
		{quant.F16, 4, 1, 64, 90, 0, 5e-3, 200}, // a window across tiles
		{quant.F32, 2, 2, 16, 70, 25, 1e-5, 140},
	} {
		t.Run(fmt.Sprintf("exact=%v/%s/h%d-kv%d-hd%d-w%d-cap%g", exact, tc.kvType, tc.heads, tc.kvHeads, tc.hd, tc.window, tc.softcap), func(t *testing.T) {
			const bs = 16
			n := tc.n
			if n == 0 {
				n = 45
			}
			nblk := (n + bs - 1) / bs
			r := rand.New(rand.NewPCG(uint64(tc.hd), uint64(tc.heads)))
			// Block tables: a sequence's blocks are some of the store's
			// 3·nblk in a random order; part k of a permutation (k < 3) never
			// shares a block with another part of it.
			table := func(seed uint64, part int) []int32 {
				p := rand.New(rand.NewPCG(seed, 1)).Perm(3 * nblk)
				out := make([]int32, nblk)
				for i := range out {
					out[i] = int32(p[part*nblk+i])
				}
				return out
			}
			b := New(Options{Threads: 2, Exact: exact})
			defer b.Close()
			a := compute.Attention{Heads: tc.heads, KVHeads: tc.kvHeads, HeadDim: tc.hd,
				Scale: float32(1 / math.Sqrt(float64(tc.hd))), Softcap: tc.softcap, Window: tc.window}
			qv := randRows(r, n, tc.heads*tc.hd)
			kv := randRows(r, n, tc.kvHeads*tc.hd)
			vv := randRows(r, n, tc.kvHeads*tc.hd)
			cfg := compute.KVConfig{Layers: 1, Blocks: 3 * nblk, BlockSize: bs, KVHeads: tc.kvHeads, HeadDim: tc.hd, Type: tc.kvType}
			tensor := func(v []float32, rows, cols int) compute.Tensor {
				x := b.New(rows, cols)
				b.Upload(x, v)
				return x
			}
			run := func(blocks []int32, calls [][2]int) []float32 {
				store, err := b.NewKVStore(cfg)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]float32, n*tc.heads*tc.hd)
				for _, c := range calls { // tokens [c[0], c[1])
					m := c[1] - c[0]
					q := tensor(qv[c[0]*tc.heads*tc.hd:c[1]*tc.heads*tc.hd], m, tc.heads*tc.hd)
					k := tensor(kv[c[0]*tc.kvHeads*tc.hd:c[1]*tc.kvHeads*tc.hd], m, tc.kvHeads*tc.hd)
					v := tensor(vv[c[0]*tc.kvHeads*tc.hd:c[1]*tc.kvHeads*tc.hd], m, tc.kvHeads*tc.hd)
					dst := b.New(m, tc.heads*tc.hd)
					b.Attend(dst, q, k, v, store, []compute.Span{{Row: 0, N: m, Pos: c[0], Blocks: blocks}}, a)
					copy(out[c[0]*tc.heads*tc.hd:], F32(dst))
				}
				return out
			}
			blocks := table(1, 0)
			whole := run(blocks, [][2]int{{0, n}})
			var steps [][2]int
			for i := range n {
				steps = append(steps, [2]int{i, i + 1})
			}
			decode := run(table(2, 0), steps)
			uneven := run(blocks, [][2]int{{0, 3}, {3, 20}, {20, 21}, {21, n}})
			for i := range whole {
				if math.Float32bits(whole[i]) != math.Float32bits(decode[i]) || math.Float32bits(whole[i]) != math.Float32bits(uneven[i]) {
					t.Fatalf("element %d (token %d): whole prompt %v, one token per call %v, uneven calls %v",
						i, i/(tc.heads*tc.hd), whole[i], decode[i], uneven[i])
				}
			}

			// Two sequences in one call: the second a copy of the first
			// token's K/V history, at its own blocks.
			store, err := b.NewKVStore(cfg)
			if err != nil {
				t.Fatal(err)
			}
			half := n / 2
			q := tensor(append(append([]float32(nil), qv[:half*tc.heads*tc.hd]...), qv[:half*tc.heads*tc.hd]...), 2*half, tc.heads*tc.hd)
			k := tensor(append(append([]float32(nil), kv[:half*tc.kvHeads*tc.hd]...), kv[:half*tc.kvHeads*tc.hd]...), 2*half, tc.kvHeads*tc.hd)
			v := tensor(append(append([]float32(nil), vv[:half*tc.kvHeads*tc.hd]...), vv[:half*tc.kvHeads*tc.hd]...), 2*half, tc.kvHeads*tc.hd)
			dst := b.New(2*half, tc.heads*tc.hd)
			b.Attend(dst, q, k, v, store, []compute.Span{
				{Row: 0, N: half, Pos: 0, Blocks: blocks[:(half+bs-1)/bs]},
				{Row: half, N: half, Pos: 0, Blocks: table(1, 1)[:(half+bs-1)/bs]},
			}, a)
			got := F32(dst)
			for i := range half * tc.heads * tc.hd {
				if got[i] != whole[i] || got[half*tc.heads*tc.hd+i] != whole[i] {
					t.Fatalf("batched sequences: element %d = %v and %v, want %v", i, got[i], got[half*tc.heads*tc.hd+i], whole[i])
				}
			}

			// A float64 reference.
			round := func(x float32) float64 {
				if tc.kvType == quant.F16 {
					return float64(quant.FP16ToFP32(quant.FP32ToFP16(x)))
				}
				return float64(x)
			}
			var maxDiff float64
			for i := range n {
				for h := range tc.heads {
					kh := h / (tc.heads / tc.kvHeads)
					first := 0
					if tc.window > 0 {
						first = max(0, i-tc.window+1)
					}
					scores := make([]float64, i-first+1)
					best := math.Inf(-1)
					for tk := first; tk <= i; tk++ {
						var dot float64
						for e := range tc.hd {
							dot += round(qv[i*tc.heads*tc.hd+h*tc.hd+e]) * round(kv[tk*tc.kvHeads*tc.hd+kh*tc.hd+e])
						}
						s := dot * float64(a.Scale)
						if tc.softcap > 0 {
							s = float64(tc.softcap) * math.Tanh(s/float64(tc.softcap))
						}
						scores[tk-first] = s
						best = max(best, s)
					}
					var sum float64
					for j := range scores {
						scores[j] = math.Exp(scores[j] - best)
						sum += scores[j]
					}
					for e := range tc.hd {
						var o float64
						for tk := first; tk <= i; tk++ {
							o += scores[tk-first] / sum * round(vv[tk*tc.kvHeads*tc.hd+kh*tc.hd+e])
						}
						maxDiff = max(maxDiff, math.Abs(o-float64(whole[i*tc.heads*tc.hd+h*tc.hd+e])))
					}
				}
			}
			if maxDiff > tc.tol {
				t.Errorf("max |engine - float64 reference| = %.3g, tolerance %.1g", maxDiff, tc.tol)
			}
		})
	}
}

// TestKVStoreMemory checks the store's memory outside the Go heap: blocks
// start zeroed, a block written reads back as written, and the element
// type (BlockBytes) holds for every size, an empty store included.
func TestKVStoreMemory(t *testing.T) {
	b := New(Options{Threads: 1})
	defer b.Close()
	for _, tc := range []struct {
		typ    quant.Type
		blocks int
		elem   int
	}{
		{quant.F16, 0, 2}, {quant.F16, 3, 2}, {quant.F32, 0, 4}, {quant.F32, 300, 4},
	} {
		cfg := compute.KVConfig{Layers: 2, Blocks: tc.blocks, BlockSize: 16, KVHeads: 2, HeadDim: 64, Type: tc.typ}
		st, err := b.NewKVStore(cfg)
		if err != nil {
			t.Fatalf("%s, %d blocks: %v", tc.typ, tc.blocks, err)
		}
		want := 2 * cfg.Layers * cfg.BlockSize * cfg.KVHeads * cfg.HeadDim * tc.elem
		if got := st.BlockBytes(); got != want {
			t.Fatalf("%s, %d blocks: BlockBytes %d, want %d", tc.typ, tc.blocks, got, want)
		}
		if tc.blocks == 0 {
			continue
		}
		buf := make([]byte, want)
		for _, id := range []int32{0, int32(tc.blocks - 1)} {
			if err := st.ReadBlock(id, buf); err != nil {
				t.Fatal(err)
			}
			for i, c := range buf {
				if c != 0 {
					t.Fatalf("%s block %d: byte %d is %d before any write", tc.typ, id, i, c)
				}
			}
		}
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		last := int32(tc.blocks - 1)
		if err := st.WriteBlock(last, buf); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, want)
		if err := st.ReadBlock(last, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, buf) {
			t.Fatalf("%s block %d: read back differs from what was written", tc.typ, last)
		}
	}
}
