package api

import (
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestTooManyMessages: a chat of more than MaxMessages messages is a 400
// naming the field, on every chat API, before it is rendered: 300,000
// one-letter messages took 10 s and peaked at 700 MB in the daemon.
func TestTooManyMessages(t *testing.T) {
	msgs := make([]ipc.Message, MaxMessages+1)
	for i := range msgs {
		msgs[i] = ipc.Message{Role: "user", Content: "a"}
	}
	for _, param := range []string{"messages", "input"} {
		_, err := chatMessages(msgs, param)
		if err == nil || !strings.Contains(err.Error(), param) || !strings.Contains(err.Error(), "65536") {
			t.Errorf("%s with %d messages: err = %v", param, len(msgs), err)
		}
		if _, err := chatMessages(msgs[:MaxMessages], param); err != nil {
			t.Errorf("%s with %d messages: %v", param, MaxMessages, err)
		}
	}
	var body ipc.AnthropicRequest
	for range MaxMessages + 1 {
		body.Messages = append(body.Messages, ipc.AnthropicMessage{Role: "user", Content: ipc.AnthropicContent{Blocks: []ipc.AnthropicBlock{{Type: "text", Text: "a"}}}})
	}
	if _, err := anthropicChat(body, false); err == nil || !strings.Contains(err.Error(), "messages") || !strings.Contains(err.Error(), "65536") {
		t.Errorf("Anthropic messages: err = %v", err)
	}
}
