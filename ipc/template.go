package ipc

import (
	"context"
	"encoding/json"
)

// ChatTemplateRequest is the body of POST /v1/chat/template (llama-server's
// /apply-template): a conversation to render with a model's chat template,
// without generating.
type ChatTemplateRequest struct {
	Model    string                `json:"model,omitempty"`
	Messages []ChatTemplateMessage `json:"messages"`
	// Tools are OpenAI-style tool definitions ({"type": "function",
	// "function": {...}}); their key order is kept.
	Tools []json.RawMessage `json:"tools,omitempty"`
	// AddGenerationPrompt ends the text with the opening of the
	// assistant's turn; default true.
	AddGenerationPrompt *bool `json:"add_generation_prompt,omitempty"`
	// ChatTemplateKwargs are extra template variables, such as
	// {"enable_thinking": false}.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
}

// ChatTemplateMessage is one message of a ChatTemplateRequest, in
// OpenAI's form. Content is a string, null, or an array of
// {"type": "text", "text": ...} parts.
type ChatTemplateMessage struct {
	Role             string             `json:"role"`
	Content          json.RawMessage    `json:"content,omitempty"`
	ToolCalls        []ChatTemplateCall `json:"tool_calls,omitempty"`
	ToolCallID       string             `json:"tool_call_id,omitempty"`
	Name             string             `json:"name,omitempty"`
	ReasoningContent string             `json:"reasoning_content,omitempty"`
}

// ChatTemplateCall is a tool call of an assistant message. Arguments is
// the JSON text of the arguments object (OpenAI) or the object itself
// (Ollama).
type ChatTemplateCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	} `json:"function"`
}

// ChatTemplateResponse is the answer of POST /v1/chat/template.
type ChatTemplateResponse struct {
	Model string `json:"model"`
	// Prompt is the rendered text exactly as the template writes it,
	// BOS text included (the tokenizer then does not add a second BOS).
	Prompt string `json:"prompt"`
	// ChatFormat says which template rendered it: the model file's own
	// (with its hash) or a built-in fallback.
	ChatFormat string `json:"chat_format,omitempty"`
}

// ChatTemplate renders a conversation with a model's chat template
// (POST /v1/chat/template), without generating.
func (c *Client) ChatTemplate(ctx context.Context, req ChatTemplateRequest) (ChatTemplateResponse, error) {
	var out ChatTemplateResponse
	err := c.Do(ctx, "POST", "/v1/chat/template", req, &out)
	return out, err
}
