package ipc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// This file holds the wire types of llama.cpp's own server API (llama-server's
// /completion, /infill, /tokenize, /detokenize and /props), which editor
// plugins such as llama.vim and llama.vscode, SillyTavern and many scripts
// speak. Field names and defaults are llama-server's.

// LlamaPromptPart is one element of a llama-server prompt: a piece of text
// (tokenized, special tokens parsed) or a token id.
type LlamaPromptPart struct {
	Text    string
	Token   int64
	IsToken bool
}

// LlamaPrompt is llama-server's "prompt": one prompt (a string, an array of
// token ids, or an array mixing strings and token ids), or several (an
// array of those, strings and {"prompt_string": ...} objects included,
// with no token id at its top level), as llama-server reads it.
type LlamaPrompt struct {
	Prompts [][]LlamaPromptPart
	// Set says the field was present.
	Set bool
}

// Flat is every prompt's parts in order (/tokenize reads an array of
// strings as one text).
func (p LlamaPrompt) Flat() []LlamaPromptPart {
	var out []LlamaPromptPart
	for _, q := range p.Prompts {
		out = append(out, q...)
	}
	return out
}

// UnmarshalJSON reads the forms llama-server's tokenize_input_prompts
// takes.
func (p *LlamaPrompt) UnmarshalJSON(b []byte) error {
	q, err := ParseLlamaPrompt(b, "prompt")
	*p = q
	return err
}

// LlamaContent is /tokenize's "content": a prompt in any form, whose
// errors name the field "content".
type LlamaContent struct{ LlamaPrompt }

// UnmarshalJSON reads the forms a prompt takes.
func (c *LlamaContent) UnmarshalJSON(b []byte) error {
	p, err := ParseLlamaPrompt(b, "content")
	c.LlamaPrompt = p
	return err
}

// ParseLlamaPrompt reads a llama-server prompt held by the field named
// field (/completion's "prompt", /embedding's "content" or "input"), in
// every form tokenize_input_prompts takes; errors name the field.
func ParseLlamaPrompt(b []byte, field string) (LlamaPrompt, error) {
	p := LlamaPrompt{Set: true}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			return p, fmt.Errorf("field %q must be a string, an array of strings and token ids, or an array of prompts", field)
		}
		numbers := false
		for _, it := range items {
			if it = bytes.TrimSpace(it); len(it) > 0 && (it[0] == '-' || (it[0] >= '0' && it[0] <= '9')) {
				numbers = true
				break
			}
		}
		if !numbers { // an array of prompts
			if len(items) == 0 {
				return p, fmt.Errorf("field %q must not be empty", field)
			}
			for i, it := range items {
				parts, err := llamaSubprompt(it, fmt.Sprintf("%s[%d]", field, i))
				if err != nil {
					return p, err
				}
				p.Prompts = append(p.Prompts, parts)
			}
			return p, nil
		}
	}
	parts, err := llamaSubprompt(b, field)
	if err != nil {
		return p, err
	}
	p.Prompts = [][]LlamaPromptPart{parts}
	return p, nil
}

// llamaSubprompt reads one prompt: a string, an array of strings and token
// ids, or an object holding one as "prompt_string".
func llamaSubprompt(b json.RawMessage, at string) ([]LlamaPromptPart, error) {
	b = bytes.TrimSpace(b)
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return []LlamaPromptPart{{Text: s}}, nil
	}
	if len(b) > 0 && b[0] == '{' {
		var obj struct {
			PromptString   json.RawMessage `json:"prompt_string"`
			MultimodalData json.RawMessage `json:"multimodal_data"`
		}
		if err := json.Unmarshal(b, &obj); err != nil || obj.PromptString == nil {
			return nil, fmt.Errorf(`field %q: an object prompt must hold "prompt_string"`, at)
		}
		if m := bytes.TrimSpace(obj.MultimodalData); len(m) > 0 && string(m) != "null" && string(m) != "[]" {
			return nil, fmt.Errorf(`field "%s.multimodal_data": this model takes no images or audio`, at)
		}
		return llamaSubprompt(obj.PromptString, at+".prompt_string")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, fmt.Errorf(`field %q must be a string, an array of strings and token ids, or an object with "prompt_string"`, at)
	}
	var parts []LlamaPromptPart
	for i, raw := range items {
		if err := json.Unmarshal(raw, &s); err == nil {
			parts = append(parts, LlamaPromptPart{Text: s})
			continue
		}
		var id int64
		if err := json.Unmarshal(raw, &id); err != nil {
			return nil, fmt.Errorf(`field "%s[%d]" must be a string or a token id, not %s`, at, i, bytes.TrimSpace(raw))
		}
		parts = append(parts, LlamaPromptPart{Token: id, IsToken: true})
	}
	return parts, nil
}

