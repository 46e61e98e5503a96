package model

import (
	"fmt"
	"math"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// refModel is a deliberately plain float64 forward pass over dequantized
// weights: no cache, no batching, no backend, full recomputation. It is the
// oracle the real engine is checked against.
type refModel struct {
	t    *testing.T
	f    *gguf.File
	c    Config
	arch string
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

func rope(x []float64, pos, heads, hd, dims int, base float64, neox bool) {
	for h := 0; h < heads; h++ {
		v := x[h*hd : (h+1)*hd]
		for i := 0; i < dims/2; i++ {
			theta := float64(pos) * math.Pow(base, -2*float64(i)/float64(dims))
			c, s := math.Cos(theta), math.Sin(theta)
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+dims/2
			}
			x0, x1 := v[a], v[b]
			v[a], v[b] = x0*c-x1*s, x0*s+x1*c
		}
	}
}

// logits returns the logits at every position of tokens.
func (r *refModel) logits(tokens []int32) [][]float64 {
	c := r.c
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	neox := r.arch != "llama"
	gemma := r.arch == "gemma2"
	embd := r.tensor("token_embd.weight")
	n := len(tokens)
	xs := make([][]float64, n)
	for p, id := range tokens {
		xs[p] = append([]float64(nil), embd[int(id)*c.Dim:(int(id)+1)*c.Dim]...)
		if gemma {
			for i := range xs[p] {
				xs[p][i] *= math.Sqrt(float64(c.Dim))
			}
		}
	}
	eps := float64(c.NormEps)
	for l := 0; l < c.Layers; l++ {
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		var wq, wk, wv []float64
		if r.has(name("attn_qkv.weight")) {
			qkv := r.tensor(name("attn_qkv.weight"))
			wq, wk, wv = qkv[:qd*c.Dim], qkv[qd*c.Dim:(qd+kvd)*c.Dim], qkv[(qd+kvd)*c.Dim:]
		} else {
			wq, wk, wv = r.tensor(name("attn_q.weight")), r.tensor(name("attn_k.weight")), r.tensor(name("attn_v.weight"))
		}
		wo := r.tensor(name("attn_output.weight"))
		anorm := r.tensor(name("attn_norm.weight"))
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
			rope(qs[p], p, c.Heads, c.HeadDim, c.RoPE.Dims, float64(c.RoPE.FreqBase), neox)
			rope(ks[p], p, c.KVHeads, c.HeadDim, c.RoPE.Dims, float64(c.RoPE.FreqBase), neox)
		}
		window := 0
		if c.Window > 0 && (!gemma || l%2 == 0) && r.arch != "qwen2" {
			window = c.Window
		}
		scale := 1 / math.Sqrt(float64(c.HeadDim))
		for p := 0; p < n; p++ {
			att := make([]float64, qd)
			for h := 0; h < c.Heads; h++ {
				kh := h / (c.Heads / c.KVHeads)
				var scores []float64
				var idx []int
				for j := 0; j <= p; j++ {
					if window > 0 && p-j >= window {
						continue
					}
					var s float64
					for e := 0; e < c.HeadDim; e++ {
						s += qs[p][h*c.HeadDim+e] * ks[j][kh*c.HeadDim+e]
					}
					s *= scale
					if gemma && c.AttnSoftcap > 0 {
						s = float64(c.AttnSoftcap) * math.Tanh(s/float64(c.AttnSoftcap))
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
					for e := 0; e < c.HeadDim; e++ {
						att[h*c.HeadDim+e] += scores[i] / sum * vs[j][kh*c.HeadDim+e]
					}
				}
			}
			o := matvec(wo, att, c.Dim)
			if gemma && r.has(name("post_attention_norm.weight")) {
				o = rmsnorm(o, r.tensor(name("post_attention_norm.weight")), eps)
			}
			for i := range o {
				xs[p][i] += o[i]
			}
		}
		fnorm := r.tensor(name("ffn_norm.weight"))
		var gate, up []float64
		if r.has(name("ffn_gate.weight")) {
			gate, up = r.tensor(name("ffn_gate.weight")), r.tensor(name("ffn_up.weight"))
		} else {
			gu := r.tensor(name("ffn_up.weight"))
			gate, up = gu[:c.FF*c.Dim], gu[c.FF*c.Dim:]
		}
		down := r.tensor(name("ffn_down.weight"))
		for p := 0; p < n; p++ {
			h := rmsnorm(xs[p], fnorm, eps)
			g, u := matvec(gate, h, c.FF), matvec(up, h, c.FF)
			for i := range g {
				if gemma {
					x := g[i]
					g[i] = 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) * u[i]
				} else {
					g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
				}
			}
			o := matvec(down, g, c.Dim)
			if gemma && r.has(name("post_ffw_norm.weight")) {
				o = rmsnorm(o, r.tensor(name("post_ffw_norm.weight")), eps)
			}
			for i := range o {
				xs[p][i] += o[i]
			}
		}
	}
	onorm := r.tensor("output_norm.weight")
	out := embd
	if r.has("output.weight") {
		out = r.tensor("output.weight")
	}
	logits := make([][]float64, n)
	for p := 0; p < n; p++ {
		logits[p] = matvec(out, rmsnorm(xs[p], onorm, eps), c.Vocab)
		if c.FinalSoftcap > 0 {
			for i := range logits[p] {
				logits[p][i] = float64(c.FinalSoftcap) * math.Tanh(logits[p][i]/float64(c.FinalSoftcap))
			}
		}
	}
	return logits
}

// newRef builds the reference model over f with the hyperparameters the
// engine read (the reference checks the computation, not the parsing).
func newRef(t *testing.T, f *gguf.File, c Config) *refModel {
	return &refModel{t: t, f: f, c: c, arch: c.Arch}
}
