package model

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

// refModel is a deliberately plain float64 forward pass over dequantized
// weights: no cache, no batching, no backend, full recomputation. It is the
// oracle the real engine is checked against. Its hyperparameters come from
// the generator's options, not from the engine's parsing of the file, and
// each architecture's arithmetic is written out here from the models'
// definitions (Hugging Face's, with llama.cpp's conventions where they
// differ: rope.scaling.attn_factor multiplies YaRN's own scale, Phi-3's
// long factors apply to the whole context when it exceeds the original).
type refModel struct {
	t *testing.T
	f *gguf.File
	o testmodel.Options
	// ctx is the context the engine runs with (Phi-3 LongRoPE's choice).
	ctx int
	// margin is the smallest gap, in router logits, between the last
	// expert chosen and the first one left out, over every routing
	// decision of the last logits call: where it is smaller than the
	// engine's rounding error, the two may choose differently.
	margin float64
}

// newRef builds the reference model over f, written from options o, for a
// run with context ctx.
func newRef(t *testing.T, f *gguf.File, o testmodel.Options, ctx int) *refModel {
	t.Helper()
	o, err := o.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	return &refModel{t: t, f: f, o: o, ctx: ctx}
}

func (r *refModel) tensor(name string) []float64 {
	info, ok := r.f.Tensor(name)
	if !ok {
		r.t.Fatalf("reference: missing tensor %s", name)
	}
	data, err := r.f.TensorData(name)
	if err != nil {
		r.t.Fatal(err)
	}
	f32 := make([]float32, info.Elements())
	if err := quant.Dequantize(info.Type, data, f32); err != nil {
		r.t.Fatal(err)
	}
	out := make([]float64, len(f32))
	for i, v := range f32 {
		out[i] = float64(v)
	}
	return out
}

func (r *refModel) has(name string) bool { _, ok := r.f.Tensor(name); return ok }

// matvec computes W·x for W stored out×in row-major.
func matvec(w []float64, x []float64, out int) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := 0; o < out; o++ {
		var s float64
		for i := 0; i < in; i++ {
			s += w[o*in+i] * x[i]
		}
		y[o] = s
	}
	return y
}

func rmsnorm(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	scale := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i := range x {
		y[i] = x[i] * scale * w[i]
	}
	return y
}

func silu(x float64) float64 { return x / (1 + math.Exp(-x)) }