// LlamaCompletionRequest is the body of POST /completion (and /infill,
// which adds LlamaInfillFields). Pointer fields distinguish absent (the
// llama-server default) from zero.
type LlamaCompletionRequest struct {
	// Model is ruvllm's addition: which model answers (empty: the default).
	Model  string      `json:"model,omitempty"`
	Prompt LlamaPrompt `json:"prompt"`

	Temperature      *float32 `json:"temperature,omitempty"`
	DynatempRange    float32  `json:"dynatemp_range,omitempty"`
	TopK             *int     `json:"top_k,omitempty"`
	TopP             *float32 `json:"top_p,omitempty"`
	MinP             *float32 `json:"min_p,omitempty"`
	TypicalP         *float32 `json:"typical_p,omitempty"`
	RepeatPenalty    *float32 `json:"repeat_penalty,omitempty"`
	RepeatLastN      *int     `json:"repeat_last_n,omitempty"`
	PresencePenalty  float32  `json:"presence_penalty,omitempty"`
	FrequencyPenalty float32  `json:"frequency_penalty,omitempty"`
	DryMultiplier    float32  `json:"dry_multiplier,omitempty"`
	XTCProbability   float32  `json:"xtc_probability,omitempty"`
	TopNSigma        float32  `json:"top_n_sigma,omitempty"`
	Mirostat         int      `json:"mirostat,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	// Samplers names the samplers in use; one left out is off.
	Samplers []string `json:"samplers,omitempty"`
	// LogitBias is [[id or text, bias or false], ...] or {"id": bias}.
	LogitBias json.RawMessage `json:"logit_bias,omitempty"`

	// NPredict bounds the generated tokens (-1: no bound; 0: evaluate the
	// prompt only). MaxTokens is its other name.
	NPredict  *int     `json:"n_predict,omitempty"`
	MaxTokens *int     `json:"max_tokens,omitempty"`
	Stop      StopList `json:"stop,omitempty"`
	IgnoreEOS bool     `json:"ignore_eos,omitempty"`
	// NIndent stops at a new line indented less than this (code
	// completion); TMaxPredictMS stops at a new line once generation has
	// taken this long.
	NIndent       int `json:"n_indent,omitempty"`
	TMaxPredictMS int `json:"t_max_predict_ms,omitempty"`
	NKeep         int `json:"n_keep,omitempty"`
	NCmpl         int `json:"n_cmpl,omitempty"`

	Grammar    string          `json:"grammar,omitempty"`
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
	// ResponseFormat is the OpenAI form of a JSON constraint, which
	// llama-server takes here too.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`

	NProbs            int      `json:"n_probs,omitempty"`
	PostSamplingProbs bool     `json:"post_sampling_probs,omitempty"`
	Stream            bool     `json:"stream,omitempty"`
	ReturnTokens      bool     `json:"return_tokens,omitempty"`
	TimingsPerToken   bool     `json:"timings_per_token,omitempty"`
	ResponseFields    []string `json:"response_fields,omitempty"`
	// CachePrompt, IDSlot and NCacheReuse are accepted: ruvllm's prefix
	// cache always reuses a computed prefix, bit for bit, in any slot.
	CachePrompt *bool `json:"cache_prompt,omitempty"`
	IDSlot      *int  `json:"id_slot,omitempty"`
	NCacheReuse int   `json:"n_cache_reuse,omitempty"`
	// Lora is llama-server's per-request adapter list: each adapter by its
	// id in GET /lora-adapters, at a scale (one not listed is not
	// applied). Adapters names them the ruvllm way instead; a request
	// sends one or the other.
	Lora     []LlamaLora `json:"lora,omitempty"`
	Adapters AdapterRefs `json:"adapters,omitempty"`
}

