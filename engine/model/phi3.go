package model

import (
	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/lora"
)

// Phi3 is a llama-style decoder whose files fuse the q/k/v projections into
// one matrix (attn_qkv) and the gate and up projections into one (ffn_up,
// gate rows first). The fused matrices are split into row ranges at load
// time, so the forward pass is Llama's. Rotary embeddings use the neox
// layout, with LongRoPE factors (Phi-3.5) when the file has them.
func loadPhi3(l *loader) (Model, error) {
	c, err := l.config(compute.RoPENeox)
	if err != nil {
		return nil, err
	}
	// llama.cpp turns Phi-3's sliding window off (its files' windows do
	// not say which layers use them).
	c.Window = 0
	b, err := l.loadBase(c)
	if err != nil {
		return nil, err
	}
	m := &Llama{base: b, layers: make([]llamaLayer, c.Layers)}
	// LongRoPE: llama.cpp takes the long factors when its context exceeds
	// the original training context (rope.scaling.original_context_length),
	// the short ones otherwise; SizeContext switches, the short ones until
	// then. rope.scaling.attn_factor, which these files carry, is in
	// cfg.RoPE.AttnFactor for either.
	factors, err := l.ropeFactors(c, "rope_factors_short.weight", "rope_freqs.weight")
	if err != nil {
		return nil, err
	}
	if m.longFactors, err = l.ropeFactors(c, "rope_factors_long.weight"); err != nil {
		return nil, err
	}
	m.shortFactors = factors
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	for i := range m.layers {
		L := &m.layers[i]
		if L.attnNorm, err = l.vector(blk(i, "attn_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if L.ffnNorm, err = l.vector(blk(i, "ffn_norm.weight"), c.Dim); err != nil {
			return nil, err
		}
		if l.has(blk(i, "attn_qkv.weight")) {
			qkv, err := l.rows(blk(i, "attn_qkv.weight"), c.Dim, qd, kvd, kvd)
			if err != nil {
				return nil, err
			}
			L.attn.q, L.attn.k, L.attn.v = qkv[0], qkv[1], qkv[2]
			// Only the output projection of a fused layout is adaptable.
			L.attn.names[3] = lora.Key(i, "attn_output")
			if L.attn.o, err = l.matrix(blk(i, "attn_output.weight"), c.Dim, qd); err != nil {
				return nil, err
			}
		} else if L.attn, err = l.loadAttn(c, i, false); err != nil {
			return nil, err
		}
		L.attn.window = c.Window
		L.attn.ropeFactors = factors
		if l.has(blk(i, "ffn_gate.weight")) {
			if L.ffn, err = l.loadFFN(c, i); err != nil {
				return nil, err
			}
			continue
		}
		gu, err := l.rows(blk(i, "ffn_up.weight"), c.Dim, c.FF, c.FF)
		if err != nil {
			return nil, err
		}
		L.ffn.gate, L.ffn.up = gu[0], gu[1]
		L.ffn.names[2] = lora.Key(i, "ffn_down")
		if L.ffn.down, err = l.matrix(blk(i, "ffn_down.weight"), c.Dim, c.FF); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func init() { families["phi3"] = loadPhi3 }
