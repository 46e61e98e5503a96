// Package llm is the engine's front door: load a GGUF model and generate
// text or embeddings from it. The daemon and the CLI use only this API.
package llm

import (
	"encoding/json"
	"time"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/lora"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/spec"
)

// Request is one generation. Exactly one of Prompt, Messages and Tokens is set:
// Prompt is raw text (completion), Messages is a conversation rendered with
// the model's chat template followed by the assistant's generation prompt.
type Request struct {
	Prompt   string
	Messages []chat.Message
	// Tools are OpenAI-style tool definitions the chat template offers
	// the model (with Messages only).
	Tools []json.RawMessage
	// ContinueLast, with Messages whose last one is the assistant's text
	// (no tool calls), ends the prompt with that text instead of the end
	// of its turn and a new generation prompt: the reply continues it
	// (Anthropic's and Ollama's prefill), without repeating it. Not with
	// Tools or Grammar, whose replies begin on their own.
	ContinueLast bool
	// TemplateVars are extra chat template variables, such as
	// enable_thinking (llama-server's chat_template_kwargs).
	TemplateVars map[string]any
	// Tokens, when set, is the prompt as token ids, used verbatim.
	Tokens []int32
	// Context, when set, are the tokens of an earlier exchange (Ollama's
	// context: a previous Result.Prompt and its reply) placed before the
	// prompt, whose own BOS they replace. A prompt that does not fit is
	// then cut as a token prompt (no turns are dropped).
	Context []int32
	// Raw skips templating for Prompt and reads the special tokens written
	// in it; BOS comes first, as for any prompt, unless the prompt starts
	// with it (Ollama's raw mode, which tokenizes as for any prompt).
	Raw bool
	// MaxTokens bounds the generated tokens; 0 means until the context is full.
	MaxTokens int
	// PromptOnly computes the prompt (into the prefix cache, for a later
	// request to reuse) and generates nothing: llama-server's n_predict 0.
	PromptOnly bool
	Sampling   sample.Params
	// Stop ends generation when the generated text contains one of these
	// strings; the stop string itself is not returned.
	Stop []string
	// TopLogprobs asks for this many alternatives with each token (0-20).
	TopLogprobs int
	// Logprobs asks for the chosen token's log-probability.
	Logprobs bool
	// IgnoreEOS keeps generating past end-of-generation tokens (benchmarks).
	IgnoreEOS bool
	// Priority orders admission: higher first (interactive > background).
	Priority int
	// Tenant is the app the request is for: the scheduler shares its
	// running slots between tenants (sched.Job.Tenant).
	Tenant string
	// Adapters are LoRA adapters loaded by this model's LoadAdapter,
	// applied to this request only, each with its scale (1 = as trained).
	Adapters []lora.Applied
	// Grammar, when set, holds the generated text to a constraint (JSON
	// Schema, GBNF, regex, a composed tool-call grammar): only tokens it
	// allows are ever sampled, and generation stops (FinishStop) once the
	// text is complete and nothing may follow. Make it with Model.Grammar
	// or Model.ComposedGrammar; it may be shared by any number of requests.
	// The text is streamed exactly as the grammar read it (no clean-up of
	// spaces).
	Grammar *grammar.Constraint
	// GrammarTriggers makes Grammar lazy: the text is free until one of
	// these strings appears in it (a special token's name counts as its
	// text), and follows the grammar from the trigger's first byte on
	// (tool_choice "auto": the grammar starts with the tool-call marker).
	GrammarTriggers []string
	// GrammarGate, with GrammarTriggers, keeps them shut while a thinking
	// model reasons (its reasoning may mention a tool call's marker
	// without making one).
	GrammarGate *grammar.Gate
	// Reasoning is how a thinking model's reply marks its reasoning (the
	// block's tags, and whether the prompt opened it), for
	// ReasoningBudget.
	Reasoning *grammar.Gate
	// ReasoningBudget, when positive (with Reasoning), bounds the tokens
	// of the reply's reasoning: once they are spent with the block still
	// open, a newline and its closing tag are written for the model, which
	// goes on with its answer (Anthropic's thinking.budget_tokens). Such a
	// request is not sped up by speculative decoding.
	ReasoningBudget int
	// WarmFollowUp marks a turn of a chat whose client will send Messages
	// and the reply back with its next message: once the reply is done,
	// Generate starts computing that history in the background
	// (Model.WarmFollowUp), so the next turn reuses the reply from the
	// prefix cache instead of recomputing it.
	WarmFollowUp bool
	// Prediction is the output the client expects, or most of it (OpenAI's
	// predicted outputs: the file being edited, the reply being
	// regenerated with changes): prompt lookup drafts from it first. It
	// changes how fast the reply comes, never what it is; with
	// NoSpeculation (or a model that offers no lookup) it does nothing.
	Prediction string
	// NoSpeculation opts the request out of speculative decoding.
	NoSpeculation bool
	// Speculate, when non-zero, narrows speculative decoding to these
	// kinds of those the model offers (benchmarks compare kinds with it).
	Speculate spec.Kinds
	// Suffix, when set, makes Prompt the text before an insertion point and
	// Suffix the text after it: the model fills in the middle, with its
	// fill-in-the-middle tokens (Model.FIM); a model without them refuses
	// (ErrNoFIM).
	Suffix string
	// Template, when set, renders Messages in place of the model's chat
	// template (a created model's own prompt template). It is given the
	// messages with their text escaped, as the model's template is, and
	// the model's own turn-ending stop strings do not apply.
	Template chat.Renderer
	// ContextLimit bounds this request's prompt and reply below the
	// model's context (0: the model's context).
	ContextLimit int
	// onPrefilled is called once the prompt is computed and its blocks
	// are in the prefix cache (GenerateN forks the other choices then).
	onPrefilled func()
	// Overflow says what happens when the request outgrows its context:
	// a prompt that does not fit fails with ErrContextExceeded, and a
	// reply that fills the context ends (FinishLength), unless it allows
	// dropping the oldest turns or shifting the context.
	Overflow Overflow
}