// LlamaInfillRequest is the body of POST /infill: a completion whose prompt
// is built from the code around the insertion point.
type LlamaInfillRequest struct {
	LlamaCompletionRequest
	InputPrefix *string `json:"input_prefix"`
	InputSuffix *string `json:"input_suffix"`
	// InputExtra are other files' chunks placed before the prefix.
	InputExtra []LlamaInfillChunk `json:"input_extra,omitempty"`
}

// LlamaInfillChunk is a chunk of another file given as context.
type LlamaInfillChunk struct {
	Filename string  `json:"filename,omitempty"`
	Text     *string `json:"text"`
}

// LlamaTimings are llama-server's timings of one completion.
type LlamaTimings struct {
	CacheN              int     `json:"cache_n"`
	PromptN             int     `json:"prompt_n"`
	PromptMS            float64 `json:"prompt_ms"`
	PromptPerTokenMS    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMS         float64 `json:"predicted_ms"`
	PredictedPerTokenMS float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
	DraftN              int     `json:"draft_n,omitempty"`
	DraftNAccepted      int     `json:"draft_n_accepted,omitempty"`
}

// LlamaTokenProb is a token with its log-probability (and the bytes of its
// text), in completion_probabilities.
type LlamaTokenProb struct {
	ID      int32   `json:"id"`
	Token   string  `json:"token"`
	Bytes   []int   `json:"bytes"`
	Logprob float32 `json:"logprob"`
	// TopLogprobs are the most likely tokens at this position.
	TopLogprobs []LlamaTokenProb `json:"top_logprobs,omitempty"`
}

// LlamaGenerationSettings are the settings a completion ran with.
type LlamaGenerationSettings struct {
	NCtx             int      `json:"n_ctx"`
	NPredict         int      `json:"n_predict"`
	Model            string   `json:"model"`
	Seed             uint64   `json:"seed"`
	Temperature      float32  `json:"temperature"`
	TopK             int      `json:"top_k"`
	TopP             float32  `json:"top_p"`
	MinP             float32  `json:"min_p"`
	TypicalP         float32  `json:"typical_p"`
	RepeatLastN      int      `json:"repeat_last_n"`
	RepeatPenalty    float32  `json:"repeat_penalty"`
	PresencePenalty  float32  `json:"presence_penalty"`
	FrequencyPenalty float32  `json:"frequency_penalty"`
	Stop             []string `json:"stop"`
	NKeep            int      `json:"n_keep"`
	IgnoreEOS        bool     `json:"ignore_eos"`
	Stream           bool     `json:"stream"`
	NProbs           int      `json:"n_probs"`
	NIndent          int      `json:"n_indent"`
	TMaxPredictMS    int      `json:"t_max_predict_ms"`
	Grammar          string   `json:"grammar"`
	Samplers         []string `json:"samplers"`
}

// LlamaCompletionResponse is /completion's answer: the whole reply, or
// with stream one event per token (Content, Tokens, Stop false) and a last
// one with Stop true and everything else.
type LlamaCompletionResponse struct {
	Index           int     `json:"index"`
	Content         string  `json:"content"`
	Tokens          []int32 `json:"tokens"`
	IDSlot          int     `json:"id_slot"`
	Stop            bool    `json:"stop"`
	Model           string  `json:"model,omitempty"`
	TokensPredicted int     `json:"tokens_predicted"`
	TokensEvaluated int     `json:"tokens_evaluated"`
	// The rest are on the final object only.
	GenerationSettings *LlamaGenerationSettings `json:"generation_settings,omitempty"`
	Prompt             *string                  `json:"prompt,omitempty"`
	HasNewLine         *bool                    `json:"has_new_line,omitempty"`
	Truncated          *bool                    `json:"truncated,omitempty"`
	// StopType is "eos", "limit" or "word" ("none" while generating).
	StopType     string        `json:"stop_type,omitempty"`
	StoppingWord *string       `json:"stopping_word,omitempty"`
	TokensCached *int          `json:"tokens_cached,omitempty"`
	Timings      *LlamaTimings `json:"timings,omitempty"`
	// Probabilities are each generated token's (n_probs).
	Probabilities []LlamaTokenProb `json:"completion_probabilities,omitempty"`
	// RequestID (ruvllm's, on the final object) names the reply in POST
	// /v1/feedback.
	RequestID string `json:"request_id,omitempty"`
}

