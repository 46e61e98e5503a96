// Package testmodel generates deterministic random-weight GGUF models
// (llama with or without experts, qwen2, qwen2moe, qwen3, qwen3moe, phi3,
// gemma2, gemma3, with the rope context extensions real models use) with
// llama.cpp's tensor names and metadata keys, for tests and benchmarks that need a model of a given shape without
// a model hub. Weights are streamed into the file tensor by tensor, so
// models of several GB never need to be held in memory.
package testmodel

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// Options describe the model to generate. Zero fields take the values of
// DefaultOptions.
type Options struct {
	Arch          string // one of Arches
	Layers        int
	Dim           int // embedding size
	Heads         int
	KVHeads       int // 0: same as Heads
	FF            int // feed-forward size
	ContextLength int
	// HeadDim is the key/value head size (attention.key_length); 0 means
	// Dim/Heads. Qwen3 and Gemma 3 have heads of their own size.
	HeadDim int
	// SlidingWindow is gemma2's and gemma3's local attention window (0:
	// ContextLength/2); SWAPattern is gemma3's sliding_window_pattern
	// (0: 6, every sixth layer global).
	SlidingWindow int
	SWAPattern    int
	// Experts and ExpertsUsed make a mixture-of-experts model: llama with
	// experts is the Mixtral layout (experts FF wide); qwen2moe and
	// qwen3moe (default 4 experts, 2 used) have experts ExpertFF wide
	// (default FF/2), and qwen2moe a shared expert SharedFF wide (default
	// FF).
	Experts, ExpertsUsed, ExpertFF, SharedFF int
	// RopeBase is rope.freq_base (0: 10000); RopeBaseSWA gemma3's local
	// base (0: 10000).
	RopeBase, RopeBaseSWA float64
	// RopeScaling is the context extension: "" or "none"; "linear" and
	// "yarn" (rope.scaling.type with RopeFactor, and for yarn
	// RopeOrigCtx and, when set, RopeAttnFactor); "llama3" (llama only:
	// rope_freqs.weight computed from RopeFactor, RopeLowFreq,
	// RopeHighFreq and RopeOrigCtx, as llama.cpp's converter does);
	// "longrope" (phi3 only: rope_factors_short/long.weight,
	// original_context_length RopeOrigCtx and the attention factor
	// √(1+ln(ctx/orig)/ln(orig)) of Phi-3.5). Defaults: factor 4 (llama3
	// 8), original context ContextLength/4, low/high frequency factors 1
	// and 4.
	RopeScaling                string
	RopeFactor, RopeAttnFactor float64
	RopeLowFreq, RopeHighFreq  float64
	RopeOrigCtx                int
	// Type is the element type of 2-D weight matrices (token embedding
	// included); 1-D norms and biases are always F32.
	Type quant.Type
	Seed uint64
	// VocabFrom copies every tokenizer.* key from this GGUF file; empty
	// selects the built-in byte-level BPE vocabulary (gpt2 model, 256 byte
	// tokens, a few merges, ChatML specials).
	VocabFrom string
	// Name is general.name (default "ruvllm-testmodel-<arch>").
	Name string
	// ChatTemplate, when set, replaces tokenizer.chat_template.
	ChatTemplate string
}

// DefaultOptions is the shape of a tiny llama model that builds in
// milliseconds. (Type F32 is the zero quant.Type; Seed 0 is a valid seed.)
func DefaultOptions() Options {
	return Options{
		Arch: "llama", Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, FF: 128,
		ContextLength: 512, Type: quant.F32,
	}
}

// Arches lists the supported architectures.
func Arches() []string {
	return []string{"llama", "qwen2", "phi3", "gemma2", "qwen3", "qwen3moe", "qwen2moe", "gemma3"}
}

// RopeScalings lists the values of Options.RopeScaling.
func RopeScalings() []string { return []string{"none", "linear", "yarn", "llama3", "longrope"} }

// moe reports whether o describes a mixture-of-experts model.
func (o Options) moe() bool { return o.Experts > 0 }

// qkNorm reports whether the architecture normalises q and k per head.
func (o Options) qkNorm() bool {
	return o.Arch == "qwen3" || o.Arch == "qwen3moe" || o.Arch == "gemma3"
}

