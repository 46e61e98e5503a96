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

// OllamaOptions are Ollama's model options ("options" in requests). A Seed
// of 0 or more makes sampling reproducible (0 included); a negative one, as
// Ollama's default -1, draws a random seed.
type OllamaOptions struct {
	Temperature      *float32 `json:"temperature,omitempty"`
	TopK             *int     `json:"top_k,omitempty"`
	TopP             *float32 `json:"top_p,omitempty"`
	MinP             *float32 `json:"min_p,omitempty"`
	TypicalP         *float32 `json:"typical_p,omitempty"`
	RepeatPenalty    *float32 `json:"repeat_penalty,omitempty"`
	RepeatLastN      *int     `json:"repeat_last_n,omitempty"`
	PresencePenalty  float32  `json:"presence_penalty,omitempty"`
	FrequencyPenalty float32  `json:"frequency_penalty,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	NumPredict       *int     `json:"num_predict,omitempty"`
	// NumCtx bounds this request's context (prompt and reply); a prompt
	// longer than it is truncated, keeping its end.
	NumCtx   int         `json:"num_ctx,omitempty"`
	Stop     []string    `json:"stop,omitempty"`
	Adapters AdapterRefs `json:"adapters,omitempty"`
	// Options that would change the output but have no support here; the
	// daemon refuses them by name unless they are at their neutral value.
	Mirostat        *int     `json:"mirostat,omitempty"`
	MirostatTau     *float32 `json:"mirostat_tau,omitempty"`
	MirostatEta     *float32 `json:"mirostat_eta,omitempty"`
	TFSZ            *float32 `json:"tfs_z,omitempty"`
	PenalizeNewline *bool    `json:"penalize_newline,omitempty"`
	NumKeep         *int     `json:"num_keep,omitempty"`
	// Speculation is ruvllm's addition, as in the OpenAI requests.
	Speculation string `json:"speculation,omitempty"`
}

// OllamaChatRequest is the body of POST /api/chat.
type OllamaChatRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Stream   *bool     `json:"stream,omitempty"`
	// Format is "json" or a JSON Schema the reply follows.
	Format    json.RawMessage `json:"format,omitempty"`
	Options   *OllamaOptions  `json:"options,omitempty"`
	KeepAlive *Duration       `json:"keep_alive,omitempty"`
	// Think turns a thinking model's reasoning on (true) or off (false);
	// its reasoning comes back as message.thinking.
	Think any `json:"think,omitempty"`
	// Tools are the functions the model may call.
	Tools []json.RawMessage `json:"tools,omitempty"`
	OllamaOverflow
	OllamaLogprobFields
}

// OllamaLogprobFields ask for the generated tokens' log-probabilities:
// Logprobs for each token's own, TopLogprobs (0-20, implying Logprobs)
// for that many of the most likely tokens at each position too.
type OllamaLogprobFields struct {
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
}

// OllamaTokenLogprob is a token's text, log-probability and bytes.
type OllamaTokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"`
}

// OllamaLogprob is a generated token's log-probability, with the most
// likely tokens at its position when top_logprobs asked for them.
type OllamaLogprob struct {
	OllamaTokenLogprob
	TopLogprobs []OllamaTokenLogprob `json:"top_logprobs,omitempty"`
}

// OllamaOverflow are the context overflow fields of Ollama's chat and
// generate bodies. Truncate and Shift are Ollama's own (both default
// true); ContextOverflow is ruvllm's (see SamplingFields) and, when set,
// takes their place.
type OllamaOverflow struct {
	// Truncate drops the oldest messages (tokens) of a prompt that does
	// not fit; false makes such a prompt an error.
	Truncate *bool `json:"truncate,omitempty"`
	// Shift lets a reply that fills the context go on after the context
	// is shifted; false ends it (done_reason "length").
	Shift           *bool  `json:"shift,omitempty"`
	ContextOverflow string `json:"context_overflow,omitempty"`
}

// OllamaGenerateRequest is the body of POST /api/generate.
type OllamaGenerateRequest struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	// Suffix is the text after the insertion point (fill-in-the-middle).
	Suffix   string   `json:"suffix,omitempty"`
	Images   []string `json:"images,omitempty"`
	Think    any      `json:"think,omitempty"`
	System   string   `json:"system,omitempty"`
	Template string   `json:"template,omitempty"`
	Raw      bool     `json:"raw,omitempty"`
	Stream   *bool    `json:"stream,omitempty"`
	// Format is "json" or a JSON Schema the reply follows.
	Format    json.RawMessage `json:"format,omitempty"`
	Options   *OllamaOptions  `json:"options,omitempty"`
	KeepAlive *Duration       `json:"keep_alive,omitempty"`
	// Context continues an earlier exchange: the context a previous
	// response returned, whose tokens come before this prompt.
	Context []int `json:"context,omitempty"`
	OllamaOverflow
	OllamaLogprobFields
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
	// ContextOverflow (ruvllm's, on the final object) says what was left
	// out to fit the context; absent when nothing was.
	ContextOverflow *OverflowUsage `json:"context_overflow,omitempty"`
}

// OllamaChatResponse is one NDJSON line of /api/chat (or the whole answer).
type OllamaChatResponse struct {
	Model      string  `json:"model"`
	CreatedAt  string  `json:"created_at"`
	Message    Message `json:"message"`
	Done       bool    `json:"done"`
	DoneReason string  `json:"done_reason,omitempty"`
	// Logprobs are the log-probabilities of this object's tokens.
	Logprobs []OllamaLogprob `json:"logprobs,omitempty"`
	OllamaMetrics
	// RequestID (a ruvllm extension, on the final object) names the reply
	// in POST /v1/feedback.
	RequestID string `json:"request_id,omitempty"`
}

