// Package sample turns logits into the next token: greedy, temperature,
// top-k, top-p, min-p, typical-p, penalties, logit bias and seeded
// randomness, plus stop-sequence matching on streamed text.
package sample

// Params selects how the next token is drawn from the logits. The zero value
// is greedy decoding with no penalties.
type Params struct {
	// Temperature scales logits before sampling; 0 means greedy.
	Temperature float32 `json:"temperature"`
	// TopK keeps the K most likely tokens; 0 disables it.
	TopK int `json:"top_k,omitempty"`
	// TopP keeps the smallest set of tokens whose probability reaches P; 0 or 1 disables it.
	TopP float32 `json:"top_p,omitempty"`
	// MinP drops tokens less likely than MinP times the most likely one; 0 disables it.
	MinP float32 `json:"min_p,omitempty"`
	// TypicalP is locally typical sampling's mass; 0 or 1 disables it.
	TypicalP float32 `json:"typical_p,omitempty"`
	// RepeatPenalty divides positive (multiplies negative) logits of tokens
	// seen in the last RepeatLastN tokens; 0 or 1 disables it.
	RepeatPenalty float32 `json:"repeat_penalty,omitempty"`
	// PresencePenalty is subtracted once from every token seen in the window.
	PresencePenalty float32 `json:"presence_penalty,omitempty"`
	// FrequencyPenalty is subtracted once per occurrence in the window.
	FrequencyPenalty float32 `json:"frequency_penalty,omitempty"`
	// RepeatLastN is the penalty window in tokens; 0 means 64, -1 the whole history.
	RepeatLastN int `json:"repeat_last_n,omitempty"`
	// LogitBias is added to the logits of the given token ids.
	LogitBias map[int32]float32 `json:"logit_bias,omitempty"`
	// Seed makes sampling reproducible; the same seed gives the same tokens.
	// A Seed of 0 draws a random seed unless Seeded is set.
	Seed uint64 `json:"seed,omitempty"`
	// Seeded says Seed was chosen, so that 0 is a seed like any other (an
	// API client's "seed": 0 asks for reproducible output).
	Seeded bool `json:"seeded,omitempty"`
}

// SetSeed sets the seed a client asked for: 0 or more makes sampling
// reproducible (0 as much as any other), a negative one (llama.cpp's and
// Ollama's -1) leaves it to chance.
func (p *Params) SetSeed(seed int64) {
	if seed >= 0 {
		p.Seed, p.Seeded = uint64(seed), true
	}
}
