package model

import "github.com/ruvllm/ruvllm/engine/compute"

// Llama covers Llama 2 and 3.x, Mistral and TinyLlama: pre-norm decoder
// blocks of grouped-query attention with rotary embeddings (adjacent-pair
// layout) and a SwiGLU feed-forward network.
type Llama struct {
	base
	layers []llamaLayer
}

type llamaLayer struct {
	attnNorm, ffnNorm compute.Tensor
	attn              attnWeights
	ffn               ffnWeights
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
	return loadLlamaLayers(l, c, false)
}

// loadLlamaLayers loads the llama layout; qwen2 shares it with biases.
func loadLlamaLayers(l *loader, c Config, withBias bool) (*Llama, error) {
	b, err := l.loadBase(c)
	if err != nil {
		return nil, err
	}
	m := &Llama{base: b, layers: make([]llamaLayer, c.Layers)}
	factors, err := l.ropeFactors(c, "rope_freqs.weight")
	if err != nil {
		return nil, err
	}
	for i := range m.layers {
		L := &m.layers[i]
		if L.attnNorm, err = l.vector(blk(i, "attn_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if L.ffnNorm, err = l.vector(blk(i, "ffn_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if L.attn, err = l.loadAttn(c, i, withBias); err != nil {
			return nil, err
		}
		L.attn.window = c.Window
		L.attn.ropeFactors = factors
		if L.ffn, err = l.loadFFN(c, i); err != nil {
			return nil, err
		}
	}
	return m, nil
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

		b.RMSNorm(s.h, s.x, L.ffnNorm, eps)
		m.swiglu(s, &L.ffn)
		b.Add(s.x, s.x, s.ffOut)
	}
	b.RMSNorm(s.out, s.x, m.outNorm, eps)
	return s.out
}
