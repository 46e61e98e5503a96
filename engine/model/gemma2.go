package model

import (
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
)

// Gemma2 scales the token embedding by √dim, normalises both before and
// after each attention and feed-forward block, soft-caps attention scores
// and final logits, alternates sliding-window (even layers) and global
// attention, and uses a GeGLU feed-forward network. The output projection
// is tied to the embedding. Gemma (v1) is the same without post-norms,
// caps or windows.
type Gemma2 struct {
	base
	layers []gemmaLayer
}

type gemmaLayer struct {
	attnNorm, postAttnNorm compute.Tensor
	ffnNorm, postFFNNorm   compute.Tensor
	attn                   attnWeights
	ffn                    ffnWeights
}

func init() {
	families["gemma2"] = loadGemma2
	families["gemma"] = loadGemma2
}

func loadGemma2(l *loader) (Model, error) {
	c, err := l.config(compute.RoPENeox)
	if err != nil {
		return nil, err
	}
	if c.AttnSoftcap, err = l.floatKey("attn_logit_softcapping", 0); err != nil {
		return nil, err
	}
	if c.FinalSoftcap, err = l.floatKey("final_logit_softcapping", 0); err != nil {
		return nil, err
	}
	for _, k := range []struct {
		name string
		v    float32
	}{{"attn_logit_softcapping", c.AttnSoftcap}, {"final_logit_softcapping", c.FinalSoftcap}} {
		if f := float64(k.v); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return nil, fmt.Errorf("metadata %s.%s = %g must be a finite number >= 0", l.arch, k.name, k.v)
		}
	}
	b, err := l.loadBase(c)
	if err != nil {
		return nil, err
	}
	m := &Gemma2{base: b, layers: make([]gemmaLayer, c.Layers)}
	// Gemma 2 27B scales queries by its embedding per head, the smaller
	// ones by the head size (query_pre_attn_scalar in the HF config).
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	if c.Layers == 46 {
		scale = float32(1 / math.Sqrt(float64(c.Dim/c.Heads)))
	}
	for i := range m.layers {
		L := &m.layers[i]
		if L.attnNorm, err = l.vector(blk(i, "attn_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if L.ffnNorm, err = l.vector(blk(i, "ffn_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if L.postAttnNorm, err = l.optionalVector(blk(i, "post_attention_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if L.postFFNNorm, err = l.optionalVector(blk(i, "post_ffw_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if L.attn, err = l.loadAttn(c, i, false); err != nil {
			return nil, err
		}
		L.attn.scale, L.attn.softcap = scale, c.AttnSoftcap
		if i%2 == 0 {
			L.attn.window = c.Window
		}
		if L.ffn, err = l.loadFFN(c, i); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Forward implements Model.
func (m *Gemma2) Forward(batch *Batch, kv compute.KVStore) compute.Tensor {
	b, eps := m.b, m.cfg.NormEps
	s := m.scratch(len(batch.Tokens))
	m.prepareLoRA(batch)
	b.GetRows(s.x, m.embd, batch.Tokens)
	b.Scale(s.x, float32(math.Sqrt(float64(m.cfg.Dim))))
	for i := range m.layers {
		L := &m.layers[i]
		b.RMSNorm(s.h, s.x, L.attnNorm, eps)
		m.attention(s, &L.attn, i, batch, kv)
		if L.postAttnNorm != nil {
			b.RMSNorm(s.attnOut, s.attnOut, L.postAttnNorm, eps)
		}
		b.Add(s.x, s.x, s.attnOut)

		b.RMSNorm(s.h, s.x, L.ffnNorm, eps)
		m.matmuls(s.h, [3]compute.Tensor{s.gate, s.up}, [3]compute.Tensor{L.ffn.gate, L.ffn.up}, L.ffn.names, 2)
		b.GeGLU(s.ff, s.gate, s.up)
		m.matmul(s.ffOut, s.ff, L.ffn.down, L.ffn.names[2])
		if L.postFFNNorm != nil {
			b.RMSNorm(s.ffOut, s.ffOut, L.postFFNNorm, eps)
		}
		b.Add(s.x, s.x, s.ffOut)
	}
	b.RMSNorm(s.out, s.x, m.outNorm, eps)
	return s.out
}
