package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// ChatStart announces a reply about to stream.
type ChatStart struct {
	ConversationID string `json:"conversation_id"`
	// User is the stored user message that prompted it (nil on regenerate).
	User *ipc.ConversationMessage `json:"user,omitempty"`
}

// ChatToken is a piece of a streaming reply.
type ChatToken struct {
	ConversationID string `json:"conversation_id"`
	Text           string `json:"text"`
	// Reasoning is a piece of a thinking model's reasoning (Text is then
	// empty): the app shows it apart from the reply.
	Reasoning string `json:"reasoning,omitempty"`
}

// ChatDone ends a reply: the stored assistant message and its figures.
type ChatDone struct {
	ConversationID string                  `json:"conversation_id"`
	CompletionID   string                  `json:"completion_id"`
	Message        ipc.ConversationMessage `json:"message"`
	Stats          ipc.ReplyStats          `json:"stats"`
	FinishReason   string                  `json:"finish_reason"`
}

// ChatError ends a reply that failed or was stopped; the text streamed so
// far is kept in the conversation when Stopped.
type ChatError struct {
	ConversationID string                   `json:"conversation_id"`
	Error          string                   `json:"error"`
	Stopped        bool                     `json:"stopped"`
	Message        *ipc.ConversationMessage `json:"message,omitempty"`
}

// ReplyStat is one finished reply's figures, for the stats view.
type ReplyStat struct {
	ConversationID string    `json:"conversation_id"`
	CompletionID   string    `json:"completion_id"`
	Model          string    `json:"model"`
	Time           time.Time `json:"time"`
	ipc.ReplyStats
}

const maxReplies = 50

type run struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// ErrBusy is returned when a conversation already has a reply streaming.
var ErrBusy = errors.New("a reply is already streaming in this conversation")

// SendMessage stores the user's message and streams the reply as
// chat:token events, ending with chat:done or chat:error. It returns once
// the message is stored; the reply streams in the background.
func (a *App) SendMessage(conversationID, text string) (ipc.ConversationMessage, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return ipc.ConversationMessage{}, errors.New("empty message")
	}
	_, store, err := a.conn()
	if err != nil {
		return ipc.ConversationMessage{}, err
	}
	if a.busy(conversationID) {
		return ipc.ConversationMessage{}, ErrBusy
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	conv, err := store.Append(ctx, conversationID, ipc.ConversationMessage{Role: "user", Content: text, Time: time.Now().UTC()})
	if err != nil {
		return ipc.ConversationMessage{}, fmt.Errorf("store message: %w", err)
	}
	user, err := lastMessage(conv)
	if err != nil {
		return ipc.ConversationMessage{}, fmt.Errorf("store message: %w", err)
	}
	if conv.Title == "" {
		conv = a.autoTitle(ctx, store, conv, text)
	}
	return user, a.reply(conv, &user)
}

// Regenerate drops the conversation's replies after its last user message
// and streams a new one.
func (a *App) Regenerate(conversationID string) error {
	_, store, err := a.conn()
	if err != nil {
		return err
	}
	if a.busy(conversationID) {
		return ErrBusy
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	conv, err := store.Get(ctx, conversationID)
	if err != nil {
		return err
	}
	last := -1
	for i, m := range conv.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return errors.New("nothing to regenerate: no user message")
	}
	if last < len(conv.Messages)-1 {
		msgs := conv.Messages[:last+1]
		if conv, err = store.Update(ctx, conversationID, ipc.ConversationUpdate{Messages: &msgs}); err != nil {
			return fmt.Errorf("truncate conversation: %w", err)
		}
	}
	return a.reply(conv, nil)
}

