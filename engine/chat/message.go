// Package chat renders conversations into prompt text with the chat template
// a model was trained on (llama2, llama3, mistral, chatml, phi3, gemma),
// chosen from GGUF metadata.
package chat

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}
