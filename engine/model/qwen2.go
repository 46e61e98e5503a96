package model

import "github.com/ruvllm/ruvllm/engine/compute"

// Qwen2 is the llama block with biases on the q/k/v projections, rotary
// embeddings in the neox (half-split) layout, and usually an output
// projection tied to the token embedding. Its forward pass is Llama's.
func loadQwen2(l *loader) (Model, error) {
	c, err := qwen2Config(l)
	if err != nil {
		return nil, err
	}
	return loadLlamaLayers(l, c, llamaOptions{bias: true})
}

func qwen2Config(l *loader) (Config, error) {
	c, err := l.config(compute.RoPENeox)
	// Qwen2 GGUFs carry a sliding-window size that llama.cpp does not apply.
	c.Window = 0
	return c, err
}

func init() {
	families["qwen2"] = loadQwen2
	configs["qwen2"] = qwen2Config
}