// Stop cancels the conversation's streaming reply; the daemon stops within
// a token. It waits until the reply has ended.
func (a *App) Stop(conversationID string) {
	a.mu.Lock()
	r := a.runs[conversationID]
	a.mu.Unlock()
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// Streaming reports whether a reply is streaming in the conversation.
func (a *App) Streaming(conversationID string) bool { return a.busy(conversationID) }

func (a *App) busy(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runs[id] != nil
}

// autoTitle names an untitled conversation after its first message.
func (a *App) autoTitle(ctx context.Context, store convStore, conv ipc.Conversation, text string) ipc.Conversation {
	title := strings.Join(strings.Fields(text), " ")
	if r := []rune(title); len(r) > 48 {
		title = strings.TrimSpace(string(r[:47])) + "…"
	}
	c, err := store.Update(ctx, conv.ID, ipc.ConversationUpdate{Title: &title})
	if err != nil {
		a.log.Warn("title conversation", "id", conv.ID, "err", err)
		return conv
	}
	return c
}

// chatRequest builds the completion request for a conversation's thread.
func (a *App) chatRequest(ctx context.Context, c *ipc.Client, conv ipc.Conversation) (ipc.ChatCompletionRequest, error) {
	var req ipc.ChatCompletionRequest
	if conv.Sampling != nil {
		req.SamplingFields = *conv.Sampling
	}
	req.Model = conv.Model
	if req.Model == "" {
		m, err := a.defaultModel(ctx, c)
		if err != nil {
			return req, err
		}
		req.Model = m
	}
	req.Adapters = conv.Adapters
	// A chat outgrowing the context keeps going: the oldest turns after
	// the system prompt are left out (and the reply says so), and a reply
	// that fills the context shifts it (unless the conversation's own
	// settings say otherwise).
	if req.ContextOverflow == "" {
		req.ContextOverflow = "shift"
	}
	if conv.System != "" {
		req.Messages = append(req.Messages, ipc.Message{Role: "system", Content: conv.System})
	}
	for _, m := range conv.Messages {
		if m.Role == "user" || m.Role == "assistant" || m.Role == "system" {
			req.Messages = append(req.Messages, ipc.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent})
		}
	}
	return req, nil
}

// defaultModel is cfg.Model, else the first loaded model, else the first
// listed one.
func (a *App) defaultModel(ctx context.Context, c *ipc.Client) (string, error) {
	if a.cfg.Model != "" {
		return a.cfg.modelName(), nil
	}
	if h, err := c.Health(ctx); err == nil && len(h.Loaded) > 0 {
		return h.Loaded[0].Name, nil
	}
	ms, err := c.Models(ctx)
	if err != nil {
		return "", fmt.Errorf("list models: %w", err)
	}
	if len(ms.Data) == 0 {
		return "", errors.New("the daemon has no models: pull one with `ruvllm pull`")
	}
	return ms.Data[0].ID, nil
}

// reply streams the assistant's answer to conv in the background.
func (a *App) reply(conv ipc.Conversation, user *ipc.ConversationMessage) error {
	c, store, err := a.conn()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(a.ctx)
	r := &run{cancel: cancel, done: make(chan struct{})}
	a.mu.Lock()
	if a.runs[conv.ID] != nil {
		a.mu.Unlock()
		cancel()
		return ErrBusy
	}
	a.runs[conv.ID] = r
	a.mu.Unlock()
	a.emit(EventChatStart, ChatStart{ConversationID: conv.ID, User: user})
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(r.done)
		defer func() {
			a.mu.Lock()
			if a.runs[conv.ID] == r { // end may have let the next reply in
				delete(a.runs, conv.ID)
			}
			a.mu.Unlock()
			cancel()
		}()
		a.stream(ctx, c, store, conv)
	}()
	return nil
}