// OllamaGenerateResponse is one NDJSON line of /api/generate.
type OllamaGenerateResponse struct {
	Model     string `json:"model"`
	CreatedAt string `json:"created_at"`
	Response  string `json:"response"`
	// Thinking is a thinking model's reasoning (apart from Response).
	Thinking   string `json:"thinking,omitempty"`
	Done       bool   `json:"done"`
	DoneReason string `json:"done_reason,omitempty"`
	// Context (on the final object, unless the prompt was raw) is the
	// exchange's tokens: the prompt as computed and the reply. Send it
	// back as the next request's context to continue.
	Context []int `json:"context,omitempty"`
	// Logprobs are the log-probabilities of this object's tokens.
	Logprobs []OllamaLogprob `json:"logprobs,omitempty"`
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
	Model   string `json:"model"`
	Name    string `json:"name,omitempty"`
	Verbose bool   `json:"verbose,omitempty"`
}

// OllamaShowResponse answers POST /api/show.
type OllamaShowResponse struct {
	Modelfile  string             `json:"modelfile"`
	Parameters string             `json:"parameters,omitempty"`
	Template   string             `json:"template"`
	System     string             `json:"system,omitempty"`
	Details    OllamaModelDetails `json:"details"`
	ModelInfo  map[string]any     `json:"model_info"`
	// Capabilities: "completion", "embedding", "tools", "insert"
	// (fill-in-the-middle) and "thinking" (a thinking model's template).
	Capabilities []string `json:"capabilities"`
	ModifiedAt   string   `json:"modified_at,omitempty"`
	// License is a created model's licenses, one after another.
	License string `json:"license,omitempty"`
	// Messages are a created model's MESSAGE turns (Ollama's field),
	// which its chats start with.
	Messages []Message `json:"messages,omitempty"`
}

// OllamaEmbeddingsRequest is the body of the legacy POST /api/embeddings.
type OllamaEmbeddingsRequest struct {
	Model     string         `json:"model"`
	Prompt    string         `json:"prompt"`
	Options   *OllamaOptions `json:"options,omitempty"`
	KeepAlive *Duration      `json:"keep_alive,omitempty"`
}

// OllamaEmbeddingsResponse answers POST /api/embeddings.
type OllamaEmbeddingsResponse struct {
	Embedding []float32 `json:"embedding"`
}

// CopyRequest is the body of POST /api/copy.
type CopyRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// CreateRequest is the body of POST /api/create: a new model named Model
// made from another model (From: a model name or a GGUF path on this
// machine), an uploaded GGUF blob (Files), or a Modelfile (FROM, ADAPTER,
// SYSTEM, TEMPLATE, PARAMETER, MESSAGE, LICENSE), with a system prompt,
// a prompt template, default parameters and adapters.
type CreateRequest struct {
	Model      string            `json:"model"`
	Name       string            `json:"name,omitempty"` // older clients
	From       string            `json:"from,omitempty"`
	Files      map[string]string `json:"files,omitempty"`    // file name → "sha256:<hex>" of an uploaded blob
	Adapters   map[string]string `json:"adapters,omitempty"` // file name → "sha256:<hex>" of an uploaded blob
	Template   string            `json:"template,omitempty"`
	System     string            `json:"system,omitempty"`
	Parameters map[string]any    `json:"parameters,omitempty"`
	Messages   []Message         `json:"messages,omitempty"`
	License    any               `json:"license,omitempty"`
	Modelfile  string            `json:"modelfile,omitempty"`
	Quantize   string            `json:"quantize,omitempty"`
	Stream     *bool             `json:"stream,omitempty"`
}

// ProgressStatus is one line of a create, copy or push stream.
type ProgressStatus struct {
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// Total and Completed measure a long step (quantizing: weights).
	Total     int64 `json:"total,omitempty"`
	Completed int64 `json:"completed,omitempty"`
}

// ModelManifest is a model made with POST /api/create (or copied): another
// model or a GGUF file with defaults of its own. The daemon keeps it in
// its state store; requests naming it run its base with these defaults.
type ModelManifest struct {
	Name string `json:"name"`
	// From is the base: a model name the daemon serves, or a GGUF path.
	From       string         `json:"from"`
	System     string         `json:"system,omitempty"`
	Template   string         `json:"template,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Adapters   []AdapterRef   `json:"adapters,omitempty"`
	Messages   []Message      `json:"messages,omitempty"`
	License    []string       `json:"license,omitempty"`
	Created    time.Time      `json:"created"`
}

// OllamaEmbedRequest is the body of POST /api/embed.
type OllamaEmbedRequest struct {
	Model string         `json:"model"`
	Input EmbeddingInput `json:"input"`
	// Dimensions keeps the first n values of each vector, scaled back to
	// unit length.
	Dimensions *int `json:"dimensions,omitempty"`
	// Truncate (default true) keeps the first context-length tokens of a
	// longer input; false makes such an input an error.
	Truncate  *bool     `json:"truncate,omitempty"`
	KeepAlive *Duration `json:"keep_alive,omitempty"`
}

// OllamaEmbedResponse answers POST /api/embed.
type OllamaEmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	PromptEvalCount int         `json:"prompt_eval_count"`
	// TotalDuration and LoadDuration are Ollama's timings, in
	// nanoseconds: the whole request, and loading the model for it.
	TotalDuration int64 `json:"total_duration,omitempty"`
	LoadDuration  int64 `json:"load_duration,omitempty"`
}
