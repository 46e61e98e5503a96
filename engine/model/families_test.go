package model

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// randomTokens returns n token ids below vocab from a fixed seed.
func randomTokens(n, vocab int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(vocab))
	}
	return out
}

// TestRopeExtensionsMatchReference runs each context extension on a
// synthetic model at positions well past its original context and checks
// the logits against the float64 reference, which computes the scaled
// frequencies from the extension's definition (Meta's llama3 rule, YaRN's
// ramp and magnitude, LongRoPE's factors) rather than from the file.
func TestRopeExtensionsMatchReference(t *testing.T) {
	tokens := randomTokens(160, 256, 3)
	for _, tc := range []struct {
		name string
		o    testmodel.Options
		ctx  int // the engine's context (LongRoPE's choice)
	}{
		{"llama/llama3", testmodel.Options{Arch: "llama", RopeScaling: "llama3", RopeFactor: 8, RopeOrigCtx: 16}, 0},
		{"qwen2/linear", testmodel.Options{Arch: "qwen2", RopeScaling: "linear", RopeFactor: 4}, 0},
		{"qwen2/yarn", testmodel.Options{Arch: "qwen2", RopeScaling: "yarn", RopeFactor: 4, RopeOrigCtx: 16}, 0},
		// A low base and wide heads put YaRN's ramp across several
		// dimensions at this small original context; the file's
		// attn_factor multiplies YaRN's own magnitude, as in llama.cpp.
		{"qwen3/yarn-ramp", testmodel.Options{Arch: "qwen3", HeadDim: 32, RopeBase: 100, RopeScaling: "yarn", RopeFactor: 4, RopeOrigCtx: 32, RopeAttnFactor: 1.25}, 0},
		// LongRoPE's long factors apply to every position of a context
		// longer than the original; the sequence stays within 160.
		{"phi3/longrope-long", testmodel.Options{Arch: "phi3", ContextLength: 1024, RopeScaling: "longrope", RopeFactor: 6, RopeOrigCtx: 256}, 512},
		{"phi3/longrope-short", testmodel.Options{Arch: "phi3", ContextLength: 1024, RopeScaling: "longrope", RopeFactor: 6, RopeOrigCtx: 256}, 256},
		{"gemma3/linear", testmodel.Options{Arch: "gemma3", HeadDim: 32, RopeBase: 1e6, RopeScaling: "linear", RopeFactor: 8, SWAPattern: 2, SlidingWindow: 6}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.Seed = 2, 64, 4, 2, 128, 5
			if o.ContextLength == 0 {
				o.ContextLength = 512
			}
			f := writeModel(t, o)
			want := newRef(t, f, o, tc.ctx).logits(tokens)
			got := engineRun(t, f, tokens, quant.F32, runOptions{ctx: tc.ctx})
			compareLogits(t, got, want, 1e-4)
		})
	}
}

// TestLongRoPEChoosesByContext checks where LongRoPE switches: the long
// factors once the context, rounded up to a multiple of 256 as llama.cpp
// rounds it, exceeds the original context; the short ones up to it and
// before SizeContext is called. It also checks that the two choices give
// different logits, so the test above tells them apart.
func TestLongRoPEChoosesByContext(t *testing.T) {
	tokens := randomTokens(40, 256, 4)
	for _, tc := range []struct {
		orig        int
		short, long []int // contexts that take each
	}{
		{256, []int{1, 200, 256}, []int{257, 512}},
		{300, []int{256}, []int{257, 300, 512}}, // 257..300 round up to 512
	} {
		o := testmodel.Options{Arch: "phi3", ContextLength: 1024, RopeScaling: "longrope", RopeFactor: 6, RopeOrigCtx: tc.orig, Seed: 5}
		f := writeModel(t, o)
		short := engineRun(t, f, tokens, quant.F32, runOptions{})
		long := engineRun(t, f, tokens, quant.F32, runOptions{ctx: 4096})
		var diff float64
		for p := range short {
			for i := range short[p] {
				diff = math.Max(diff, math.Abs(float64(short[p][i]-long[p][i])))
			}
		}
		if diff < 1e-2 {
			t.Fatalf("long and short factors give logits within %.3g of each other", diff)
		}
		for _, c := range []struct {
			ctxs []int
			want [][]float32
		}{{tc.short, short}, {tc.long, long}} {
			for _, n := range c.ctxs {
				got := engineRun(t, f, tokens, quant.F32, runOptions{ctx: n})
				for p := range got {
					for i := range got[p] {
						if got[p][i] != c.want[p][i] {
							t.Fatalf("original %d, context %d: position %d takes the other factors", tc.orig, n, p)
						}
					}
				}
			}
		}
	}
}