// gemma reports whether the architecture is Gemma 2 or 3.
func (o Options) gemma() bool { return o.Arch == "gemma2" || o.Arch == "gemma3" }

// Normalize returns o with its defaults filled in, as New writes it, or
// an error when the shape is inconsistent. Tests that derive expected
// values from the options (reference forward passes) start from it.
func (o Options) Normalize() (Options, error) { return o.normalize() }

// Bounds of the shapes written: those engine/model's loader takes
// (model.MaxLayers and the rest; this package cannot import it, whose
// tests use this one), so that no file it writes is one ruvllm refuses.
const (
	maxLayers  = 1024
	maxDim     = 1 << 17
	maxHeads   = 1024
	maxFF      = 1 << 20
	maxContext = 1 << 24
	maxExperts = 256
)

// normalize fills defaults and checks the shape is consistent.
func (o Options) normalize() (Options, error) {
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"layers", o.Layers, maxLayers}, {"dim", o.Dim, maxDim}, {"heads", o.Heads, maxHeads}, {"kv heads", o.KVHeads, maxHeads},
		{"ff", o.FF, maxFF}, {"context length", o.ContextLength, maxContext}, {"head size", o.HeadDim, maxDim},
		{"sliding window", o.SlidingWindow, maxContext}, {"sliding window pattern", o.SWAPattern, maxLayers},
		{"experts", o.Experts, maxExperts}, {"experts used", o.ExpertsUsed, maxExperts}, {"expert ff", o.ExpertFF, maxFF},
		{"shared ff", o.SharedFF, maxFF}, {"rope original context", o.RopeOrigCtx, maxContext},
	} {
		// 0 takes the default; anything else must be a size the loader
		// takes (--swa -5 was written as 4294967291, --ctx 3000000000
		// as a file no loader reads).
		if f.v < 0 || f.v > f.max {
			return o, fmt.Errorf("testmodel: %s %d is out of range [0, %d] (0: the default)", f.name, f.v, f.max)
		}
	}
	d := DefaultOptions()
	if o.Arch == "" {
		o.Arch = d.Arch
	}
	for _, f := range []struct{ v, def *int }{
		{&o.Layers, &d.Layers}, {&o.Dim, &d.Dim}, {&o.Heads, &d.Heads}, {&o.FF, &d.FF},
		{&o.ContextLength, &d.ContextLength},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if o.KVHeads == 0 {
		o.KVHeads = o.Heads
	}
	if o.Name == "" {
		o.Name = "ruvllm-testmodel-" + o.Arch
	}
	if o.SlidingWindow == 0 {
		o.SlidingWindow = max(o.ContextLength/2, 1)
	}
	if o.SWAPattern == 0 {
		o.SWAPattern = 6
	}
	switch o.Arch {
	case "llama", "qwen2", "phi3", "gemma2", "qwen3", "gemma3":
		if o.Experts != 0 && o.Arch != "llama" {
			return o, fmt.Errorf("testmodel: %s has no experts (use llama, qwen2moe or qwen3moe)", o.Arch)
		}
	case "qwen2moe", "qwen3moe":
		if o.Experts == 0 {
			o.Experts = 4
		}
		if o.ExpertsUsed == 0 {
			o.ExpertsUsed = 2
		}
		if o.ExpertFF == 0 {
			o.ExpertFF = max(o.FF/2, 1)
		}
		if o.SharedFF == 0 && o.Arch == "qwen2moe" {
			o.SharedFF = o.FF
		}
	default:
		return o, fmt.Errorf("testmodel: unknown architecture %q (want one of %v)", o.Arch, Arches())
	}
	if o.Arch == "llama" && o.Experts > 0 {
		o.ExpertFF = o.FF
	}
	if o.Layers < 1 || o.Dim < 1 || o.Heads < 1 || o.KVHeads < 1 || o.FF < 1 || o.ContextLength < 1 || o.HeadDim < 0 {
		return o, fmt.Errorf("testmodel: sizes must be positive: %+v", o)
	}
	if o.moe() && (o.ExpertsUsed < 1 || o.ExpertsUsed > o.Experts || o.Experts > 256 || o.ExpertFF < 1) {
		return o, fmt.Errorf("testmodel: %d experts with %d used (want 1 ≤ used ≤ experts ≤ 256)", o.Experts, o.ExpertsUsed)
	}
	if o.Heads%o.KVHeads != 0 {
		return o, fmt.Errorf("testmodel: heads %d must divide by kv heads %d", o.Heads, o.KVHeads)
	}
	if o.HeadDim == 0 {
		if o.Dim%o.Heads != 0 {
			return o, fmt.Errorf("testmodel: dim %d must divide by heads %d (or set the head size)", o.Dim, o.Heads)
		}
		o.HeadDim = o.Dim / o.Heads
	}
	if o.HeadDim%2 != 0 {
		return o, fmt.Errorf("testmodel: head size %d must be even for RoPE", o.HeadDim)
	}
	if o.HeadDim != o.Dim/o.Heads && !o.qkNorm() {
		return o, fmt.Errorf("testmodel: %s needs head size dim/heads (%d)", o.Arch, o.Dim/o.Heads)
	}
	if o.RopeBase == 0 {
		o.RopeBase = 10000
	}
	if o.RopeBaseSWA == 0 {
		o.RopeBaseSWA = 10000
	}
	switch o.RopeScaling {
	case "", "none":
	case "linear", "yarn", "llama3", "longrope":
		if o.RopeFactor == 0 {
			o.RopeFactor = 4
			if o.RopeScaling == "llama3" {
				o.RopeFactor = 8
			}
		}
		if o.RopeOrigCtx == 0 {
			o.RopeOrigCtx = max(o.ContextLength/4, 1)
		}
		if o.RopeLowFreq == 0 {
			o.RopeLowFreq = 1
		}
		if o.RopeHighFreq == 0 {
			o.RopeHighFreq = 4
		}
	default:
		return o, fmt.Errorf("testmodel: unknown rope scaling %q (want one of %v)", o.RopeScaling, RopeScalings())
	}
	if o.RopeScaling == "llama3" && o.Arch != "llama" || o.RopeScaling == "longrope" && o.Arch != "phi3" {
		return o, fmt.Errorf("testmodel: rope scaling %s is for %s files", o.RopeScaling, map[string]string{"llama3": "llama", "longrope": "phi3"}[o.RopeScaling])
	}
	if o.RopeFactor < 0 || o.RopeOrigCtx < 0 || o.RopeBase <= 1 || o.RopeBaseSWA <= 1 || o.RopeLowFreq < 0 || o.RopeHighFreq <= o.RopeLowFreq && o.RopeScaling == "llama3" {
		return o, fmt.Errorf("testmodel: bad rope parameters: base %g, factor %g, original context %d, low/high %g/%g",
			o.RopeBase, o.RopeFactor, o.RopeOrigCtx, o.RopeLowFreq, o.RopeHighFreq)
	}
	if !supported(o.Type) {
		return o, fmt.Errorf("%w %s: engine/quant has no quantizer or no dot product for it", ErrType, o.Type)
	}
	// Every matrix's row length (Dim or FF) must be whole blocks of the
	// type it gets.
	ff := o.FF
	if o.moe() {
		ff = 0 // no dense feed-forward matrix
	}
	for _, n := range []int{o.Dim, ff, o.Heads * o.HeadDim, o.ExpertFF, o.SharedFF} {
		if t := MatrixType(o.Type, n); n > 0 && n%t.BlockSize() != 0 {
			return o, fmt.Errorf("testmodel: %s needs dim (%d), ff (%d), heads×head size (%d) and expert widths (%d, %d) to be multiples of %d",
				t, o.Dim, o.FF, o.Heads*o.HeadDim, o.ExpertFF, o.SharedFF, t.BlockSize())
		}
	}
	return o, nil
}