func gelu(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// refRoPE is one layer's rotary embedding: the angle of pair i at position
// p is p·freq[i], and cos/sin are scaled by mscale.
type refRoPE struct {
	freq   []float64
	mscale float64
	neox   bool
}

// rope returns the rotary embedding of a layer with base base; scaled
// says whether the model's context extension applies (Gemma 3's local
// layers have none).
func (r *refModel) rope(base float64, scaled bool) refRoPE {
	o := r.o
	d := o.HeadDim
	rr := refRoPE{freq: make([]float64, d/2), mscale: 1, neox: o.Arch != "llama"}
	for i := range rr.freq {
		rr.freq[i] = math.Pow(base, -2*float64(i)/float64(d))
	}
	if !scaled {
		return rr
	}
	f, orig := o.RopeFactor, float64(o.RopeOrigCtx)
	switch o.RopeScaling {
	case "linear":
		for i := range rr.freq {
			rr.freq[i] /= f
		}
	case "llama3":
		// Meta's rule: keep short wavelengths, divide long ones by the
		// factor, interpolate smoothly in between.
		low, high := orig/o.RopeLowFreq, orig/o.RopeHighFreq
		for i, th := range rr.freq {
			wave := 2 * math.Pi / th
			switch {
			case wave < high:
			case wave > low:
				rr.freq[i] = th / f
			default:
				s := (orig/wave - o.RopeLowFreq) / (o.RopeHighFreq - o.RopeLowFreq)
				rr.freq[i] = (1-s)*th/f + s*th
			}
		}
	case "yarn":
		// YaRN: interpolate the dimensions that turn fewer than β_slow = 1
		// times over the original context, extrapolate those that turn
		// more than β_fast = 32 times, ramp linearly in between; scale the
		// magnitude by 0.1·ln(factor) + 1.
		corr := func(rot float64) float64 {
			return float64(d) * math.Log(orig/(rot*2*math.Pi)) / (2 * math.Log(base))
		}
		lo := math.Max(0, math.Floor(corr(32)))
		hi := math.Min(float64(d-1), math.Ceil(corr(1)))
		for i, th := range rr.freq {
			ramp := 1 - math.Min(1, math.Max(0, (float64(i)-lo)/math.Max(0.001, hi-lo)))
			rr.freq[i] = th/f*(1-ramp) + th*ramp
		}
		rr.mscale = 0.1*math.Log(f) + 1
		if o.RopeAttnFactor != 0 {
			rr.mscale *= o.RopeAttnFactor
		}
	case "longrope":
		short, long := testmodel.LongRoPEFactors(o)
		factors := short
		if r.ctx > o.RopeOrigCtx { // contexts here are multiples of 256
			factors = long
		}
		for i := range rr.freq {
			rr.freq[i] /= float64(factors[i])
		}
		rr.mscale = testmodel.LongRoPEAttnFactor(o.ContextLength, o.RopeOrigCtx)
	}
	return rr
}

// apply rotates the heads of x at position pos.
func (rr refRoPE) apply(x []float64, pos, heads, hd int) {
	half := len(rr.freq)
	for h := 0; h < heads; h++ {
		v := x[h*hd : (h+1)*hd]
		for i, fr := range rr.freq {
			theta := float64(pos) * fr
			c, s := math.Cos(theta)*rr.mscale, math.Sin(theta)*rr.mscale
			a, b := 2*i, 2*i+1
			if rr.neox {
				a, b = i, i+half
			}
			x0, x1 := v[a], v[b]
			v[a], v[b] = x0*c-x1*s, x0*s+x1*c
		}
	}
}

// local reports whether layer l attends over a sliding window.
func (r *refModel) local(l int) bool {
	switch r.o.Arch {
	case "gemma2":
		return l%2 == 0
	case "gemma3":
		n := r.o.SWAPattern
		return l%n < n-1
	}
	return false
}

// ffn runs layer l's feed-forward network on the normalised h.
func (r *refModel) ffn(name func(string) string, h []float64) []float64 {
	o := r.o
	gated := func(gate, up, down []float64, ff int, act func(float64) float64) []float64 {
		g, u := matvec(gate, h, ff), matvec(up, h, ff)
		for i := range g {
			g[i] = act(g[i]) * u[i]
		}
		return matvec(down, g, o.Dim)
	}
	act := silu
	if o.Arch == "gemma2" || o.Arch == "gemma3" {
		act = gelu
	}
	if o.Experts == 0 {
		if r.has(name("ffn_gate.weight")) {
			return gated(r.tensor(name("ffn_gate.weight")), r.tensor(name("ffn_up.weight")), r.tensor(name("ffn_down.weight")), o.FF, act)
		}
		gu := r.tensor(name("ffn_up.weight"))
		return gated(gu[:o.FF*o.Dim], gu[o.FF*o.Dim:], r.tensor(name("ffn_down.weight")), o.FF, act)
	}
	// Mixture of experts: softmax over the router's logits, the k most
	// probable experts, their probabilities as weights (divided by their
	// sum except in Qwen2 MoE).
	logits := matvec(r.tensor(name("ffn_gate_inp.weight")), h, o.Experts)
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, v)
	}
	var sum float64
	probs := make([]float64, o.Experts)
	for i, v := range logits {
		probs[i] = math.Exp(v - mx)
		sum += probs[i]
	}
	idx := make([]int, o.Experts)
	for i := range idx {
		probs[i] /= sum
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return probs[idx[a]] > probs[idx[b]] })
	chosen := idx[:o.ExpertsUsed]
	if o.ExpertsUsed < o.Experts {
		r.margin = math.Min(r.margin, logits[idx[o.ExpertsUsed-1]]-logits[idx[o.ExpertsUsed]])
	}
	var wsum float64
	for _, e := range chosen {
		wsum += probs[e]
	}
	if o.Arch == "qwen2moe" {
		wsum = 1
	}
	gate, up, down := r.tensor(name("ffn_gate_exps.weight")), r.tensor(name("ffn_up_exps.weight")), r.tensor(name("ffn_down_exps.weight"))
	per := o.ExpertFF * o.Dim
	out := make([]float64, o.Dim)
	for _, e := range chosen {
		y := gated(gate[e*per:(e+1)*per], up[e*per:(e+1)*per], down[e*per:(e+1)*per], o.ExpertFF, silu)
		for i := range out {
			out[i] += probs[e] / wsum * y[i]
		}
	}
	if o.Arch == "qwen2moe" {
		// The shared expert, scaled by the sigmoid of its gate.
		var g float64
		for i, w := range r.tensor(name("ffn_gate_inp_shexp.weight")) {
			g += w * h[i]
		}
		g = 1 / (1 + math.Exp(-g))
		y := gated(r.tensor(name("ffn_gate_shexp.weight")), r.tensor(name("ffn_up_shexp.weight")), r.tensor(name("ffn_down_shexp.weight")), o.SharedFF, silu)
		for i := range out {
			out[i] += g * y[i]
		}
	}
	return out
}