// noViews hides the CPU backend's optional interfaces (views, fused
// products), as a backend without them would present itself.
type noViews struct{ compute.Backend }

// TestFamiliesWithoutViews runs the families that use views through a
// backend without them: per-head norms take the host round trip, and the
// experts run one by one on tensors of their own.
func TestFamiliesWithoutViews(t *testing.T) {
	tokens := []int32{1, 17, 200, 45, 99, 3, 250, 64, 7, 180, 33, 2, 90, 141}
	for _, arch := range []string{"qwen3", "gemma3", "qwen2moe", "qwen3moe", "llama-moe"} {
		t.Run(arch, func(t *testing.T) {
			o := familyOptions(arch)
			o.SlidingWindow, o.SWAPattern = 6, 2
			f := writeModel(t, o)
			want := newRef(t, f, o, 0).logits(tokens)
			got := engineRun(t, f, tokens, quant.F32, runOptions{wrap: func(b compute.Backend) compute.Backend { return noViews{b} }})
			compareLogits(t, got, want, 1e-4)
		})
	}
}

// TestMoEBatchedDecode decodes several sequences in one batch, the way the
// scheduler does, so rows of different sequences share experts in one
// forward pass; each sequence's logits must match its own reference.
func TestMoEBatchedDecode(t *testing.T) {
	for _, arch := range []string{"qwen2moe", "qwen3moe", "llama-moe"} {
		t.Run(arch, func(t *testing.T) {
			o := familyOptions(arch)
			o.Experts, o.ExpertsUsed = 8, 3 // three outputs per row: the summation order matters
			if arch == "llama-moe" {
				o.Seed = 7
			}
			f := writeModel(t, o)
			b := cpu.New(cpu.Options{Threads: 2})
			defer b.Close()
			m, err := Load(f, b)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config()
			if c.Experts != 8 || c.ExpertsUsed != 3 {
				t.Fatalf("config has %d experts, %d used", c.Experts, c.ExpertsUsed)
			}
			store, err := b.NewKVStore(compute.KVConfig{Layers: c.Layers, Blocks: 12, BlockSize: 16, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Type: quant.F32})
			if err != nil {
				t.Fatal(err)
			}
			const seqs, steps = 3, 6
			prompts := make([][]int32, seqs)
			for s := range prompts {
				prompts[s] = randomTokens(4+3*s+steps, c.Vocab, uint64(10+s))
			}
			tables := [][]int32{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}
			got := make([][][]float32, seqs)
			// Prefill each prompt but its last steps tokens, all in one
			// batch; then decode one token of every sequence per pass.
			var batch Batch
			pos := make([]int, seqs)
			for s := range prompts {
				n := len(prompts[s]) - steps
				batch.Spans = append(batch.Spans, compute.Span{Row: len(batch.Tokens), N: n, Blocks: tables[s]})
				batch.Tokens = append(batch.Tokens, prompts[s][:n]...)
				pos[s] = n
			}
			collect := func(batch *Batch) {
				h := m.Forward(batch, store)
				rows := make([]int32, len(batch.Tokens))
				for i := range rows {
					rows[i] = int32(i)
				}
				all := make([]float32, len(rows)*c.Vocab)
				b.Download(m.Logits(h, rows), all)
				for s, sp := range batch.Spans {
					for i := 0; i < sp.N; i++ {
						r := sp.Row + i
						got[s] = append(got[s], all[r*c.Vocab:(r+1)*c.Vocab])
					}
				}
			}
			collect(&batch)
			for step := 0; step < steps; step++ {
				var d Batch
				for s := range prompts {
					d.Spans = append(d.Spans, compute.Span{Row: s, N: 1, Pos: pos[s], Blocks: tables[s]})
					d.Tokens = append(d.Tokens, prompts[s][pos[s]])
					pos[s]++
				}
				collect(&d)
			}
			for s := range prompts {
				ref := newRef(t, f, o, 0)
				want := ref.logits(prompts[s])
				checkMargin(t, ref, quant.F32)
				compareLogits(t, got[s], want, 1e-4)
			}
		})
	}
}