// tensor is one tensor to generate: GGML shape and value distribution,
// or fixed values.
type tensor struct {
	name   string
	shape  []uint64 // GGML order: shape[0] is the row length
	typ    quant.Type
	std    float64 // N(mean, std)
	mean   float64
	values []float32 // when set, the tensor's values (F32)
}

// plan lists the model's tensors in llama.cpp's order and names.
func plan(o Options, vocab int) []tensor {
	hd := o.HeadDim
	qd, kvd := o.Heads*hd, o.KVHeads*hd
	// Residual-branch outputs are scaled down with depth (GPT-2 style) so
	// activations stay O(1) however many layers there are.
	resid := 1 / math.Sqrt(float64(2*o.Layers))
	mat := func(name string, in, out int, scale float64) tensor {
		return tensor{name: name, shape: []uint64{uint64(in), uint64(out)}, typ: MatrixType(o.Type, in), std: scale / math.Sqrt(float64(in))}
	}
	exps := func(name string, in, out int, scale float64) tensor {
		t := mat(name, in, out, scale)
		t.shape = append(t.shape, uint64(o.Experts))
		return t
	}
	vec := func(name string, n int, mean, std float64) tensor {
		return tensor{name: name, shape: []uint64{uint64(n)}, typ: quant.F32, mean: mean, std: std}
	}
	norm := func(name string) tensor { return vec(name, o.Dim, 1, 0.05) }
	bias := func(name string, n int) tensor { return vec(name, n, 0, 0.02) }
	ts := []tensor{mat("token_embd.weight", o.Dim, vocab, 1)}
	switch o.RopeScaling {
	case "llama3":
		ts = append(ts, tensor{name: "rope_freqs.weight", shape: []uint64{uint64(hd / 2)}, typ: quant.F32, values: Llama3Factors(o)})
	case "longrope":
		short, long := LongRoPEFactors(o)
		ts = append(ts,
			tensor{name: "rope_factors_long.weight", shape: []uint64{uint64(hd / 2)}, typ: quant.F32, values: long},
			tensor{name: "rope_factors_short.weight", shape: []uint64{uint64(hd / 2)}, typ: quant.F32, values: short})
	}
	for i := 0; i < o.Layers; i++ {
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		ts = append(ts, norm(b("attn_norm.weight")))
		if o.Arch == "phi3" {
			ts = append(ts, mat(b("attn_qkv.weight"), o.Dim, qd+2*kvd, 1))
		} else {
			ts = append(ts,
				mat(b("attn_q.weight"), o.Dim, qd, 1),
				mat(b("attn_k.weight"), o.Dim, kvd, 1),
				mat(b("attn_v.weight"), o.Dim, kvd, 1))
			if o.Arch == "qwen2" || o.Arch == "qwen2moe" {
				ts = append(ts, bias(b("attn_q.bias"), qd), bias(b("attn_k.bias"), kvd), bias(b("attn_v.bias"), kvd))
			}
		}
		if o.qkNorm() {
			// Per-head norms scale a unit-RMS head: around 1, spread
			// enough that a wrong head or element order shows.
			ts = append(ts, vec(b("attn_k_norm.weight"), hd, 1, 0.2), vec(b("attn_q_norm.weight"), hd, 1, 0.2))
		}
		ts = append(ts, mat(b("attn_output.weight"), qd, o.Dim, resid))
		if o.gemma() {
			ts = append(ts, norm(b("post_attention_norm.weight")))
		}
		ts = append(ts, norm(b("ffn_norm.weight")))
		switch {
		case o.moe():
			// The router's logits are spread (std 1) so that the choice
			// of experts differs from token to token. llama-quantize keeps
			// it F32, as here.
			ts = append(ts, tensor{name: b("ffn_gate_inp.weight"), shape: []uint64{uint64(o.Dim), uint64(o.Experts)}, typ: quant.F32, std: 1 / math.Sqrt(float64(o.Dim))},
				exps(b("ffn_gate_exps.weight"), o.Dim, o.ExpertFF, 1),
				exps(b("ffn_up_exps.weight"), o.Dim, o.ExpertFF, 1),
				exps(b("ffn_down_exps.weight"), o.ExpertFF, o.Dim, resid))
			if o.Arch == "qwen2moe" {
				ts = append(ts, vec(b("ffn_gate_inp_shexp.weight"), o.Dim, 0, 1/math.Sqrt(float64(o.Dim))),
					mat(b("ffn_gate_shexp.weight"), o.Dim, o.SharedFF, 1),
					mat(b("ffn_up_shexp.weight"), o.Dim, o.SharedFF, 1),
					mat(b("ffn_down_shexp.weight"), o.SharedFF, o.Dim, resid))
			}
		case o.Arch == "phi3":
			// Gate and up fused: rows [0, FF) gate, [FF, 2FF) up.
			ts = append(ts, mat(b("ffn_up.weight"), o.Dim, 2*o.FF, 1), mat(b("ffn_down.weight"), o.FF, o.Dim, resid))
		default:
			ts = append(ts, mat(b("ffn_gate.weight"), o.Dim, o.FF, 1), mat(b("ffn_up.weight"), o.Dim, o.FF, 1),
				mat(b("ffn_down.weight"), o.FF, o.Dim, resid))
		}
		if o.gemma() {
			ts = append(ts, norm(b("post_ffw_norm.weight")))
		}
	}
	ts = append(ts, norm("output_norm.weight"))
	// qwen2, qwen3 and gemma tie the output projection to the token
	// embedding; llama.cpp requires qwen2moe's.
	switch o.Arch {
	case "llama", "phi3", "qwen2moe", "qwen3moe":
		ts = append(ts, mat("output.weight", o.Dim, vocab, 1))
	}
	return ts
}

