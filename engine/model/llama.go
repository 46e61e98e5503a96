package model

import "github.com/ruvllm/ruvllm/engine/compute"

// Llama covers Llama 2 and 3.x (with llama3 frequency factors,
// rope_freqs.weight), Mistral, TinyLlama and Mixtral: pre-norm decoder
// blocks of grouped-query attention with rotary embeddings (adjacent-pair
// layout) and a SwiGLU feed-forward network, or with expert_count set a
// mixture of SwiGLU experts (softmax over the router, top-k renormalised).
// Qwen2, Qwen3, their MoE variants and Phi-3 load into the same struct.
type Llama struct {
	base
	layers []llamaLayer
	// shortFactors and longFactors are Phi-3's LongRoPE factors, switched
	// by SizeContext.
	shortFactors, longFactors compute.Tensor
}

type llamaLayer struct {
	attnNorm, ffnNorm compute.Tensor
	attn              attnWeights
	ffn               ffnWeights
	moe               *moeWeights // nil for a dense feed-forward network
}

// llamaOptions are the variations of the llama layout.
type llamaOptions struct {
	bias     bool // q/k/v biases are required (qwen2)
	anyBias  bool // q/k/v biases are loaded when present (qwen2moe)
	qkNorm   bool // per-head q/k RMS norms (qwen3, qwen3moe)
	moe      *moeConfig
	ropeFreq bool // rope_freqs.weight applies when present (llama)
}

func init() {
	families["llama"] = loadLlama
	configs["llama"] = llamaConfig
}

func llamaConfig(l *loader) (Config, error) { return l.config(compute.RoPENormal) }

func loadLlama(l *loader) (Model, error) {
	c, err := llamaConfig(l)
	if err != nil {
		return nil, err
	}
	mc, err := l.moeConfig(c, moeKeys{normalize: true})
	if err != nil {
		return nil, err
	}
	return loadLlamaLayers(l, c, llamaOptions{moe: mc, ropeFreq: true})
}

// loadLlamaLayers loads the llama layout with the variations of o.
func loadLlamaLayers(l *loader, c Config, o llamaOptions) (*Llama, error) {
	if o.moe != nil {
		c.Experts, c.ExpertsUsed = o.moe.experts, o.moe.used
	}
	if o.qkNorm {
		if err := checkHeads(l, c); err != nil {
			return nil, err
		}
	}
	b, err := l.loadBase(c)
	if err != nil {
		return nil, err
	}
	m := &Llama{base: b, layers: make([]llamaLayer, c.Layers)}
	var factors compute.Tensor
	if o.ropeFreq {
		if factors, err = l.ropeFactors(c, "rope_freqs.weight"); err != nil {
			return nil, err
		}
	}
	for i := range m.layers {
		L := &m.layers[i]
		if L.attnNorm, err = l.vector(blk(i, "attn_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if L.ffnNorm, err = l.vector(blk(i, "ffn_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		bias := o.bias || o.anyBias && l.has(blk(i, "attn_q.bias"))
		if L.attn, err = l.loadAttn(c, i, bias); err != nil {
			return nil, err
		}
		L.attn.window = c.Window
		L.attn.ropeFactors = factors
		if o.qkNorm {
			if L.attn.qNorm, err = l.vector(blk(i, "attn_q_norm.weight"), c.HeadDim); err != nil {
				return nil, err
			}
			if L.attn.kNorm, err = l.vector(blk(i, "attn_k_norm.weight"), c.HeadDim); err != nil {
				return nil, err
			}
		}
		if o.moe != nil {
			if L.moe, err = l.loadMoE(c, i, o.moe); err != nil {
				return nil, err
			}
		} else if L.ffn, err = l.loadFFN(c, i); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SizeContext implements ContextSizer: Phi-3's LongRoPE takes its long
// factors when the context exceeds the original training context, its
// short factors otherwise, as llama.cpp chooses them by its context size,
// which it rounds up to a multiple of 256 first (so a context of 3000 on a
// file trained at 2500 takes the long factors there too; Phi-3.5's
// original 4096 is a multiple).
func (m *Llama) SizeContext(n int) string {
	if m.longFactors == nil {
		return ""
	}
	f, chose := m.shortFactors, "longrope-short"
	if (n+255)/256*256 > m.cfg.RoPE.OrigCtx {
		f, chose = m.longFactors, "longrope-long"
	}
	for i := range m.layers {
		m.layers[i].attn.ropeFactors = f
	}
	return chose
}

// Forward implements Model.
func (m *Llama) Forward(batch *Batch, kv compute.KVStore) compute.Tensor {
	b, eps := m.b, m.cfg.NormEps
	s := m.scratch(len(batch.Tokens))
	m.prepareLoRA(batch)
	b.GetRows(s.x, m.embd, batch.Tokens)
	for i := range m.layers {
		L := &m.layers[i]
		b.RMSNorm(s.h, s.x, L.attnNorm, eps)
		m.attention(s, &L.attn, i, batch, kv)
		b.Add(s.x, s.x, s.attnOut)

		var x []float32 // s.x before the last feed-forward network, for outputFFN
		last := i == len(m.layers)-1 && L.moe == nil && m.lastFFN(batch)
		if last {
			x = make([]float32, len(batch.Tokens)*m.cfg.Dim)
			b.Download(s.x, x)
		}
		b.RMSNorm(s.h, s.x, L.ffnNorm, eps)
		if L.moe != nil {
			m.moeFFN(s, L.moe)
		} else {
			m.swiglu(s, &L.ffn)
		}
		b.Add(s.x, s.x, s.ffOut)
		if last {
			m.outputFFN(s, x, batch.Outputs, L.ffnNorm, &L.ffn)
		}
	}
	b.RMSNorm(s.out, s.x, m.outNorm, eps)
	return s.out
}