func (a *App) stream(ctx context.Context, c *ipc.Client, store convStore, conv ipc.Conversation) {
	fail := func(err error) {
		a.end(conv.ID, EventChatError, ChatError{ConversationID: conv.ID, Error: err.Error()})
	}
	req, err := a.chatRequest(ctx, c, conv)
	if err != nil {
		fail(err)
		return
	}
	var (
		text        strings.Builder
		reasoning   strings.Builder
		id, finish  string
		usage       ipc.Usage
		start       = time.Now()
		first, last time.Time
	)
	err = c.ChatStream(ctx, req, func(ch ipc.ChatCompletionChunk) error {
		if id == "" {
			id = ch.ID
		}
		if ch.Usage != nil {
			usage = *ch.Usage
		}
		for _, choice := range ch.Choices {
			if choice.FinishReason != nil {
				finish = *choice.FinishReason
			}
			d := choice.Delta
			if d.Content == "" && d.ReasoningContent == "" {
				continue
			}
			if first.IsZero() {
				first = time.Now()
			}
			last = time.Now()
			text.WriteString(d.Content)
			reasoning.WriteString(d.ReasoningContent)
			a.emit(EventChatToken, ChatToken{ConversationID: conv.ID, Text: d.Content, Reasoning: d.ReasoningContent})
		}
		return nil
	})
	stopped := err != nil && ctx.Err() != nil
	if err != nil && !stopped {
		fail(err)
		return
	}
	stats := ipc.ReplyStats{PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens}
	if usage.PromptTokensDetails != nil {
		stats.CachedTokens = usage.PromptTokensDetails.CachedTokens
	}
	if o := usage.ContextOverflow; o != nil {
		stats.DroppedMessages, stats.DroppedTokens, stats.ContextShifts = o.DroppedMessages, o.DroppedTokens, o.Shifts
	}
	if !first.IsZero() {
		stats.TTFTMillis = float64(first.Sub(start).Microseconds()) / 1000
		if n := stats.CompletionTokens; n > 1 && last.After(first) {
			stats.TokensPerSecond = float64(n-1) / last.Sub(first).Seconds()
		}
	}
	msg := ipc.ConversationMessage{Role: "assistant", Content: text.String(), ReasoningContent: reasoning.String(),
		Time: time.Now().UTC(), RequestID: id, Stats: &stats}
	// Store with the app's context: a stopped reply keeps what streamed.
	sctx, cancel := a.callCtx()
	defer cancel()
	if stopped && msg.Content == "" && msg.ReasoningContent == "" {
		a.end(conv.ID, EventChatError, ChatError{ConversationID: conv.ID, Error: "stopped", Stopped: true})
		return
	}
	stored, err := store.Append(sctx, conv.ID, msg)
	if err != nil {
		fail(fmt.Errorf("store reply: %w", err))
		return
	}
	if msg, err = lastMessage(stored); err != nil {
		fail(fmt.Errorf("store reply: %w", err))
		return
	}
	if stopped {
		a.end(conv.ID, EventChatError, ChatError{ConversationID: conv.ID, Error: "stopped", Stopped: true, Message: &msg})
		return
	}
	a.recordReply(ReplyStat{ConversationID: conv.ID, CompletionID: id, Model: req.Model, Time: msg.Time, ReplyStats: stats})
	done := ChatDone{ConversationID: conv.ID, CompletionID: id, Message: msg, Stats: stats, FinishReason: finish}
	// The trace line first: whoever sees chat:done may read the trace.
	if a.trace != nil {
		a.trace.Reply(done, lastUser(conv))
	}
	a.end(conv.ID, EventChatDone, done)
}

// end finishes conversation id's reply with its last event: the reply is
// no longer running before anyone hears it ended, so an app that sends the
// next message on chat:done is not refused as busy.
func (a *App) end(id, event string, data any) {
	a.mu.Lock()
	delete(a.runs, id)
	a.mu.Unlock()
	a.emit(event, data)
}

// lastMessage is the message an append stored: the last of the thread the
// store answers. A thread without one (a daemon that answers an append
// with no messages) is an error: indexing it panicked, which ended the
// whole app.
func lastMessage(c ipc.Conversation) (ipc.ConversationMessage, error) {
	if len(c.Messages) == 0 {
		return ipc.ConversationMessage{}, fmt.Errorf("conversation %s: the daemon answered the append without the thread", c.ID)
	}
	return c.Messages[len(c.Messages)-1], nil
}

// lastUser is the text of the conversation's last user message.
func lastUser(c ipc.Conversation) string {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == "user" {
			return c.Messages[i].Content
		}
	}
	return ""
}

func (a *App) recordReply(s ReplyStat) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.replies = append(a.replies, s)
	if len(a.replies) > maxReplies {
		a.replies = a.replies[len(a.replies)-maxReplies:]
	}
}