// Llama3Factors returns the rope_freqs.weight of o's llama3 scaling, as
// llama.cpp's converter derives them from Meta's rope_scaling: for each
// frequency θ = base^(−2i/d) with wavelength λ = 2π/θ, 1 where λ is
// shorter than orig/high, the factor where it is longer than orig/low,
// and in between 1/((1−s)/factor + s) with s = (orig/λ − low)/(high − low).
func Llama3Factors(o Options) []float32 {
	hd := o.HeadDim
	if hd == 0 {
		hd = o.Dim / o.Heads
	}
	out := make([]float32, hd/2)
	orig := float64(o.RopeOrigCtx)
	lowWave, highWave := orig/o.RopeLowFreq, orig/o.RopeHighFreq
	for i := range out {
		// The converter computes θ in float32 (torch).
		freq := float64(float32(1 / math.Pow(o.RopeBase, float64(float32(2*i)/float32(hd)))))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			out[i] = 1
		case wave > lowWave:
			out[i] = float32(o.RopeFactor)
		default:
			s := (orig/wave - o.RopeLowFreq) / (o.RopeHighFreq - o.RopeLowFreq)
			out[i] = float32(1 / ((1-s)/o.RopeFactor + s))
		}
	}
	return out
}

// LongRoPEFactors returns o's Phi-3 LongRoPE factors: short ones close to
// 1 (1 to 1.5) and long ones growing from 1 to RopeFactor with the
// dimension, the shape of Phi-3.5's.
func LongRoPEFactors(o Options) (short, long []float32) {
	hd := o.HeadDim
	if hd == 0 {
		hd = o.Dim / o.Heads
	}
	n := hd / 2
	short, long = make([]float32, n), make([]float32, n)
	for i := range short {
		x := float64(i) / float64(max(n-1, 1))
		short[i] = float32(1 + 0.5*x*x)
		long[i] = float32(1 + (o.RopeFactor-1)*x*x)
	}
	return short, long
}

