package app

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// tracer appends one JSON line per finished reply, and one when the app
// becomes ready, to a file, so tests outside the process (the Xvfb
// end-to-end script) can assert on what the app received.
type tracer struct {
	mu sync.Mutex
	f  *os.File
}

// TraceLine is one line of the trace file.
type TraceLine struct {
	Time           time.Time `json:"time"`
	Event          string    `json:"event"` // chat:done or daemon:status
	State          State     `json:"state,omitempty"`
	ConversationID string    `json:"conversation_id,omitempty"`
	// Prompt is the user message the reply answers.
	Prompt       string `json:"prompt,omitempty"`
	CompletionID string `json:"completion_id"`
	MessageID    string `json:"message_id"`
	Text         string `json:"text"`
	PromptTokens int    `json:"prompt_tokens"`
	Tokens       int    `json:"completion_tokens"`
	CachedTokens int    `json:"cached_tokens"`
}

func openTracer(path string) (*tracer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return &tracer{f: f}, nil
}

// Reply records a finished reply to prompt.
func (t *tracer) Reply(d ChatDone, prompt string) {
	t.write(TraceLine{Time: time.Now().UTC(), Event: EventChatDone, ConversationID: d.ConversationID, Prompt: prompt,
		CompletionID: d.CompletionID, MessageID: d.Message.ID, Text: d.Message.Content,
		PromptTokens: d.Stats.PromptTokens, Tokens: d.Stats.CompletionTokens, CachedTokens: d.Stats.CachedTokens})
}

// State records a change of connection state.
func (t *tracer) State(s State) {
	t.write(TraceLine{Time: time.Now().UTC(), Event: EventStatus, State: s})
}

func (t *tracer) write(l TraceLine) {
	b, _ := json.Marshal(l)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.f.Write(append(b, '\n'))
}

func (t *tracer) Close() error { return t.f.Close() }
