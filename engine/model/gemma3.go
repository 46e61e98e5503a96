package model

import (
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
)

// Gemma3 is Gemma 2's block (√dim-scaled embedding, norms before and after
// attention and feed-forward, GeGLU, tied output) without attention
// soft-capping, with per-head q/k RMS norms, and with local layers of
// sliding-window attention interleaved with global ones: in each group of
// attention.sliding_window_pattern layers (6) all but the last are local,
// or the pattern is a per-layer array. Local layers rotate with their own
// base (rope.freq_base_swa, 10000) and no scaling; global ones with
// rope.freq_base and the file's scaling (linear ×8 on the 4B and larger).
// Queries are multiplied by the attention scale before attention, as
// llama.cpp does. It runs Gemma 2's forward pass.
func loadGemma3(l *loader) (Model, error) {
	c, err := l.config(compute.RoPENeox)
	if err != nil {
		return nil, err
	}
	if err := checkHeads(l, c); err != nil {
		return nil, err
	}
	c.AttnSoftcap = 0
	if c.FinalSoftcap, err = l.floatKey("final_logit_softcapping", 0); err != nil {
		return nil, err
	}
	if err := checkFloat(l.arch+".final_logit_softcapping", c.FinalSoftcap, 0, 1e4); err != nil {
		return nil, err
	}
	if err := checkInt(l.arch+".attention.sliding_window", c.Window, 0, maxContext); err != nil {
		return nil, err
	}
	local, err := gemma3Local(l, c)
	if err != nil {
		return nil, err
	}
	localRoPE := c.RoPE
	if localRoPE.FreqBase, err = l.floatKey("rope.freq_base_swa", 10000); err != nil {
		return nil, err
	}
	localRoPE.FreqScale = 1
	if err := checkFloat(l.arch+".rope.freq_base_swa", localRoPE.FreqBase, 1.0001, 1e12); err != nil {
		return nil, err
	}
	b, err := l.loadBase(c)
	if err != nil {
		return nil, err
	}
	m := &Gemma2{base: b, layers: make([]gemmaLayer, c.Layers)}
	// Gemma 3 27B scales queries by its embedding per head, the others by
	// the head size (query_pre_attn_scalar).
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	if c.Layers == 62 {
		scale = float32(1 / math.Sqrt(float64(c.Dim/c.Heads)))
	}
	for i := range m.layers {
		L := &m.layers[i]
		for _, v := range []struct {
			dst  *compute.Tensor
			name string
			n    int
		}{
			{&L.attnNorm, "attn_norm.weight", c.Dim},
			{&L.postAttnNorm, "post_attention_norm.weight", c.Dim},
			{&L.ffnNorm, "ffn_norm.weight", c.Dim},
			{&L.postFFNNorm, "post_ffw_norm.weight", c.Dim},
			{&L.attn.qNorm, "attn_q_norm.weight", c.HeadDim},
			{&L.attn.kNorm, "attn_k_norm.weight", c.HeadDim},
		} {
			if *v.dst, err = l.vector(blk(i, v.name), v.n); err != nil {
				return nil, err
			}
		}
		qn, kn := L.attn.qNorm, L.attn.kNorm
		if L.attn, err = l.loadAttn(c, i, false); err != nil {
			return nil, err
		}
		L.attn.qNorm, L.attn.kNorm = qn, kn
		L.attn.qScale, L.attn.scale = scale, 1
		if local[i] {
			L.attn.window, L.attn.rope = c.Window, &localRoPE
		}
		if L.ffn, err = l.loadFFN(c, i); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// gemma3Local says which layers use sliding-window attention: none when
// the file has no window, else those the pattern marks (llama.cpp's
// set_swa_pattern: with n = the pattern, layer i is local unless
// i mod n = n−1; n = 0 makes every layer local).
func gemma3Local(l *loader, c Config) ([]bool, error) {
	local := make([]bool, c.Layers)
	if c.Window == 0 {
		return local, nil
	}
	key := l.arch + ".attention.sliding_window_pattern"
	if v, ok := l.f.Get(key); ok && v.IsArray() {
		if v.Len() != c.Layers {
			return nil, fmt.Errorf("metadata %s has %d entries for %d layers", key, v.Len(), c.Layers)
		}
		for i := range local {
			e, _ := v.Index(i)
			b, ok := e.Bool()
			if !ok {
				return nil, fmt.Errorf("metadata %s[%d] is not a bool", key, i)
			}
			local[i] = b
		}
		return local, nil
	}
	n, err := l.uintKey("attention.sliding_window_pattern", 6, false)
	if err != nil {
		return nil, err
	}
	if err := checkInt(key, n, 0, 1<<16); err != nil {
		return nil, err
	}
	for i := range local {
		local[i] = n == 0 || i%n < n-1
	}
	return local, nil
}

func init() { families["gemma3"] = loadGemma3 }