// LongRoPEAttnFactor is the rope.scaling.attn_factor llama.cpp's converter
// writes for a Phi-3 LongRoPE model of context ctx trained at orig:
// √(1 + ln(ctx/orig)/ln(orig)), or 1 when ctx ≤ orig.
func LongRoPEAttnFactor(ctx, orig int) float64 {
	scale := float64(ctx) / float64(orig)
	if scale <= 1 {
		return 1
	}
	return math.Sqrt(1 + math.Log(scale)/math.Log(float64(orig)))
}

// MatrixType is the type Write gives a weight matrix of type t with rows
// of n elements: t, or when t is a K-quant whose 256-element super-block
// does not divide n, the fallback llama.cpp's quantizer picks (Q4_K→Q5_0,
// Q5_K→Q5_1, Q6_K→Q8_0; Q2_K and Q3_K get Q4_0 here, where llama.cpp
// takes IQ4_NL).
func MatrixType(t quant.Type, n int) quant.Type {
	if t.BlockSize() != quant.QKK || n%quant.QKK == 0 {
		return t
	}
	switch t {
	case quant.Q4_K:
		return quant.Q5_0
	case quant.Q5_K:
		return quant.Q5_1
	case quant.Q6_K:
		return quant.Q8_0
	case quant.Q2_K, quant.Q3_K:
		return quant.Q4_0
	}
	return t
}

