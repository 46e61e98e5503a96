package model

import "github.com/ruvllm/ruvllm/engine/compute"

// Qwen2MoE (Qwen1.5-MoE, Qwen2-57B-A14B) is Qwen2's attention with a
// mixture of experts whose router weights are used as they come out of
// the softmax (not renormalised), plus a shared expert that every token
// runs, scaled by sigmoid(ffn_gate_inp_shexp·x). Llama's forward pass.
func loadQwen2MoE(l *loader) (Model, error) {
	c, err := l.config(compute.RoPENeox)
	if err != nil {
		return nil, err
	}
	c.Window = 0
	mc, err := l.moeConfig(c, moeKeys{required: true, expertFF: true, shared: true})
	if err != nil {
		return nil, err
	}
	return loadLlamaLayers(l, c, llamaOptions{anyBias: true, moe: mc})
}

func init() { families["qwen2moe"] = loadQwen2MoE }
