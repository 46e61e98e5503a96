package api

import (
	"context"
	"fmt"
	"math"
	"net/http"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/ipc"
)

// tokenEmbedder is a model that embeds prompts given as token ids and
// leaves the normalisation to its caller (llm.Model).
type tokenEmbedder interface {
	EmbedTokens(ctx context.Context, inputs [][]int32, opts llm.EmbedOptions) ([][]float32, int, error)
}

// maxEmbdNormalize bounds embd_normalize's p-norm: beyond it every power
// of a float32 magnitude under 1 is zero and over 1 infinite.
const maxEmbdNormalize = 64

// llamaEmbedding answers llama-server's POST /embedding: each prompt of
// "content" (or "input") tokenized as /completion reads a prompt (special
// tokens parsed, BOS added), embedded by the model's mean-pooled final
// hidden state and normalised as "embd_normalize" says, as
// [{"index": i, "embedding": [[...]]}, ...].
func (a *API) llamaEmbedding(w http.ResponseWriter, r *http.Request) {
	var body ipc.LlamaEmbeddingRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	field, raw := "input", body.Input
	if raw == nil {
		field, raw = "content", body.Content
	}
	if raw == nil || string(raw) == "null" {
		openAIError(w, badParam("content", "\"input\" or \"content\" is required"))
		return
	}
	prompt, err := ipc.ParseLlamaPrompt(raw, field)
	if err != nil {
		openAIError(w, &requestError{status: http.StatusBadRequest, msg: err.Error()})
		return
	}
	if n := len(prompt.Prompts); n > MaxEmbeddingInputs {
		openAIError(w, badParam(field, "holds %d prompts; at most %d are allowed in one request", n, MaxEmbeddingInputs))
		return
	}
	if err := checkEncodingFormat(body.EncodingFormat); err != nil {
		openAIError(w, err)
		return
	}
	norm := 2
	if body.EmbdNormalize != nil {
		norm = *body.EmbdNormalize
		if norm < -1 || norm > maxEmbdNormalize {
			openAIError(w, badParam("embd_normalize", "must be -1 (none), 0 (int16 range), 1 (taxicab), 2 (Euclidean) or a p-norm up to %d, not %d", maxEmbdNormalize, norm))
			return
		}
	}
	h, tok, ok := a.acquireTokenizer(w, r, body.Model) // a created model embeds with its base
	if !ok {
		return
	}
	defer h.Release()
	te, ok := h.Model.(tokenEmbedder)
	if !ok {
		openAIError(w, &requestError{status: http.StatusBadRequest, msg: "this model does not embed token ids"})
		return
	}
	inputs := make([][]int32, len(prompt.Prompts))
	for i, parts := range prompt.Prompts {
		param := field
		if len(prompt.Prompts) > 1 {
			param = fmt.Sprintf("%s[%d]", field, i)
		}
		if inputs[i], err = llamaPromptTokens(tok, parts, h.Model.Info().VocabSize, param, true, true); err != nil {
			openAIError(w, err)
			return
		}
		if len(inputs[i]) == 0 {
			openAIError(w, badParam(param, "must not be empty"))
			return
		}
	}
	vecs, _, err := a.recordEmbed(r, h, "embedding", func() ([][]float32, int, error) {
		return te.EmbedTokens(r.Context(), inputs, llm.EmbedOptions{})
	})
	if err != nil {
		openAIError(w, err)
		return
	}
	out := make([]ipc.LlamaEmbedding, len(vecs))
	for i, v := range vecs {
		out[i] = ipc.LlamaEmbedding{Index: i, Embedding: [][]float32{embdNormalize(v, norm)}}
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

// embdNormalize scales v in place as llama.cpp's common_embd_normalize
// does for mode: -1 leaves it, 0 scales its largest magnitude to 32760,
// 2 divides by its Euclidean norm, any other p by its p-norm (1: the
// taxicab norm). A zero vector stays zero.
func embdNormalize(v []float32, mode int) []float32 {
	var sum float64
	switch mode {
	case -1:
		return v
	case 0:
		for _, x := range v {
			sum = max(sum, math.Abs(float64(x)))
		}
		sum /= 32760
	case 2:
		for _, x := range v {
			sum += float64(x * x)
		}
		sum = math.Sqrt(sum)
	default: // m·(Σ(|x|/m)^p)^(1/p), which no power overflows
		var m float64
		for _, x := range v {
			m = max(m, math.Abs(float64(x)))
		}
		if m > 0 {
			for _, x := range v {
				sum += math.Pow(math.Abs(float64(x))/m, float64(mode))
			}
			sum = m * math.Pow(sum, 1/float64(mode))
		}
	}
	var scale float32
	if sum > 0 {
		scale = float32(1 / sum)
	}
	for i := range v {
		v[i] *= scale
	}
	return v
}
