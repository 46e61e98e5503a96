package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// AdapterRef selects a LoRA adapter for one request.
type AdapterRef struct {
	Name  string  `json:"name"`
	Scale float32 `json:"scale,omitempty"`
}

// The string forms of a request's "adapters" field (OpenAI bodies) and
// "options.adapters" (Ollama bodies), besides an array of AdapterRef.
const (
	// AdaptersAuto routes the request to the installed adapter that did
	// best on similar earlier requests of its learning scope (or to none).
	AdaptersAuto = "auto"
	// AdaptersNone runs the base model exactly: no adapter, not even the
	// ones the daemon learned from the user's feedback.
	AdaptersNone = "none"
)

// AdapterRefs is a request's adapters: a JSON array of AdapterRef, or one
// of the strings "auto" and "none" (AdaptersAuto, AdaptersNone), which
// decode to a single entry whose Name is that string prefixed with "@"
// (a name no installed adapter can have) and encode back as the string.
type AdapterRefs []AdapterRef

// Mode returns "auto" or "none" for the string forms, "" for a list.
func (r AdapterRefs) Mode() string {
	if len(r) == 1 && r[0].Scale == 0 {
		switch r[0].Name {
		case "@" + AdaptersAuto:
			return AdaptersAuto
		case "@" + AdaptersNone:
			return AdaptersNone
		}
	}
	return ""
}

// AdapterMode returns the AdapterRefs of a string form ("auto", "none").
func AdapterMode(mode string) AdapterRefs { return AdapterRefs{{Name: "@" + mode}} }

// UnmarshalJSON accepts an array of {"name", "scale"} or "auto"/"none".
// An entry whose scale is an explicit 0 is left out.
func (r *AdapterRefs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch s {
		case AdaptersAuto, AdaptersNone:
			*r = AdapterMode(s)
			return nil
		}
		return &json.UnmarshalTypeError{Value: fmt.Sprintf("%q", s), Type: reflect.TypeFor[AdapterRefs]()}
	}
	var list []struct {
		Name  string   `json:"name"`
		Scale *float32 `json:"scale"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		// An entry's field of the wrong type is named with its index (an
		// array of entries was told it must be an array).
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			var raw []json.RawMessage
			json.Unmarshal(b, &raw)
			for i, e := range raw {
				var one struct {
					Name  string   `json:"name"`
					Scale *float32 `json:"scale"`
				}
				if json.Unmarshal(e, &one) != nil {
					return &json.UnmarshalTypeError{Value: te.Value, Type: te.Type, Field: fmt.Sprintf("%d.%s", i, te.Field)}
				}
			}
		}
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[AdapterRefs]()}
	}
	out := make(AdapterRefs, 0, len(list))
	for _, e := range list {
		// A scale of 0 sent explicitly leaves the adapter out, as
		// llama-server's "lora" does (a scale slider at 0); AdapterRef's
		// zero Scale means 1, so keeping the entry applied it in full.
		if e.Scale != nil && *e.Scale == 0 && e.Name != "" {
			continue
		}
		ref := AdapterRef{Name: e.Name}
		if e.Scale != nil {
			ref.Scale = *e.Scale
		}
		out = append(out, ref)
	}
	*r = out
	return nil
}

// MarshalJSON writes the string forms back as strings.
func (r AdapterRefs) MarshalJSON() ([]byte, error) {
	if m := r.Mode(); m != "" {
		return json.Marshal(m)
	}
	return json.Marshal([]AdapterRef(r))
}

// Message is one chat turn. Content is its text: a request may send it as
// a string, null, or (as the OpenAI SDKs, LangChain and the AI SDK do) an
// array of content parts, whose text parts are joined in order with a
// newline. Parts that are not text (images, audio, files) are kept aside
// in NonText so the daemon can refuse them by name rather than drop them.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Images are Ollama's base64-encoded images of the turn.
	Images []string `json:"images,omitempty"`
	// ToolCalls are the calls an assistant turn made; ToolCallID and Name
	// identify the call a "tool" turn answers.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	// ToolName is Ollama's name of the tool a "tool" turn answers.
	ToolName string `json:"tool_name,omitempty"`
	// ReasoningContent is a thinking model's reasoning before an assistant
	// turn's content (the OpenAI-compatible servers' field, llama-server's
	// and vLLM's); Thinking is the same in Ollama's messages.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Thinking         string `json:"thinking,omitempty"`
	// NonText lists the types of the non-text content parts the request
	// sent ("image_url", "input_audio", ...); never sent back.
	NonText []string `json:"-"`
}

// ToolCall is a function call of an assistant turn. Arguments is the
// arguments object: OpenAI sends it as a JSON string, Ollama as an object;
// both are accepted and kept as raw JSON text.
type ToolCall struct {
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction names the function called and its arguments.
type ToolCallFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ContentPart is one element of an array-of-parts message content.
type ContentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text,omitempty"`
}

