package ipc

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Conversation is a chat thread stored by the daemon, so the desktop app,
// the CLI and other clients share one history.
type Conversation struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Model is the model the conversation talks to ("" for the daemon's
	// default).
	Model string `json:"model,omitempty"`
	// System is the conversation's system prompt.
	System   string       `json:"system,omitempty"`
	Adapters []AdapterRef `json:"adapters,omitempty"`
	// Sampling holds the conversation's sampling settings (temperature,
	// top_p, …); only the sampling fields are meaningful.
	Sampling  *SamplingFields `json:"sampling,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// MessageCount is the number of messages, also set in lists.
	MessageCount int `json:"message_count"`
	// Messages is the thread, oldest first; lists leave it out.
	Messages []ConversationMessage `json:"messages,omitempty"`
}

// ConversationMessage is one stored turn of a conversation.
type ConversationMessage struct {
	ID      string    `json:"id"` // assigned by the daemon
	Role    string    `json:"role"`
	Content string    `json:"content"`
	Time    time.Time `json:"time"`
	// ReasoningContent is a thinking model's reasoning before an
	// assistant message's content.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// RequestID is the id of the completion that produced an assistant
	// message (the "id" of the chat completion), the key for feedback.
	RequestID string `json:"request_id,omitempty"`
	// Stats are the figures of the reply that produced the message.
	Stats *ReplyStats `json:"stats,omitempty"`
}

// ReplyStats are the speed and cache figures of one reply.
type ReplyStats struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CachedTokens     int     `json:"cached_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TTFTMillis       float64 `json:"ttft_ms"`
	TokensPerSecond  float64 `json:"tokens_per_second"`
	// DroppedMessages and DroppedTokens are what the daemon left out of
	// the conversation to fit the model's context (the app says "earlier
	// messages were left out"); ContextShifts counts the times the reply
	// filled the context and went on after older tokens were discarded.
	DroppedMessages int `json:"dropped_messages,omitempty"`
	DroppedTokens   int `json:"dropped_tokens,omitempty"`
	ContextShifts   int `json:"context_shifts,omitempty"`
}

// ConversationCreate is the body of POST /v1/conversations.
type ConversationCreate struct {
	Title    string                `json:"title,omitempty"`
	Model    string                `json:"model,omitempty"`
	System   string                `json:"system,omitempty"`
	Adapters []AdapterRef          `json:"adapters,omitempty"`
	Sampling *SamplingFields       `json:"sampling,omitempty"`
	Messages []ConversationMessage `json:"messages,omitempty"`
}

// ConversationUpdate is the body of PATCH /v1/conversations/{id}: the
// fields present replace the stored ones. Messages, when present, replaces
// the whole thread (regenerate and edit truncate it).
type ConversationUpdate struct {
	Title    *string                `json:"title,omitempty"`
	Model    *string                `json:"model,omitempty"`
	System   *string                `json:"system,omitempty"`
	Adapters *[]AdapterRef          `json:"adapters,omitempty"`
	Sampling *SamplingFields        `json:"sampling,omitempty"`
	Messages *[]ConversationMessage `json:"messages,omitempty"`
}

// ConversationList answers GET /v1/conversations, most recently updated
// first.
type ConversationList struct {
	Conversations []Conversation `json:"conversations"`
}

// MessagesAppend is the body of POST /v1/conversations/{id}/messages.
type MessagesAppend struct {
	Messages []ConversationMessage `json:"messages"`
}

// FeedbackRequest is the body of POST /v1/feedback: a rating of one reply
// and, optionally, the answer the user wanted instead.
type FeedbackRequest struct {
	// RequestID is the "id" of the rated completion.
	RequestID string `json:"request_id"`
	// Signal is SignalRating (the default: Rating is required) or
	// SignalRegenerate (the user asked for another answer; Rating is 0
	// or -1 and there is no correction).
	Signal string `json:"signal,omitempty"`
	// Rating is +1 (thumbs up) or -1 (thumbs down).
	Rating         int    `json:"rating"`
	Correction     string `json:"correction,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	MessageID      string `json:"message_id,omitempty"`
	Comment        string `json:"comment,omitempty"`
}

// Feedback is a stored rating with what it rates: the prompt messages and
// the answer of the request, as the learning loop will consume them.
type Feedback struct {
	FeedbackRequest
	ID       string       `json:"id"`
	Time     time.Time    `json:"time"`
	Model    string       `json:"model,omitempty"`
	Adapters []AdapterRef `json:"adapters,omitempty"`
	Prompt   []Message    `json:"prompt,omitempty"`
	// PromptText is the raw prompt of a text completion (/v1/completions,
	// raw /api/generate), which has no messages.
	PromptText string `json:"prompt_text,omitempty"`
	Answer     string `json:"answer,omitempty"`
	// App is the client name (X-Ruvllm-Client) of the rated request: its
	// learning scope when learning is per app.
	App string `json:"app,omitempty"`
	// Learning says what the learning loop did with the feedback (in the
	// answer of POST /v1/feedback only).
	Learning *FeedbackLearning `json:"learning,omitempty"`
}

// FeedbackList answers GET /v1/feedback, newest first.
type FeedbackList struct {
	Feedback []Feedback `json:"feedback"`
	// HasMore is set when the list stopped at the daemon's byte bound
	// before the limit asked for (each rating carries its exchange).
	HasMore bool `json:"has_more,omitempty"`
}

// Conversations lists the stored conversations without their messages.
func (c *Client) Conversations(ctx context.Context) ([]Conversation, error) {
	var out ConversationList
	err := c.Do(ctx, http.MethodGet, "/v1/conversations", nil, &out)
	return out.Conversations, err
}

// CreateConversation stores a new conversation.
func (c *Client) CreateConversation(ctx context.Context, req ConversationCreate) (Conversation, error) {
	var out Conversation
	err := c.Do(ctx, http.MethodPost, "/v1/conversations", req, &out)
	return out, err
}

// Conversation returns one conversation with its messages.
func (c *Client) Conversation(ctx context.Context, id string) (Conversation, error) {
	var out Conversation
	err := c.Do(ctx, http.MethodGet, "/v1/conversations/"+url.PathEscape(id), nil, &out)
	return out, err
}

// UpdateConversation changes a conversation's settings or thread.
func (c *Client) UpdateConversation(ctx context.Context, id string, req ConversationUpdate) (Conversation, error) {
	var out Conversation
	err := c.Do(ctx, http.MethodPatch, "/v1/conversations/"+url.PathEscape(id), req, &out)
	return out, err
}

// DeleteConversation removes a conversation.
func (c *Client) DeleteConversation(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/conversations/"+url.PathEscape(id), nil, nil)
}

// AppendMessages adds messages to the end of a conversation and returns
// it with the stored messages (ids and times assigned).
func (c *Client) AppendMessages(ctx context.Context, id string, msgs ...ConversationMessage) (Conversation, error) {
	var out Conversation
	err := c.Do(ctx, http.MethodPost, "/v1/conversations/"+url.PathEscape(id)+"/messages", MessagesAppend{Messages: msgs}, &out)
	return out, err
}

// SendFeedback stores a rating of a reply.
func (c *Client) SendFeedback(ctx context.Context, req FeedbackRequest) (Feedback, error) {
	var out Feedback
	err := c.Do(ctx, http.MethodPost, "/v1/feedback", req, &out)
	return out, err
}

// Feedback returns the most recent stored feedback.
func (c *Client) Feedback(ctx context.Context, limit int) ([]Feedback, error) {
	var out FeedbackList
	err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/feedback?limit=%d", limit), nil, &out)
	return out.Feedback, err
}
