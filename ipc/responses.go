package ipc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// ResponseRequest is the body of POST /v1/responses (OpenAI's Responses
// API).
type ResponseRequest struct {
	Model              string          `json:"model"`
	Input              ResponseInput   `json:"input"`
	Instructions       string          `json:"instructions,omitempty"`
	MaxOutputTokens    *int            `json:"max_output_tokens,omitempty"`
	Temperature        *float32        `json:"temperature,omitempty"`
	TopP               *float32        `json:"top_p,omitempty"`
	Stream             bool            `json:"stream,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	Store              *bool           `json:"store,omitempty"`
	Text               json.RawMessage `json:"text,omitempty"`
	Tools              json.RawMessage `json:"tools,omitempty"`
	ToolChoice         json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls,omitempty"`
	Reasoning          json.RawMessage `json:"reasoning,omitempty"`
	Truncation         string          `json:"truncation,omitempty"`
	Include            []string        `json:"include,omitempty"`
	Metadata           map[string]any  `json:"metadata,omitempty"`
	User               string          `json:"user,omitempty"`
	TopLogprobs        *int            `json:"top_logprobs,omitempty"`
	Background         bool            `json:"background,omitempty"`
	Adapters           AdapterRefs     `json:"adapters,omitempty"`
	// ContextOverflow is ruvllm's (see SamplingFields); when set it takes
	// the place of Truncation ("auto" is "drop_oldest", "disabled"
	// "error").
	ContextOverflow string `json:"context_overflow,omitempty"`
}

// ResponseInput is a request's input: a string (one user message) or a
// list of input items.
type ResponseInput struct {
	Text  string
	Items []ResponseItem
}

// UnmarshalJSON accepts a string or an array of items.
func (in *ResponseInput) UnmarshalJSON(b []byte) error {
	*in = ResponseInput{}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &in.Text)
	}
	if err := json.Unmarshal(b, &in.Items); err != nil {
		return blocksError(b, err, reflect.TypeFor[ResponseInput]())
	}
	return nil
}

// MarshalJSON writes the text or the items.
func (in ResponseInput) MarshalJSON() ([]byte, error) {
	if in.Items != nil {
		return json.Marshal(in.Items)
	}
	return json.Marshal(in.Text)
}

// ResponseItem is one input or output item: a message (type "message",
// or no type with a role), a function call or a function call's output.
type ResponseItem struct {
	Type    string           `json:"type,omitempty"`
	ID      string           `json:"id,omitempty"`
	Role    string           `json:"role,omitempty"`
	Status  string           `json:"status,omitempty"`
	Content *ResponseContent `json:"content,omitempty"`
	// Function calls and their outputs.
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Output    string `json:"output,omitempty"`
	// Summary belongs to reasoning items (always empty here: a thinking
	// model's reasoning comes whole, as its content's reasoning_text).
	Summary []any `json:"summary,omitempty"`
}

// MarshalJSON writes the item with the fields its type always has, empty
// or not (OpenAI's SDKs build on them: a streamed function_call's
// arguments are appended to the item's): a function_call's call_id, name
// and arguments, a function_call_output's call_id and output.
func (it ResponseItem) MarshalJSON() ([]byte, error) {
	type plain ResponseItem
	switch it.Type {
	case "function_call":
		return json.Marshal(struct {
			plain
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{plain(it), it.CallID, it.Name, it.Arguments})
	case "function_call_output":
		return json.Marshal(struct {
			plain
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}{plain(it), it.CallID, it.Output})
	case "reasoning":
		return json.Marshal(struct {
			plain
			Summary []any `json:"summary"`
		}{plain(it), append([]any{}, it.Summary...)})
	}
	return json.Marshal(plain(it))
}

// ResponseContent is a message's content: a string or content parts.
type ResponseContent struct {
	Parts []ResponsePart
}

// UnmarshalJSON accepts a string or an array of parts.
func (c *ResponseContent) UnmarshalJSON(b []byte) error {
	*c = ResponseContent{}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		c.Parts = []ResponsePart{{Type: "input_text", Text: s}}
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	if err := json.Unmarshal(b, &c.Parts); err != nil {
		return fmt.Errorf("content must be a string or an array of content parts")
	}
	return nil
}

// MarshalJSON writes the parts.
func (c ResponseContent) MarshalJSON() ([]byte, error) {
	if c.Parts == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(c.Parts)
}

// ResponsePart is one content part: input_text, output_text, refusal,
// input_image, input_file...
type ResponsePart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations,omitempty"`
}

// MarshalJSON writes an output_text part with its annotations, [] when it
// has none (OpenAI's types make them required).
func (p ResponsePart) MarshalJSON() ([]byte, error) {
	type plain ResponsePart
	if p.Type != "output_text" {
		return json.Marshal(plain(p))
	}
	a := p.Annotations
	if a == nil {
		a = []any{}
	}
	return json.Marshal(struct {
		plain
		Annotations []any `json:"annotations"`
	}{plain(p), a})
}

// Response is a response object (POST /v1/responses, GET /v1/responses/{id}).
type Response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"` // "response"
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"` // completed, incomplete, in_progress, failed
	Model              string            `json:"model"`
	Output             []ResponseItem    `json:"output"`
	Usage              *ResponseUsage    `json:"usage,omitempty"`
	IncompleteDetails  *IncompleteReason `json:"incomplete_details"`
	Error              *ResponseError    `json:"error"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Temperature        float32           `json:"temperature"`
	TopP               float32           `json:"top_p"`
	Store              bool              `json:"store"`
	Text               json.RawMessage   `json:"text"`
	Tools              []any             `json:"tools"`
	ToolChoice         any               `json:"tool_choice"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	Truncation         string            `json:"truncation"`
	Metadata           map[string]any    `json:"metadata"`
	User               *string           `json:"user"`
}

// ResponseUsage counts a response's tokens.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
	// ContextOverflow (a ruvllm extension) says what was left out to fit
	// the context.
	ContextOverflow *OverflowUsage `json:"context_overflow,omitempty"`
}

// InputTokensDetails says how many input tokens came from the prefix cache.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails counts a thinking model's reasoning tokens.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// IncompleteReason says why a response is incomplete.
type IncompleteReason struct {
	Reason string `json:"reason"`
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ResponseDeleted answers DELETE /v1/responses/{id}.
type ResponseDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "response.deleted"
	Deleted bool   `json:"deleted"`
}

// ResponseItemList answers GET /v1/responses/{id}/input_items.
type ResponseItemList struct {
	Object  string         `json:"object"` // "list"
	Data    []ResponseItem `json:"data"`
	FirstID string         `json:"first_id"`
	LastID  string         `json:"last_id"`
	HasMore bool           `json:"has_more"`
}