// UnmarshalJSON accepts content as a string, null or an array of parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	var raw struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// The path names the JSON field, not the embedded Go type
			// ("messages.role", not "messages.plain.role").
			return &json.UnmarshalTypeError{Value: te.Value, Type: te.Type, Offset: te.Offset,
				Field: strings.TrimPrefix(te.Field, "plain.")}
		}
		return err
	}
	*m = Message(raw.plain)
	m.Content, m.NonText = "", nil
	c := bytes.TrimSpace(raw.Content)
	// Errors are type errors, so that the decoder adds the field's path
	// and a server can name it ("messages.content[1]"), as it does for
	// every other field.
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(c, &parts); err != nil {
			return &json.UnmarshalTypeError{Value: jsonValueKind(c), Type: reflect.TypeFor[messageContent](), Field: "content"}
		}
		var texts []string
		for i, raw := range parts {
			var p ContentPart
			partError := &json.UnmarshalTypeError{Value: jsonValueKind(bytes.TrimSpace(raw)), Type: reflect.TypeFor[contentPart](),
				Field: fmt.Sprintf("content[%d]", i)}
			if err := json.Unmarshal(raw, &p); err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) && te.Field != "" {
					return &json.UnmarshalTypeError{Value: te.Value, Type: te.Type, Field: partError.Field + "." + te.Field}
				}
				return partError
			}
			switch {
			case p.Type == "text" || p.Type == "input_text" || (p.Type == "" && p.Text != nil):
				if p.Text == nil {
					partError.Value = fmt.Sprintf("a part of type %q without text", p.Type)
					return partError
				}
				texts = append(texts, *p.Text)
			case p.Type == "":
				partError.Value = "a part without a type"
				return partError
			default:
				m.NonText = append(m.NonText, p.Type)
			}
		}
		m.Content = strings.Join(texts, "\n")
	default:
		return &json.UnmarshalTypeError{Value: jsonValueKind(c), Type: reflect.TypeFor[messageContent](), Field: "content"}
	}
	return nil
}

// messageContent and contentPart stand for the JSON that a message's
// content and each of its parts take, in the type errors that name them
// (JSONKind).
type (
	messageContent struct{}
	contentPart    struct{}
)

// StopList is OpenAI's "stop": a string or an array of strings.
type StopList []string

// UnmarshalJSON accepts a string or an array of strings; null, as the
// OpenAI API and its clients send for "no stop", is none.
func (s *StopList) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = StopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &json.UnmarshalTypeError{Value: jsonValueKind(bytes.TrimSpace(b)), Type: reflect.TypeFor[StopList]()}
	}
	*s = many
	return nil
}