// TestRoute checks the routing plan on hand-made router logits: the
// chosen experts, their weights with and without renormalisation, and
// the grouping of rows by expert.
func TestRoute(t *testing.T) {
	logits := []float32{
		0, 1, 2, 3, // row 0: experts 3, 2
		5, 0, 0, 4, // row 1: experts 0, 3
		1, 1, 0, 0, // row 2: a tie, the lower index first: 0, 1
	}
	for _, normalize := range []bool{false, true} {
		mc := &moeConfig{experts: 4, used: 2, normalize: normalize}
		st := &moeState{
			probs: append([]float32(nil), logits...), chosen: make([]int32, 6), weights: make([]float32, 6),
			slotW: make([]float32, 6), sortedW: make([]float32, 6), taken: make([]bool, 4),
			count: make([]int, 4), start: make([]int, 5), rows: make([]int32, 6), at: make([]int32, 6),
		}
		st.route(3, mc)
		wantChosen := []int32{3, 2, 0, 3, 0, 1}
		for i, e := range wantChosen {
			if st.chosen[i] != e {
				t.Fatalf("normalize %v: chosen %v, want %v", normalize, st.chosen, wantChosen)
			}
		}
		for r := 0; r < 3; r++ {
			row := logits[r*4 : r*4+4]
			var sum float64
			for _, v := range row {
				sum += math.Exp(float64(v))
			}
			var wsum float64
			for j := 0; j < 2; j++ {
				wsum += math.Exp(float64(row[st.chosen[r*2+j]])) / sum
			}
			for j := 0; j < 2; j++ {
				want := math.Exp(float64(row[st.chosen[r*2+j]])) / sum
				if normalize {
					want /= wsum
				}
				if got := float64(st.weights[r*2+j]); math.Abs(got-want) > 1e-6 {
					t.Errorf("normalize %v: row %d choice %d weight %v, want %v", normalize, r, j, got, want)
				}
			}
		}
		// Grouped: expert 0 has rows 1 and 2, expert 1 row 2, expert 2
		// row 0, expert 3 rows 0 and 1.
		wantRows := []int32{1, 2, 2, 0, 0, 1}
		wantStart := []int{0, 2, 3, 4, 6}
		for i := range wantRows {
			if st.rows[i] != wantRows[i] {
				t.Fatalf("rows %v, want %v", st.rows, wantRows)
			}
		}
		for i := range wantStart {
			if st.start[i] != wantStart[i] {
				t.Fatalf("start %v, want %v", st.start, wantStart)
			}
		}
		// at[j·n+t] points at row t in the grouped order, under the
		// expert of its j-th choice.
		for tk := 0; tk < 3; tk++ {
			for j := 0; j < 2; j++ {
				p := st.at[j*3+tk]
				e := int(st.chosen[tk*2+j])
				if st.rows[p] != int32(tk) || int(p) < st.start[e] || int(p) >= st.start[e+1] {
					t.Fatalf("at[%d] = %d: not row %d under expert %d", j*3+tk, p, tk, e)
				}
				if st.sortedW[p] != st.weights[tk*2+j] || st.slotW[j*3+tk] != st.weights[tk*2+j] {
					t.Fatalf("weights out of place for row %d choice %d", tk, j)
				}
			}
		}
	}
}