// TokenLogprob is a token with its log-probability.
type TokenLogprob struct {
	ID      int32   `json:"id"`
	Text    string  `json:"text"`
	Logprob float32 `json:"logprob"`
}

// Token is one generated token as it is streamed. Text is the UTF-8 text it
// completes (possibly empty when the token ends mid-character or is held
// back while it may begin a stop string).
type Token struct {
	ID      int32
	Text    string
	Logprob float32
	Top     []TokenLogprob
}

// FinishReason says why generation ended.
type FinishReason string

// The finish reasons, named as OpenAI names them.
const (
	FinishStop   FinishReason = "stop"   // end-of-generation token or stop string
	FinishLength FinishReason = "length" // MaxTokens or the context limit
)

// Timings are the measured durations of one generation.
type Timings struct {
	// PromptEval is the time spent computing the prompt (prefill).
	PromptEval time.Duration `json:"prompt_eval"`
	// Eval is the time spent generating tokens after the first.
	Eval time.Duration `json:"eval"`
	// TTFT is the time from the request to its first generated token.
	TTFT time.Duration `json:"ttft"`
	// Total is the time from the request to its end.
	Total time.Duration `json:"total"`

	// Where the time to the first token went: Prepare (chat template,
	// tokenization, adapters, grammar: until the scheduler has the job),
	// Queue (waiting for a place among the running sequences), Prefill
	// (from then until the forward pass computing the last prompt token
	// ended, over PrefillSteps passes, which other sequences' tokens may
	// share) and Sample (from that pass to the first token delivered:
	// sampling and decoding its text).
	Prepare      time.Duration `json:"prepare"`
	Queue        time.Duration `json:"queue"`
	Prefill      time.Duration `json:"prefill"`
	PrefillSteps int           `json:"prefill_steps"`
	Sample       time.Duration `json:"sample"`
}

// Result summarises a finished generation.
type Result struct {
	// Prompt is the prompt as the model computed it (after fitting to the
	// context); the caller must not modify it.
	Prompt           []int32
	PromptTokens     int
	CachedTokens     int // prompt tokens served from the prefix cache
	CompletionTokens int
	// TruncatedTokens were left out of a prompt that did not fit
	// (Overflow.DropOldest): the tokens of DroppedMessages and any cut
	// from the prompt after its kept head.
	TruncatedTokens int
	// DroppedMessages are the oldest chat turns left out to fit.
	DroppedMessages int
	// ContextShifts counts the times the reply filled the context and went
	// on after discarding older tokens (Overflow.Shift); ShiftedTokens
	// is how many tokens those shifts discarded in all.
	ContextShifts int
	ShiftedTokens int
	// StopSequence is the string of Request.Stop that ended the reply
	// ("" when another reason did, the chat template's own stops included).
	StopSequence string
	FinishReason FinishReason
	Timings      Timings
	// ForcedTokens counts generated tokens that a grammar forced (the only
	// one allowed): they were appended without sampling and computed
	// together with the token before them.
	ForcedTokens int
	Speculation  SpecResult
}

// SpecResult is what speculative decoding did for one generation.
type SpecResult struct {
	// Drafted is the number of draft tokens verified, Accepted those kept.
	Drafted, Accepted int
	// Verifications is the number of steps that verified a draft; each
	// yields Accepted/Verifications+1 tokens on average.
	Verifications int
	// PredictionDrafted and PredictionAccepted count those of Drafted and
	// Accepted taken from Request.Prediction.
	PredictionDrafted, PredictionAccepted int
}

// AcceptanceRate is Accepted/Drafted (0 without drafts).
func (s SpecResult) AcceptanceRate() float64 {
	if s.Drafted == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Drafted)
}

// TokensPerVerification is the mean number of tokens a verification step
// produced: the accepted draft tokens and the one sampled after them.
func (s SpecResult) TokensPerVerification() float64 {
	if s.Verifications == 0 {
		return 0
	}
	return float64(s.Accepted+s.Verifications) / float64(s.Verifications)
}

// Info describes a loaded model.
type Info struct {
	Name          string `json:"name"`
	Path          string `json:"path"`
	Architecture  string `json:"architecture"`
	Parameters    uint64 `json:"parameters"`
	FileType      string `json:"file_type"` // dominant weight type, e.g. "Q4_0"
	FileSize      int64  `json:"file_size"`
	ContextLength int    `json:"context_length"`
	EmbeddingSize int    `json:"embedding_size"`
	VocabSize     int    `json:"vocab_size"`
	ChatTemplate  string `json:"chat_template,omitempty"`
	// KVBytes is the memory of the model's KV cache (all sequences).
	KVBytes int64 `json:"kv_bytes"`
	// ChatFormat says which chat template the model uses: the file's own
	// (with its hash) or a built-in fallback.
	ChatFormat string `json:"chat_format,omitempty"`
	// Reasoning is how a thinking model's chat template marks the
	// reasoning its replies start with (nil: the model does not think).
	Reasoning *chat.Reasoning `json:"-"`
}