// StreamOptions is OpenAI's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// SamplingFields are the sampling parameters shared by OpenAI's chat and
// completion requests (top_k and min_p are common extensions). A Seed of 0
// or more makes sampling reproducible (0 like any other); a negative one,
// as llama.cpp's and vLLM's -1, draws a random seed, as leaving it out does.
type SamplingFields struct {
	Temperature      *float32           `json:"temperature,omitempty"`
	TopP             *float32           `json:"top_p,omitempty"`
	TopK             *int               `json:"top_k,omitempty"`
	MinP             *float32           `json:"min_p,omitempty"`
	PresencePenalty  float32            `json:"presence_penalty,omitempty"`
	FrequencyPenalty float32            `json:"frequency_penalty,omitempty"`
	RepeatPenalty    float32            `json:"repeat_penalty,omitempty"`
	Seed             *int64             `json:"seed,omitempty"`
	LogitBias        map[string]float32 `json:"logit_bias,omitempty"`
	Stop             StopList           `json:"stop,omitempty"`
	MaxTokens        int                `json:"max_tokens,omitempty"`
	MaxCompletion    int                `json:"max_completion_tokens,omitempty"`
	N                int                `json:"n,omitempty"`
	Stream           bool               `json:"stream,omitempty"`
	StreamOptions    *StreamOptions     `json:"stream_options,omitempty"`
	Adapters         AdapterRefs        `json:"adapters,omitempty"`
	// Lora is llama-server's form of Adapters, which its clients send to
	// these endpoints too: adapters by their ids in GET /lora-adapters.
	Lora []LlamaLora `json:"lora,omitempty"`
	// Priority orders requests in the daemon: higher first.
	Priority int `json:"priority,omitempty"`
	// Grammar (GBNF) and Regex are ruvllm's own constraints: the output
	// follows the grammar, or matches the regular expression, whole.
	Grammar string `json:"grammar,omitempty"`
	Regex   string `json:"regex,omitempty"`
	// Speculation is ruvllm's addition: "off" opts the request out of
	// speculative decoding; kinds ("lookup", "draft", "tree", joined by
	// "+") narrow it; empty leaves the daemon's setting.
	Speculation string `json:"speculation,omitempty"`
	// Prediction is OpenAI's predicted output: text the reply is expected
	// to largely repeat (a file being edited, a reply regenerated with
	// changes), from which speculative decoding drafts. The reply is the
	// same with or without it; it only comes faster.
	Prediction *Prediction `json:"prediction,omitempty"`
	// ContextOverflow is ruvllm's choice of what happens when the request
	// outgrows the model's context: "drop_oldest" (a chat loses its oldest
	// turns after the system messages, a prompt its oldest tokens; the
	// reply stops at the context's end), "shift" (the same, and a reply
	// that fills the context goes on after the older half is discarded)
	// or "error" (a prompt that does not fit is a 400). Empty: the
	// daemon's default (--context-overflow).
	ContextOverflow string `json:"context_overflow,omitempty"`
	// IgnoreEOS generates past the end-of-generation tokens, up to
	// max_tokens or the context (llama-server takes it on these endpoints
	// too; benchmarks send it).
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// Prediction is a predicted output: {"type": "content", "content": text
// or an array of text parts}.
type Prediction struct {
	Type string
	// Content is the predicted text (the parts' texts joined).
	Content string
}

// predictionContent and textPart stand for the JSON that a prediction's
// content and each of its parts take, in the type errors that name them
// (JSONKind).
type (
	predictionContent struct{}
	textPart          struct{}
)

// UnmarshalJSON reads the type and the content as a string or text parts.
// Its errors are type errors, so that the decoder adds the field's path
// and a server can name it ("prediction.content").
func (p *Prediction) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[Prediction]()}
	}
	var raw struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &json.UnmarshalTypeError{Value: te.Value, Type: te.Type, Field: te.Field}
		}
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[Prediction]()}
	}
	*p = Prediction{Type: raw.Type}
	c := bytes.TrimSpace(raw.Content)
	contentError := &json.UnmarshalTypeError{Value: jsonValueKind(c), Type: reflect.TypeFor[predictionContent](), Field: "content"}
	if len(c) > 0 && c[0] == '[' {
		var parts []json.RawMessage
		if err := json.Unmarshal(c, &parts); err != nil {
			return contentError
		}
		var sb strings.Builder
		for i, raw := range parts {
			var part ContentPart
			if err := json.Unmarshal(raw, &part); err != nil || part.Text == nil || (part.Type != "text" && part.Type != "") {
				value := jsonValueKind(bytes.TrimSpace(raw))
				if err == nil && part.Type != "" {
					value = fmt.Sprintf("a part of type %q", part.Type)
				}
				return &json.UnmarshalTypeError{Value: value, Type: reflect.TypeFor[textPart](), Field: fmt.Sprintf("content[%d]", i)}
			}
			sb.WriteString(*part.Text)
		}
		p.Content = sb.String()
		return nil
	}
	if err := json.Unmarshal(c, &p.Content); err != nil {
		return contentError
	}
	return nil
}

// blocksError is the type error for b, a value of type t that takes a
// string or an array (of blocks, items), which failed to decode into the
// array with err: the inner type error where it names a field inside an
// element, else one naming the value (an array of strings is "array of
// string"), so that the decoder adds the field's path.
func blocksError(b []byte, err error, t reflect.Type) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	if te.Field != "" {
		return &json.UnmarshalTypeError{Value: te.Value, Type: te.Type, Offset: te.Offset, Field: te.Field}
	}
	value := jsonValueKind(b)
	if value == "array" {
		value = "array of " + te.Value
	}
	return &json.UnmarshalTypeError{Value: value, Type: t}
}