// rewrite copies f into a new file with the metadata keys in set replaced
// or added, and the tensors in data given new contents, and opens it.
func rewrite(t *testing.T, f *gguf.File, set map[string]any, data map[string][]byte) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if v, ok := set[kv.Key]; ok {
			if err := w.AddKV(kv.Key, v); err != nil {
				t.Fatal(err)
			}
			delete(set, kv.Key)
			continue
		}
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range set {
		if err := w.AddKV(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, ti := range f.Tensors {
		d, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if nd, ok := data[ti.Name]; ok {
			d = nd
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape, d); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "rewritten.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestMetadataBounds checks that out-of-range numbers in the metadata of
// the new families fail the load with an error naming the key, before
// they size anything.
func TestMetadataBounds(t *testing.T) {
	f32 := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		if err := quant.Quantize(quant.F32, b, v); err != nil {
			t.Fatal(err)
		}
		return b
	}
	badFreqs := make([]float32, 8)
	for i := range badFreqs {
		badFreqs[i] = 1
	}
	badFreqs[3] = 0
	for _, tc := range []struct {
		name string
		o    testmodel.Options
		set  map[string]any
		data map[string][]byte
		want string
	}{
		{"no experts", testmodel.Options{Arch: "qwen3moe"}, map[string]any{"qwen3moe.expert_count": uint32(0)}, nil, "expert_count"},
		{"too many experts", testmodel.Options{Arch: "qwen3moe"}, map[string]any{"qwen3moe.expert_count": uint32(1 << 20)}, nil, "expert_count"},
		{"more used than experts", testmodel.Options{Arch: "qwen2moe"}, map[string]any{"qwen2moe.expert_used_count": uint32(5)}, nil, "expert_used_count"},
		{"no used count", testmodel.Options{Arch: "llama", Experts: 4, ExpertsUsed: 2}, map[string]any{"llama.expert_used_count": uint32(0)}, nil, "expert_used_count"},
		{"huge expert width", testmodel.Options{Arch: "qwen3moe"}, map[string]any{"qwen3moe.expert_feed_forward_length": uint32(1 << 30)}, nil, "expert_feed_forward_length"},
		{"huge shared width", testmodel.Options{Arch: "qwen2moe"}, map[string]any{"qwen2moe.expert_shared_feed_forward_length": uint32(1 << 30)}, nil, "expert_shared_feed_forward_length"},
		{"wrong expert width", testmodel.Options{Arch: "qwen3moe"}, map[string]any{"qwen3moe.expert_feed_forward_length": uint32(96)}, nil, "ffn_gate_exps"},
		{"huge head", testmodel.Options{Arch: "qwen3"}, map[string]any{"qwen3.attention.key_length": uint32(1 << 16)}, nil, "key_length"},
		{"values not keys", testmodel.Options{Arch: "gemma3"}, map[string]any{"gemma3.attention.value_length": uint32(8)}, nil, "value_length"},
		{"odd rope dims", testmodel.Options{Arch: "qwen3"}, map[string]any{"qwen3.rope.dimension_count": uint32(15)}, nil, "rope.dimension_count"},
		{"pattern length", testmodel.Options{Arch: "gemma3"}, map[string]any{"gemma3.attention.sliding_window_pattern": []bool{true}}, nil, "sliding_window_pattern"},
		{"huge window", testmodel.Options{Arch: "gemma3"}, map[string]any{"gemma3.attention.sliding_window": uint32(1 << 30)}, nil, "sliding_window"},
		{"local base", testmodel.Options{Arch: "gemma3"}, map[string]any{"gemma3.rope.freq_base_swa": float32(math.NaN())}, nil, "freq_base_swa"},
		{"softcap", testmodel.Options{Arch: "gemma3"}, map[string]any{"gemma3.final_logit_softcapping": float32(math.Inf(1))}, nil, "final_logit_softcapping"},
		{"base", testmodel.Options{Arch: "llama"}, map[string]any{"llama.rope.freq_base": float32(0.5)}, nil, "freq_base"},
		{"negative factor", testmodel.Options{Arch: "qwen2", RopeScaling: "linear"}, map[string]any{"qwen2.rope.scaling.factor": float32(-2)}, nil, "rope.scaling.factor"},
		{"NaN factor", testmodel.Options{Arch: "qwen2", RopeScaling: "yarn"}, map[string]any{"qwen2.rope.scaling.factor": float32(math.NaN())}, nil, "rope.scaling.factor"},
		{"original context", testmodel.Options{Arch: "qwen2", RopeScaling: "yarn"}, map[string]any{"qwen2.rope.scaling.original_context_length": uint32(0)}, nil, "original_context_length"},
		{"attn factor", testmodel.Options{Arch: "phi3", RopeScaling: "longrope"}, map[string]any{"phi3.rope.scaling.attn_factor": float32(1e9)}, nil, "attn_factor"},
		{"llama3 type", testmodel.Options{Arch: "llama"}, map[string]any{"llama.rope.scaling.type": "llama3"}, nil, "llama3"},
		{"zero frequency factor", testmodel.Options{Arch: "llama", RopeScaling: "llama3"}, nil, map[string][]byte{"rope_freqs.weight": f32(badFreqs...)}, "rope_freqs.weight[3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Seed = 1
			f := rewrite(t, writeModel(t, o), tc.set, tc.data)
			b := cpu.New(cpu.Options{Threads: 1})
			defer b.Close()
			_, err := Load(f, b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	// The unmodified files load.
	for _, o := range []testmodel.Options{{Arch: "qwen3moe"}, {Arch: "gemma3"}, {Arch: "llama", RopeScaling: "llama3"}, {Arch: "phi3", RopeScaling: "longrope"}} {
		b := cpu.New(cpu.Options{Threads: 1})
		if _, err := Load(writeModel(t, o), b); err != nil {
			t.Errorf("%s/%s: %v", o.Arch, o.RopeScaling, err)
		}
		b.Close()
	}
}

// TestYarnAttnFactor checks the float32 attention factor against the
// exact value it approximates, 1: llama.cpp multiplies YaRN's magnitude
// scale by its own inverse.
func TestYarnAttnFactor(t *testing.T) {
	for _, f := range []float32{1, 2, 4, 8, 32, 40} {
		got := yarnAttnFactor(1 / f)
		if math.Abs(float64(got)-1) > 2e-7 {
			t.Errorf("factor %g: %v, want 1 within float32 rounding", f, got)
		}
	}
}

// FuzzNewFamilyMetadata loads files of the new families with fuzzed
// metadata numbers (experts, widths, head size, window and pattern, rope
// scaling): the load must fail with an error or give a model whose
// forward pass runs; it must never panic or size memory from a number it
// has not bounded.
func FuzzNewFamilyMetadata(f *testing.F) {
	arches := []string{"qwen3moe", "qwen2moe", "gemma3", "qwen3", "llama", "phi3"}
	scalings := []string{"none", "linear", "yarn", "longrope"}
	f.Add(uint8(0), uint8(2), uint32(4), uint32(2), uint32(64), uint32(16), uint32(6), uint32(2), float32(4), uint32(8))
	f.Add(uint8(1), uint8(0), uint32(4), uint32(2), uint32(64), uint32(16), uint32(6), uint32(2), float32(4), uint32(8))
	f.Add(uint8(2), uint8(1), uint32(0), uint32(0), uint32(64), uint32(16), uint32(3), uint32(0), float32(8), uint32(8))
	f.Add(uint8(3), uint8(2), uint32(0), uint32(0), uint32(64), uint32(1<<31), uint32(1<<31), uint32(1<<31), float32(-1), uint32(0))
	f.Add(uint8(4), uint8(3), uint32(1<<30), uint32(1<<30), uint32(1<<30), uint32(16), uint32(0), uint32(0), float32(1e30), uint32(1<<30))
	f.Add(uint8(5), uint8(3), uint32(0), uint32(0), uint32(0), uint32(16), uint32(0), uint32(0), float32(4), uint32(16))
	dir := f.TempDir()
	bases := map[string]*gguf.File{}
	f.Cleanup(func() {
		for _, b := range bases {
			b.Close()
		}
	})
	f.Fuzz(func(t *testing.T, archIdx, scaleIdx uint8, experts, used, expertFF, keyLen, window, pattern uint32, factor float32, orig uint32) {
		arch := arches[int(archIdx)%len(arches)]
		base := bases[arch]
		if base == nil {
			path := filepath.Join(dir, arch+".gguf")
			if err := testmodel.Write(context.Background(), testmodel.Options{Arch: arch, Seed: 1}, path); err != nil {
				t.Fatal(err)
			}
			var err error
			if base, err = gguf.Open(path); err != nil {
				t.Fatal(err)
			}
			bases[arch] = base
		}
		a := arch + "."
		set := map[string]any{
			a + "attention.key_length": keyLen, a + "attention.value_length": keyLen,
			a + "rope.scaling.type": scalings[int(scaleIdx)%len(scalings)], a + "rope.scaling.factor": factor,
			a + "rope.scaling.original_context_length": orig,
		}
		if arch == "gemma3" {
			set[a+"attention.sliding_window"], set[a+"attention.sliding_window_pattern"] = window, pattern
		}
		if experts != 0 || arch != "llama" {
			set[a+"expert_count"], set[a+"expert_used_count"], set[a+"expert_feed_forward_length"] = experts, used, expertFF
		}
		g := rewrite(t, base, set, nil)
		b := cpu.New(cpu.Options{Threads: 1})
		_, err := Load(g, b)
		b.Close()
		if err != nil {
			return
		}
		engineRun(t, g, []int32{1, 2, 3}, quant.F32, runOptions{ctx: 64})
	})
}