// fileType maps a weight type to llama.cpp's general.file_type (LLAMA_FTYPE).
func fileType(t quant.Type) (uint32, bool) {
	m := map[quant.Type]uint32{
		quant.F32: 0, quant.F16: 1, quant.Q4_0: 2, quant.Q4_1: 3, quant.Q8_0: 7, quant.Q5_0: 8,
		quant.Q5_1: 9, quant.Q2_K: 10, quant.Q3_K: 12, quant.Q4_K: 15, quant.Q5_K: 17, quant.Q6_K: 18,
		quant.BF16: 32,
	}
	v, ok := m[t]
	return v, ok
}

// metadata returns the general.* and <arch>.* keys.
func metadata(o Options, vocab int) []entry {
	a := o.Arch + "."
	hd := o.HeadDim
	eps := float32(1e-5)
	if o.gemma() {
		eps = 1e-6
	}
	es := []entry{
		{"general.architecture", o.Arch},
		{"general.name", o.Name},
		{a + "context_length", uint32(o.ContextLength)},
		{a + "embedding_length", uint32(o.Dim)},
		{a + "block_count", uint32(o.Layers)},
		{a + "feed_forward_length", uint32(o.FF)},
		{a + "attention.head_count", uint32(o.Heads)},
		{a + "attention.head_count_kv", uint32(o.KVHeads)},
		{a + "rope.dimension_count", uint32(hd)},
		{a + "rope.freq_base", float32(o.RopeBase)},
		{a + "attention.layer_norm_rms_epsilon", eps},
		{a + "vocab_size", uint32(vocab)},
	}
	if o.gemma() || o.qkNorm() {
		es = append(es,
			entry{a + "attention.key_length", uint32(hd)},
			entry{a + "attention.value_length", uint32(hd)})
	}
	switch o.Arch {
	case "gemma2":
		es = append(es,
			entry{a + "attn_logit_softcapping", float32(50)},
			entry{a + "final_logit_softcapping", float32(30)},
			entry{a + "attention.sliding_window", uint32(o.SlidingWindow)},
		)
	case "gemma3":
		es = append(es,
			entry{a + "attention.sliding_window", uint32(o.SlidingWindow)},
			entry{a + "attention.sliding_window_pattern", uint32(o.SWAPattern)},
			entry{a + "rope.freq_base_swa", float32(o.RopeBaseSWA)},
		)
	}
	if o.moe() {
		es = append(es, entry{a + "expert_count", uint32(o.Experts)}, entry{a + "expert_used_count", uint32(o.ExpertsUsed)})
		if o.Arch != "llama" {
			es = append(es, entry{a + "expert_feed_forward_length", uint32(o.ExpertFF)})
		}
		if o.Arch == "qwen2moe" {
			es = append(es, entry{a + "expert_shared_feed_forward_length", uint32(o.SharedFF)})
		}
	}
	switch o.RopeScaling {
	case "linear":
		es = append(es, entry{a + "rope.scaling.type", "linear"}, entry{a + "rope.scaling.factor", float32(o.RopeFactor)})
	case "yarn":
		es = append(es, entry{a + "rope.scaling.type", "yarn"}, entry{a + "rope.scaling.factor", float32(o.RopeFactor)},
			entry{a + "rope.scaling.original_context_length", uint32(o.RopeOrigCtx)})
		if o.RopeAttnFactor != 0 {
			es = append(es, entry{a + "rope.scaling.attn_factor", float32(o.RopeAttnFactor)})
		}
	case "longrope":
		// As Phi-3.5's converted files: no scaling type, the original
		// context and the attention factor.
		es = append(es, entry{a + "rope.scaling.original_context_length", uint32(o.RopeOrigCtx)},
			entry{a + "rope.scaling.attn_factor", float32(LongRoPEAttnFactor(o.ContextLength, o.RopeOrigCtx))})
	}
	if ft, ok := fileType(o.Type); ok {
		es = append(es, entry{"general.file_type", ft})
	}
	if o.Type.BlockSize() > 1 {
		es = append(es, entry{"general.quantization_version", uint32(2)})
	}
	return es
}

