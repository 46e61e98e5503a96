package model

import "github.com/ruvllm/ruvllm/engine/compute"

// Qwen3 is the llama block without biases, with an RMS norm over each
// query and key head before the rotation (neox layout), and a head size
// of its own (attention.key_length). Qwen3 MoE replaces the feed-forward
// network by 128 experts of which 8 run per token, their router weights
// renormalised. Both run Llama's forward pass.
func loadQwen3(l *loader) (Model, error) {
	c, err := l.config(compute.RoPENeox)
	if err != nil {
		return nil, err
	}
	c.Window = 0 // llama.cpp applies no sliding window to Qwen3
	o := llamaOptions{anyBias: true, qkNorm: true}
	if l.arch == "qwen3moe" {
		if o.moe, err = l.moeConfig(c, moeKeys{required: true, expertFF: true, normalize: true}); err != nil {
			return nil, err
		}
	}
	return loadLlamaLayers(l, c, o)
}

func init() {
	families["qwen3"] = loadQwen3
	families["qwen3moe"] = loadQwen3
}