// JSONKind names the JSON that a type of this package with its own
// decoding takes ("a string or an array of strings"), for the type errors
// its UnmarshalJSON methods return; "" for other types.
func JSONKind(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[AutoNumber]():
		return `"auto" or a number`
	case reflect.TypeFor[StopList]():
		return "a string or an array of strings"
	case reflect.TypeFor[AdapterRefs]():
		return `an array of {"name", "scale"}, "auto" or "none"`
	case reflect.TypeFor[Prediction]():
		return `an object {"type": "content", "content": ...}`
	case reflect.TypeFor[predictionContent]():
		return "a string or an array of text parts"
	case reflect.TypeFor[textPart]():
		return `a text part {"type": "text", "text": ...}`
	case reflect.TypeFor[messageContent]():
		return "a string, null or an array of content parts"
	case reflect.TypeFor[contentPart]():
		return `a content part {"type": "text", "text": ...}`
	case reflect.TypeFor[AnthropicContent]():
		return "a string or an array of content blocks"
	case reflect.TypeFor[ResponseInput]():
		return "a string or an array of input items"
	case reflect.TypeFor[EmbeddingInput]():
		// OpenAI also takes token ids, which clients make with OpenAI's
		// tokenizer (LangChain's OpenAIEmbeddings does by default): read in
		// this model's vocabulary they would be other text.
		return "a string or an array of strings (token ids made by another model's tokenizer are not taken; " +
			"LangChain: OpenAIEmbeddings(check_embedding_ctx_length=False))"
	}
	return ""
}

// MarshalJSON writes the prediction in OpenAI's form.
func (p Prediction) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}{p.Type, p.Content})
}

// ChatCompletionRequest is the body of POST /v1/chat/completions.
type ChatCompletionRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	SamplingFields
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
	// ResponseFormat is {"type": "text" | "json_object"} or
	// {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Tools are the functions the model may call; ToolChoice is "auto",
	// "none", "required" or {"type": "function", "function": {"name"}}.
	Tools             []json.RawMessage `json:"tools,omitempty"`
	ToolChoice        json.RawMessage   `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	// Fields that would change the output but have no support here are
	// refused by name rather than ignored.
	Functions       json.RawMessage `json:"functions,omitempty"`
	FunctionCall    json.RawMessage `json:"function_call,omitempty"`
	ReasoningEffort string          `json:"reasoning_effort,omitempty"`
	Modalities      []string        `json:"modalities,omitempty"`
	Audio           json.RawMessage `json:"audio,omitempty"`
	WebSearch       json.RawMessage `json:"web_search_options,omitempty"`
	// ChatTemplateKwargs are extra chat template variables, such as
	// {"enable_thinking": false} (llama-server's and vLLM's field).
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
	// ReasoningFormat is llama-server's: "none" leaves a thinking model's
	// reasoning in the content; "auto" (the default) and "deepseek" return
	// it apart, as message.reasoning_content.
	ReasoningFormat string `json:"reasoning_format,omitempty"`
}

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	Model  string           `json:"model"`
	Prompt CompletionPrompt `json:"prompt"`
	SamplingFields
	Logprobs int `json:"logprobs,omitempty"`
	// Echo puts the prompt before the completion in the text (and, with
	// Logprobs, its tokens' log-probabilities before the completion's).
	Echo bool `json:"echo,omitempty"`
	// Suffix is the text after the completion: the model fills in the
	// middle between Prompt and Suffix.
	Suffix string `json:"suffix,omitempty"`
	// BestOf must be 1 (or absent).
	BestOf *int `json:"best_of,omitempty"`
	// ResponseFormat holds the completion to JSON as chat's does
	// ({"type": "json_object"} or "json_schema"), as vLLM and llama-server
	// take it on this endpoint.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`

	// maxTokensSent: the body gave max_tokens (MaxTokensSent).
	maxTokensSent bool
}

// UnmarshalJSON reads the request, noting whether it gave max_tokens: 0
// then generates nothing (with echo, the prompt alone is scored), where
// SamplingFields' 0 means no limit.
func (r *CompletionRequest) UnmarshalJSON(b []byte) error {
	type plain CompletionRequest
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	var given struct {
		MaxTokens json.RawMessage `json:"max_tokens"`
	}
	if json.Unmarshal(b, &given) == nil {
		r.maxTokensSent = len(given.MaxTokens) > 0 && string(given.MaxTokens) != "null"
	}
	return nil
}

// MaxTokensSent reports whether the decoded request gave max_tokens.
func (r *CompletionRequest) MaxTokensSent() bool { return r.maxTokensSent }