// LlamaTokenizeRequest is the body of POST /tokenize.
type LlamaTokenizeRequest struct {
	Model        string       `json:"model,omitempty"`
	Content      LlamaContent `json:"content"`
	AddSpecial   bool         `json:"add_special,omitempty"`
	ParseSpecial *bool        `json:"parse_special,omitempty"`
	WithPieces   bool         `json:"with_pieces,omitempty"`
}

// LlamaTokenPiece is a token with its text: a string when it is valid
// UTF-8, else its bytes.
type LlamaTokenPiece struct {
	ID    int32 `json:"id"`
	Piece any   `json:"piece"`
}

// LlamaTokenizeResponse answers /tokenize: Tokens holds ids, or
// LlamaTokenPiece values with with_pieces.
type LlamaTokenizeResponse struct {
	Tokens []any `json:"tokens"`
}

// LlamaDetokenizeRequest is the body of POST /detokenize.
type LlamaDetokenizeRequest struct {
	Model  string  `json:"model,omitempty"`
	Tokens []int64 `json:"tokens"`
}

// LlamaDetokenizeResponse answers /detokenize.
type LlamaDetokenizeResponse struct {
	Content string `json:"content"`
}

// LlamaProps answers GET /props: the model's context, its chat template
// and /completion's default settings.
type LlamaProps struct {
	DefaultGenerationSettings LlamaSlotSettings `json:"default_generation_settings"`
	TotalSlots                int               `json:"total_slots"`
	ModelPath                 string            `json:"model_path"`
	ChatTemplate              string            `json:"chat_template"`
	Modalities                map[string]bool   `json:"modalities"`
	BuildInfo                 string            `json:"build_info"`
	IsSleeping                bool              `json:"is_sleeping"`
}

// LlamaSlotSettings are a slot's context size and default parameters.
type LlamaSlotSettings struct {
	NCtx   int                     `json:"n_ctx"`
	Params LlamaGenerationSettings `json:"params"`
}

// LlamaEmbeddingRequest is the body of llama-server's POST /embedding (and
// /embeddings): the text to embed in "content" (or "input"), in any form
// a /completion prompt takes, one vector per prompt.
type LlamaEmbeddingRequest struct {
	// Model is ruvllm's addition: which model embeds (empty: the default).
	Model   string          `json:"model,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	// EmbdNormalize is how each vector is normalised: -1 not at all, 0
	// scaled so that its largest magnitude is 32760 (int16 range), 1 the
	// taxicab norm, 2 the Euclidean norm (the default), larger p the p-norm.
	EmbdNormalize *int `json:"embd_normalize,omitempty"`
	// EncodingFormat is accepted as llama-server takes it ("float" or
	// "base64"); this endpoint always answers with numbers, as there.
	EncodingFormat string `json:"encoding_format,omitempty"`
}

// LlamaEmbedding is one prompt's answer from POST /embedding: its pooled
// embedding, as the only row of Embedding (llama-server's shape for a
// model with pooling).
type LlamaEmbedding struct {
	Index     int         `json:"index"`
	Embedding [][]float32 `json:"embedding"`
}

// LlamaLoraAdapter is one entry of GET /lora-adapters: an installed
// adapter and the id a request's "lora" names it by.
type LlamaLoraAdapter struct {
	ID int `json:"id"`
	// Name is ruvllm's name for the adapter (what "adapters" takes).
	Name string `json:"name"`
	Path string `json:"path"`
	// Scale is what a request applies when it does not list the adapter:
	// always 0 here, where adapters are applied per request.
	Scale        float32 `json:"scale"`
	TaskName     string  `json:"task_name"`
	PromptPrefix string  `json:"prompt_prefix"`
}

// LlamaLora is one entry of a request's "lora": an adapter by its id in
// GET /lora-adapters and the scale to apply it at.
type LlamaLora struct {
	ID    *int     `json:"id"`
	Scale *float32 `json:"scale"`
}
