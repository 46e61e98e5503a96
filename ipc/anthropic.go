package ipc

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// AnthropicRequest is the body of POST /v1/messages (Anthropic's Messages
// API) and, without MaxTokens, of POST /v1/messages/count_tokens.
type AnthropicRequest struct {
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens,omitempty"`
	System        AnthropicContent   `json:"system,omitempty"`
	Messages      []AnthropicMessage `json:"messages"`
	StopSequences []string           `json:"stop_sequences,omitempty"`
	Temperature   *float32           `json:"temperature,omitempty"`
	TopP          *float32           `json:"top_p,omitempty"`
	TopK          *int               `json:"top_k,omitempty"`
	Stream        bool               `json:"stream,omitempty"`
	Metadata      json.RawMessage    `json:"metadata,omitempty"`
	Tools         json.RawMessage    `json:"tools,omitempty"`
	ToolChoice    json.RawMessage    `json:"tool_choice,omitempty"`
	Thinking      json.RawMessage    `json:"thinking,omitempty"`
	// ContextOverflow and Adapters are ruvllm's (see SamplingFields).
	ContextOverflow string      `json:"context_overflow,omitempty"`
	Adapters        AdapterRefs `json:"adapters,omitempty"`
	// OutputConfig is {format: {type: "json_schema", schema}, effort};
	// OutputFormat is the beta's top-level format.
	OutputConfig json.RawMessage `json:"output_config,omitempty"`
	OutputFormat json.RawMessage `json:"output_format,omitempty"`
	// ServiceTier and the like change nothing here and are tolerated.
}

// AnthropicMessage is one turn.
type AnthropicMessage struct {
	Role    string           `json:"role"`
	Content AnthropicContent `json:"content"`
}

// AnthropicContent is a message's content: a string or an array of
// content blocks (text, image, tool_use, tool_result, ...).
type AnthropicContent struct {
	Blocks []AnthropicBlock
	set    bool
}

// AnthropicBlock is one content block. Only the fields of the block types
// the daemon reads are named; the rest stay in Raw.
type AnthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError belong to tool_result blocks (IsError
	// kept as sent: it must be a boolean).
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   json.RawMessage `json:"is_error,omitempty"`
	// Thinking and Signature belong to thinking blocks: a thinking model's
	// reasoning (Signature is always empty here: nothing signs it).
	Thinking  string  `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
}

// UnmarshalJSON accepts a string or an array of blocks.
func (c *AnthropicContent) UnmarshalJSON(b []byte) error {
	*c = AnthropicContent{set: true}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		c.Blocks = []AnthropicBlock{{Type: "text", Text: s}}
		return nil
	}
	if string(b) == "null" {
		c.set = false
		return nil
	}
	if err := json.Unmarshal(b, &c.Blocks); err != nil {
		return blocksError(b, err, reflect.TypeFor[AnthropicContent]())
	}
	return nil
}

// MarshalJSON writes the block; a text block always has its text, empty
// or not (Anthropic's shape: clients read block.text of every text block).
func (b AnthropicBlock) MarshalJSON() ([]byte, error) {
	type plain AnthropicBlock
	if b.Type != "text" {
		return json.Marshal(plain(b))
	}
	return json.Marshal(struct {
		plain
		Text string `json:"text"`
	}{plain(b), b.Text})
}

// MarshalJSON writes the blocks.
func (c AnthropicContent) MarshalJSON() ([]byte, error) {
	if c.Blocks == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(c.Blocks)
}

// IsSet reports whether the field was present.
func (c AnthropicContent) IsSet() bool { return c.set }

// AnthropicResponse is a message the model wrote.
type AnthropicResponse struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"` // "message"
	Role         string           `json:"role"` // "assistant"
	Model        string           `json:"model"`
	Content      []AnthropicBlock `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        AnthropicUsage   `json:"usage"`
}

// AnthropicUsage counts a message's tokens; cache_read_input_tokens are
// the prompt tokens served from the shared prefix cache and input_tokens
// the others, as Anthropic counts them (the prompt is their sum). A
// stream's message_start, sent before the prompt is looked up in the
// cache, counts the whole prompt in input_tokens; its message_delta
// carries the split.
type AnthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	// ContextOverflow (a ruvllm extension) says what was left out to fit
	// the context.
	ContextOverflow *OverflowUsage `json:"context_overflow,omitempty"`
}

// AnthropicError is Anthropic's error body.
type AnthropicError struct {
	Type  string `json:"type"` // "error"
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// AnthropicTokenCount answers POST /v1/messages/count_tokens.
type AnthropicTokenCount struct {
	InputTokens int `json:"input_tokens"`
}