// Usage counts tokens of one request.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
	// CompletionTokensDetails says, for a request with a prediction, how
	// many of its tokens the reply took and how many were drafted and not,
	// and for a thinking model how many tokens it reasoned in.
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
	// ContextOverflow (a ruvllm extension) says what was left out to fit
	// the context; absent when nothing was.
	ContextOverflow *OverflowUsage `json:"context_overflow,omitempty"`
}

// CompletionTokensDetails are OpenAI's details of the completion tokens.
type CompletionTokensDetails struct {
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	ReasoningTokens          int `json:"reasoning_tokens"`
}

// OverflowUsage reports what a request lost to the context's size
// (context_overflow in usage, in Ollama's final object and in the
// Responses and Messages usage).
type OverflowUsage struct {
	// DroppedMessages are the oldest turns of the conversation left out
	// of the prompt; the app shows "earlier messages were left out".
	DroppedMessages int `json:"dropped_messages"`
	// DroppedTokens are the prompt tokens left out: those of the dropped
	// messages and any cut from a prompt too long on its own.
	DroppedTokens int `json:"dropped_tokens"`
	// Shifts counts the times the reply filled the context and went on
	// after ShiftedTokens older tokens (in all) were discarded.
	Shifts        int `json:"shifts"`
	ShiftedTokens int `json:"shifted_tokens"`
}

// PromptTokensDetails reports prompt tokens served from the prefix cache.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// ByteList is a token's UTF-8 bytes, written as an array of integers as
// OpenAI's spec has it (encoding/json would write []byte as base64).
type ByteList []byte

// MarshalJSON writes the bytes as an array of integers.
func (b ByteList) MarshalJSON() ([]byte, error) {
	if b == nil {
		return []byte("null"), nil
	}
	out := make([]byte, 0, 2+4*len(b))
	out = append(out, '[')
	for i, c := range b {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON reads an array of integers (or base64, as older ruvllm wrote).
func (b *ByteList) UnmarshalJSON(data []byte) error {
	var ints []int
	if err := json.Unmarshal(data, &ints); err == nil {
		*b = make(ByteList, len(ints))
		for i, v := range ints {
			if v < 0 || v > 255 {
				return fmt.Errorf("byte %d out of range", v)
			}
			(*b)[i] = byte(v)
		}
		return nil
	}
	var raw []byte
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*b = raw
	return nil
}

// TopLogprob is one alternative token.
type TopLogprob struct {
	Token   string   `json:"token"`
	Logprob float32  `json:"logprob"`
	Bytes   ByteList `json:"bytes"`
}

// TokenLogprob is a generated token with its alternatives.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       ByteList     `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// Logprobs is a choice's logprobs object.
type Logprobs struct {
	Content []TokenLogprob `json:"content"`
}

// ChatChoice is one choice of a chat completion.
type ChatChoice struct {
	Index        int       `json:"index"`
	Message      Message   `json:"message"`
	Logprobs     *Logprobs `json:"logprobs,omitempty"`
	FinishReason string    `json:"finish_reason"`
}

// ChatCompletionResponse is the non-streaming chat answer.
type ChatCompletionResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   Usage        `json:"usage"`
}

// Delta is the incremental message of a stream chunk.
type Delta struct {
	Role      string          `json:"role,omitempty"`
	Content   string          `json:"content,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
	// ReasoningContent is a piece of a thinking model's reasoning.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// ToolCallDelta is a piece of a streamed tool call: the first names the
// call (index, id, type, function name), the next carry fragments of its
// arguments' JSON text.
type ToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function ToolFunctionDelta `json:"function"`
}

// ToolFunctionDelta is the function part of a ToolCallDelta.
type ToolFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ChunkChoice is one choice of a stream chunk.
type ChunkChoice struct {
	Index        int       `json:"index"`
	Delta        Delta     `json:"delta"`
	Logprobs     *Logprobs `json:"logprobs,omitempty"`
	FinishReason *string   `json:"finish_reason"`
}

// ChatCompletionChunk is one SSE event of a streaming chat answer.
type ChatCompletionChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "chat.completion.chunk"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// CompletionChoice is one choice of a text completion (also a stream chunk).
type CompletionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// CompletionLogprobs is the completions endpoint's (legacy) logprobs
// object: parallel arrays, one entry per generated token. TextOffset is
// where each token starts in the choice's text, in characters (Unicode
// code points; a character split across tokens counts once).
type CompletionLogprobs struct {
	Tokens []string `json:"tokens"`
	// TokenLogprobs and TopLogprobs are null for the first token of an
	// echoed prompt, which has nothing before it.
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// Add appends one token's entry; offset is where its text starts in the
// choice's text, in characters (Unicode code points).
func (l *CompletionLogprobs) Add(t TokenLogprob, offset int) {
	top := make(map[string]float32, len(t.TopLogprobs))
	for _, c := range t.TopLogprobs {
		top[c.Token] = c.Logprob
	}
	lp := t.Logprob
	l.Tokens = append(l.Tokens, t.Token)
	l.TokenLogprobs = append(l.TokenLogprobs, &lp)
	l.TopLogprobs = append(l.TopLogprobs, top)
	l.TextOffset = append(l.TextOffset, offset)
}

// AddUnscored appends a token without log-probabilities (an echoed
// prompt's first token).
func (l *CompletionLogprobs) AddUnscored(token string, offset int) {
	l.Tokens = append(l.Tokens, token)
	l.TokenLogprobs = append(l.TokenLogprobs, nil)
	l.TopLogprobs = append(l.TopLogprobs, nil)
	l.TextOffset = append(l.TextOffset, offset)
}

// CompletionResponse is a text completion or one chunk of a stream.
type CompletionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"` // "text_completion"
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
}

// ModelCard is one entry of GET /v1/models.
type ModelCard struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is GET /v1/models.
type ModelList struct {
	Object string      `json:"object"` // "list"
	Data   []ModelCard `json:"data"`
}

// EmbeddingInput is a string or an array of strings.
type EmbeddingInput []string

// UnmarshalJSON accepts a string or an array of strings.
func (e *EmbeddingInput) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*e = EmbeddingInput{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		kind := jsonValueKind(bytes.TrimSpace(b))
		var ids []json.RawMessage
		if json.Unmarshal(b, &ids) == nil && len(ids) > 0 {
			var n json.Number
			var nested []json.Number
			if json.Unmarshal(ids[0], &n) == nil || json.Unmarshal(ids[0], &nested) == nil {
				kind = "token ids"
			}
		}
		return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[EmbeddingInput]()}
	}
	*e = many
	return nil
}