// logits returns the logits at every position of tokens.
func (r *refModel) logits(tokens []int32) [][]float64 {
	o := r.o
	hd := o.HeadDim
	qd, kvd := o.Heads*hd, o.KVHeads*hd
	gemma := o.Arch == "gemma2" || o.Arch == "gemma3"
	r.margin = math.Inf(1)
	eps := 1e-5
	if gemma {
		eps = 1e-6
	}
	embd := r.tensor("token_embd.weight")
	n := len(tokens)
	xs := make([][]float64, n)
	for p, id := range tokens {
		xs[p] = append([]float64(nil), embd[int(id)*o.Dim:(int(id)+1)*o.Dim]...)
		if gemma {
			for i := range xs[p] {
				xs[p][i] *= math.Sqrt(float64(o.Dim))
			}
		}
	}
	for l := 0; l < o.Layers; l++ {
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		var wq, wk, wv []float64
		if r.has(name("attn_qkv.weight")) {
			qkv := r.tensor(name("attn_qkv.weight"))
			wq, wk, wv = qkv[:qd*o.Dim], qkv[qd*o.Dim:(qd+kvd)*o.Dim], qkv[(qd+kvd)*o.Dim:]
		} else {
			wq, wk, wv = r.tensor(name("attn_q.weight")), r.tensor(name("attn_k.weight")), r.tensor(name("attn_v.weight"))
		}
		wo := r.tensor(name("attn_output.weight"))
		anorm := r.tensor(name("attn_norm.weight"))
		local := r.local(l)
		rope := r.rope(o.RopeBase, true)
		if o.Arch == "gemma3" && local {
			rope = r.rope(o.RopeBaseSWA, false)
		}
		qs, ks, vs := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for p := 0; p < n; p++ {
			h := rmsnorm(xs[p], anorm, eps)
			qs[p], ks[p], vs[p] = matvec(wq, h, qd), matvec(wk, h, kvd), matvec(wv, h, kvd)
			if r.has(name("attn_q.bias")) {
				for i, b := range r.tensor(name("attn_q.bias")) {
					qs[p][i] += b
				}
				for i, b := range r.tensor(name("attn_k.bias")) {
					ks[p][i] += b
				}
				for i, b := range r.tensor(name("attn_v.bias")) {
					vs[p][i] += b
				}
			}
			if r.has(name("attn_q_norm.weight")) {
				qn, kn := r.tensor(name("attn_q_norm.weight")), r.tensor(name("attn_k_norm.weight"))
				for h := 0; h < o.Heads; h++ {
					copy(qs[p][h*hd:], rmsnorm(qs[p][h*hd:(h+1)*hd], qn, eps))
				}
				for h := 0; h < o.KVHeads; h++ {
					copy(ks[p][h*hd:], rmsnorm(ks[p][h*hd:(h+1)*hd], kn, eps))
				}
			}
			rope.apply(qs[p], p, o.Heads, hd)
			rope.apply(ks[p], p, o.KVHeads, hd)
		}
		window := 0
		if local {
			window = o.SlidingWindow
		}
		scale := 1 / math.Sqrt(float64(hd))
		for p := 0; p < n; p++ {
			att := make([]float64, qd)
			for h := 0; h < o.Heads; h++ {
				kh := h / (o.Heads / o.KVHeads)
				var scores []float64
				var idx []int
				for j := 0; j <= p; j++ {
					if window > 0 && p-j >= window {
						continue
					}
					var s float64
					for e := 0; e < hd; e++ {
						s += qs[p][h*hd+e] * ks[j][kh*hd+e]
					}
					s *= scale
					if o.Arch == "gemma2" {
						s = 50 * math.Tanh(s/50)
					}
					scores = append(scores, s)
					idx = append(idx, j)
				}
				m := math.Inf(-1)
				for _, s := range scores {
					m = math.Max(m, s)
				}
				var sum float64
				for i := range scores {
					scores[i] = math.Exp(scores[i] - m)
					sum += scores[i]
				}
				for i, j := range idx {
					for e := 0; e < hd; e++ {
						att[h*hd+e] += scores[i] / sum * vs[j][kh*hd+e]
					}
				}
			}
			out := matvec(wo, att, o.Dim)
			if gemma {
				out = rmsnorm(out, r.tensor(name("post_attention_norm.weight")), eps)
			}
			for i := range out {
				xs[p][i] += out[i]
			}
		}
		fnorm := r.tensor(name("ffn_norm.weight"))
		for p := 0; p < n; p++ {
			out := r.ffn(name, rmsnorm(xs[p], fnorm, eps))
			if gemma {
				out = rmsnorm(out, r.tensor(name("post_ffw_norm.weight")), eps)
			}
			for i := range out {
				xs[p][i] += out[i]
			}
		}
	}
	onorm := r.tensor("output_norm.weight")
	out := embd
	if r.has("output.weight") {
		out = r.tensor("output.weight")
	}
	vocab := len(embd) / o.Dim
	logits := make([][]float64, n)
	for p := 0; p < n; p++ {
		logits[p] = matvec(out, rmsnorm(xs[p], onorm, eps), vocab)
		if o.Arch == "gemma2" {
			for i := range logits[p] {
				logits[p][i] = 30 * math.Tanh(logits[p][i]/30)
			}
		}
	}
	return logits
}
