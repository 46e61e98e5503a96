// Package chat renders conversations into the prompt text a model was
// trained on. A model file's own Jinja template (tokenizer.chat_template
// and named variants such as tokenizer.chat_template.tool_use) is rendered
// by engine/jinja with the variables Hugging Face's apply_chat_template
// passes; six built-in families (llama2, llama3, mistral, chatml, phi3,
// gemma) remain only for files that carry no template.
package chat

import (
	"context"
	"encoding/json"
	"time"
)

// A Renderer renders a conversation as the prompt text to tokenize, with
// the assistant's generation prompt when conv asks for it. A model's own
// Template is one; a request may bring another (llm.Request.Template: an
// Ollama Modelfile's TEMPLATE, which the daemon renders).
type Renderer interface {
	Prompt(ctx context.Context, conv Conversation) (string, error)
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant", "tool", ...
	Content string `json:"content"`
	// ToolCalls are the function calls an assistant turn made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a "tool" message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the function a "tool" message comes from (some templates
	// read it instead of tool_call_id).
	Name string `json:"name,omitempty"`
	// ReasoningContent is an assistant turn's reasoning, for templates of
	// thinking models that render it (reasoning_content).
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// ToolCall is one function call of an assistant turn, in OpenAI's form.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"` // "function" when empty
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a ToolCall names and its arguments.
type FunctionCall struct {
	Name string `json:"name"`
	// Arguments is a JSON value: an object (Ollama, Hugging Face) or a
	// string holding the object's JSON text (OpenAI). Templates receive
	// the object either way when the text parses as one, as they expect.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Conversation is everything a chat template renders.
type Conversation struct {
	Messages []Message
	// Tools are OpenAI-style tool definitions ({"type": "function",
	// "function": {"name", "description", "parameters"}}), passed to the
	// template as tools with their key order kept. Nil means no tools
	// (the template sees tools undefined).
	Tools []json.RawMessage
	// AddGenerationPrompt ends the text with the opening of the
	// assistant's turn.
	AddGenerationPrompt bool
	// Vars are extra template variables (llama-server's
	// chat_template_kwargs), such as enable_thinking: false. They cannot
	// replace messages, tools, add_generation_prompt, bos_token or
	// eos_token.
	Vars map[string]any
	// Now is the time strftime_now reports; zero means the current time.
	Now time.Time
}