// EmbeddingRequest is the body of POST /v1/embeddings.
type EmbeddingRequest struct {
	Model string         `json:"model"`
	Input EmbeddingInput `json:"input"`
	// EncodingFormat is "float" (the default) or "base64": the vector's
	// little-endian float32 bytes in base64, which the official OpenAI
	// SDKs ask for by default and decode themselves.
	EncodingFormat string `json:"encoding_format,omitempty"`
	// Dimensions, when set, truncates each vector to its first Dimensions
	// values and normalises it again.
	Dimensions *int `json:"dimensions,omitempty"`
}

// Embedding is one vector.
type Embedding struct {
	Object string `json:"object"` // "embedding"
	Index  int    `json:"index"`
	// Embedding is a []float32, or a base64 string of little-endian
	// float32s when the request asked for encoding_format "base64".
	Embedding any `json:"embedding"`
}

// EmbeddingResponse answers POST /v1/embeddings.
type EmbeddingResponse struct {
	Object string      `json:"object"` // "list"
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  Usage       `json:"usage"`
}

// OpenAIError is OpenAI's error body.
type OpenAIError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// CompletionPrompt is OpenAI's completion "prompt": a string, an array
// holding one string, or an array of token ids. Several prompts in one
// request are refused (ruvllm answers n=1 only).
type CompletionPrompt struct {
	Text   string
	Tokens []int32 // set when the prompt was given as token ids
}

// UnmarshalJSON accepts the three single-prompt forms.
func (p *CompletionPrompt) UnmarshalJSON(b []byte) error {
	*p = CompletionPrompt{}
	if err := json.Unmarshal(b, &p.Text); err == nil {
		return nil
	}
	var texts []string
	if err := json.Unmarshal(b, &texts); err == nil {
		switch len(texts) {
		case 0:
			return nil
		case 1:
			p.Text = texts[0]
			return nil
		}
		return fmt.Errorf("prompt: %d prompts in one request are not supported, send one", len(texts))
	}
	if err := json.Unmarshal(b, &p.Tokens); err == nil {
		return nil
	}
	return fmt.Errorf("prompt must be a string, an array of one string, or an array of token ids")
}

// MarshalJSON writes token ids as an array, else the text.
func (p CompletionPrompt) MarshalJSON() ([]byte, error) {
	if p.Tokens != nil {
		return json.Marshal(p.Tokens)
	}
	return json.Marshal(p.Text)
}
