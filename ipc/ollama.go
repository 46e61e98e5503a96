package ipc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Duration is Ollama's keep_alive: a Go duration string ("5m") or a number
// of seconds; negative keeps the model loaded forever.
type Duration struct {
	time.Duration
	Set bool
}

// UnmarshalJSON accepts "5m", "-1", 300 or -1.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		d.Duration, d.Set = time.Duration(x*float64(time.Second)), true
	case string:
		if n, err := strconv.ParseFloat(x, 64); err == nil {
			d.Duration, d.Set = time.Duration(n*float64(time.Second)), true
			return nil
		}
		p, err := time.ParseDuration(x)
		if err != nil {
			return fmt.Errorf("keep_alive %q: %w", x, err)
		}
		d.Duration, d.Set = p, true
	case nil:
	default:
		return fmt.Errorf("keep_alive must be a duration string or seconds")
	}
	return nil
}

// MarshalJSON writes the duration as seconds.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Seconds()) }

// OllamaOptions are Ollama's model options ("options" in requests).
type OllamaOptions struct {
	Temperature      *float32     `json:"temperature,omitempty"`
	TopK             *int         `json:"top_k,omitempty"`
	TopP             *float32     `json:"top_p,omitempty"`
	MinP             *float32     `json:"min_p,omitempty"`
	TypicalP         *float32     `json:"typical_p,omitempty"`
	RepeatPenalty    *float32     `json:"repeat_penalty,omitempty"`
	RepeatLastN      *int         `json:"repeat_last_n,omitempty"`
	PresencePenalty  float32      `json:"presence_penalty,omitempty"`
	FrequencyPenalty float32      `json:"frequency_penalty,omitempty"`
	Seed             *uint64      `json:"seed,omitempty"`
	NumPredict       *int         `json:"num_predict,omitempty"`
	NumCtx           int          `json:"num_ctx,omitempty"`
	Stop             []string     `json:"stop,omitempty"`
	Adapters         []AdapterRef `json:"adapters,omitempty"`
	// Speculation is ruvllm's addition, as in the OpenAI requests.
	Speculation string `json:"speculation,omitempty"`
}

// OllamaChatRequest is the body of POST /api/chat.
type OllamaChatRequest struct {
	Model     string         `json:"model"`
	Messages  []Message      `json:"messages"`
	Stream    *bool          `json:"stream,omitempty"`
	Format    any            `json:"format,omitempty"`
	Options   *OllamaOptions `json:"options,omitempty"`
	KeepAlive *Duration      `json:"keep_alive,omitempty"`
}

// OllamaGenerateRequest is the body of POST /api/generate.
type OllamaGenerateRequest struct {
	Model     string         `json:"model"`
	Prompt    string         `json:"prompt"`
	System    string         `json:"system,omitempty"`
	Template  string         `json:"template,omitempty"`
	Raw       bool           `json:"raw,omitempty"`
	Stream    *bool          `json:"stream,omitempty"`
	Format    any            `json:"format,omitempty"`
	Options   *OllamaOptions `json:"options,omitempty"`
	KeepAlive *Duration      `json:"keep_alive,omitempty"`
}

// OllamaMetrics are the timing fields of Ollama's final response object,
// in nanoseconds.
type OllamaMetrics struct {
	TotalDuration      int64 `json:"total_duration,omitempty"`
	LoadDuration       int64 `json:"load_duration,omitempty"`
	PromptEvalCount    int   `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64 `json:"prompt_eval_duration,omitempty"`
	EvalCount          int   `json:"eval_count,omitempty"`
	EvalDuration       int64 `json:"eval_duration,omitempty"`
	// PromptCachedCount is ruvllm's addition: prompt tokens served from
	// the shared prefix cache.
	PromptCachedCount int `json:"prompt_cached_count,omitempty"`
	// DraftCount, DraftAcceptedCount and DraftVerifyCount are ruvllm's
	// additions for speculative decoding: draft tokens verified, those
	// accepted, and the steps that verified them.
	DraftCount         int `json:"draft_count,omitempty"`
	DraftAcceptedCount int `json:"draft_accepted_count,omitempty"`
	DraftVerifyCount   int `json:"draft_verify_count,omitempty"`
}

// OllamaChatResponse is one NDJSON line of /api/chat (or the whole answer).
type OllamaChatResponse struct {
	Model      string  `json:"model"`
	CreatedAt  string  `json:"created_at"`
	Message    Message `json:"message"`
	Done       bool    `json:"done"`
	DoneReason string  `json:"done_reason,omitempty"`
	OllamaMetrics
	// RequestID (a ruvllm extension, on the final object) names the reply
	// in POST /v1/feedback.
	RequestID string `json:"request_id,omitempty"`
}

// OllamaGenerateResponse is one NDJSON line of /api/generate.
type OllamaGenerateResponse struct {
	Model      string `json:"model"`
	CreatedAt  string `json:"created_at"`
	Response   string `json:"response"`
	Done       bool   `json:"done"`
	DoneReason string `json:"done_reason,omitempty"`
	OllamaMetrics
	// RequestID (a ruvllm extension, on the final object) names the reply
	// in POST /v1/feedback.
	RequestID string `json:"request_id,omitempty"`
}

// OllamaModelDetails describes a model in /api/tags and /api/ps.
type OllamaModelDetails struct {
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// OllamaModel is an entry of /api/tags or /api/ps.
type OllamaModel struct {
	Name       string             `json:"name"`
	Model      string             `json:"model"`
	ModifiedAt string             `json:"modified_at,omitempty"`
	Size       int64              `json:"size"`
	Digest     string             `json:"digest"`
	Details    OllamaModelDetails `json:"details"`
	ExpiresAt  string             `json:"expires_at,omitempty"`
	SizeVRAM   int64              `json:"size_vram"`
}

// OllamaTags answers GET /api/tags; OllamaPs answers GET /api/ps.
type OllamaTags struct {
	Models []OllamaModel `json:"models"`
}

// OllamaShowRequest is the body of POST /api/show.
type OllamaShowRequest struct {
	Model string `json:"model"`
	Name  string `json:"name,omitempty"`
}

// OllamaShowResponse answers POST /api/show.
type OllamaShowResponse struct {
	Template  string             `json:"template"`
	Details   OllamaModelDetails `json:"details"`
	ModelInfo map[string]any     `json:"model_info"`
}

// OllamaEmbedRequest is the body of POST /api/embed.
type OllamaEmbedRequest struct {
	Model string         `json:"model"`
	Input EmbeddingInput `json:"input"`
}

// OllamaEmbedResponse answers POST /api/embed.
type OllamaEmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}