// New builds a Writer for the model described by o. Tensor data is
// generated while the Writer writes; generation checks ctx between chunks
// and fails the write when ctx is done.
func New(ctx context.Context, o Options) (*gguf.Writer, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	var vocab []entry
	if o.VocabFrom != "" {
		vocab, err = vocabFrom(o.VocabFrom)
	} else {
		vocab, err = byteVocab()
	}
	if err != nil {
		return nil, err
	}
	if o.ChatTemplate != "" {
		vocab = slices.DeleteFunc(vocab, func(e entry) bool { return e.key == "tokenizer.chat_template" })
		vocab = append(vocab, entry{"tokenizer.chat_template", o.ChatTemplate})
	}
	nVocab := 0
	for _, e := range vocab {
		if e.key == "tokenizer.ggml.tokens" {
			v, err := gguf.NewValue(e.val)
			if err != nil {
				return nil, err
			}
			nVocab = v.Len()
		}
	}
	if nVocab == 0 {
		return nil, fmt.Errorf("testmodel: empty vocabulary")
	}
	w := gguf.NewWriter()
	for _, e := range append(metadata(o, nVocab), vocab...) {
		if err := w.AddKV(e.key, e.val); err != nil {
			return nil, fmt.Errorf("testmodel: %w", err)
		}
	}
	for _, t := range plan(o, nVocab) {
		if err := w.AddTensorFunc(t.name, t.typ, t.shape, generator(ctx, o.Seed, t)); err != nil {
			return nil, fmt.Errorf("testmodel: %w", err)
		}
	}
	return w, nil
}

// Write generates the model described by o into path, atomically.
func Write(ctx context.Context, o Options, path string) error {
	w, err := New(ctx, o)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// chunkElems bounds the floats generated at once (4 MiB of float32).
const chunkElems = 1 << 20

// generator returns the streaming writer of one tensor. Each tensor has its
// own random stream, seeded from the model seed and the tensor name, so a
// tensor's values do not depend on which other tensors the model has.
func generator(ctx context.Context, seed uint64, t tensor) func(io.Writer) error {
	return func(w io.Writer) error {
		if t.values != nil {
			d := make([]byte, 4*len(t.values))
			if err := encode(quant.F32, t.values, d); err != nil {
				return err
			}
			_, err := w.Write(d)
			return err
		}
		h := fnv.New64a()
		h.Write([]byte(t.name))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		row := int(t.shape[0])
		rows := 1
		for _, d := range t.shape[1:] {
			rows *= int(d)
		}
		per := max(1, chunkElems/row) // whole rows per chunk, so blocks never split
		rowBytes, err := t.typ.RowBytes(row)
		if err != nil {
			return err
		}
		src := make([]float32, min(per, rows)*row)
		dst := make([]byte, min(per, rows)*rowBytes)
		for done := 0; done < rows; done += per {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(per, rows-done)
			s, d := src[:n*row], dst[:n*rowBytes]
			for i := range s {
				s[i] = float32(t.mean + t.std*rng.NormFloat64())
			}
			if err := encode(t.typ, s, d); err != nil {
				return err
			}
			if _, err := w.Write(d); err != nil {
				return err
			}
		}
		return nil
	}
}

// ControlTokens returns the ids of the control tokens (token type 3) of the
// model at path: tests ban them to keep a random-weight model from ending
// its reply.
func ControlTokens(path string) ([]int32, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	types, ok := f.Int32s("tokenizer.ggml.token_type")
	if !ok {
		return nil, fmt.Errorf("%s has no token types", path)
	}
	var ids []int32
	for id, typ := range types {
		if typ == 3 {
			ids = append(ids, int32(id))
		}
	}
	return ids, nil
}
