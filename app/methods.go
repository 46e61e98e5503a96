package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ruvllm/ruvllm/ipc"
)

// ListConversations returns the conversations, most recent first, without
// their messages.
func (a *App) ListConversations() ([]ipc.Conversation, error) {
	_, store, err := a.conn()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	list, err := store.List(ctx)
	if list == nil {
		list = []ipc.Conversation{}
	}
	return list, err
}

// DefaultMaxTokens bounds the replies of a new conversation: without a
// bound a small model may write until its context is full, and the next
// message then no longer fits. The sampling settings change it.
const DefaultMaxTokens = 512

// CreateConversation starts an empty conversation with the app's default
// model and DefaultMaxTokens.
func (a *App) CreateConversation(title string) (ipc.Conversation, error) {
	_, store, err := a.conn()
	if err != nil {
		return ipc.Conversation{}, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	return store.Create(ctx, ipc.ConversationCreate{Title: strings.TrimSpace(title), Model: a.cfg.modelName(),
		Sampling: &ipc.SamplingFields{MaxTokens: DefaultMaxTokens}})
}

// LoadConversation returns a conversation with its messages.
func (a *App) LoadConversation(id string) (ipc.Conversation, error) {
	_, store, err := a.conn()
	if err != nil {
		return ipc.Conversation{}, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	return store.Get(ctx, id)
}

// RenameConversation sets a conversation's title.
func (a *App) RenameConversation(id, title string) (ipc.Conversation, error) {
	title = strings.TrimSpace(title)
	if title == "" {
		return ipc.Conversation{}, errors.New("empty title")
	}
	return a.update(id, ipc.ConversationUpdate{Title: &title})
}

// DeleteConversation stops any reply in progress and deletes the
// conversation.
func (a *App) DeleteConversation(id string) error {
	_, store, err := a.conn()
	if err != nil {
		return err
	}
	a.Stop(id)
	ctx, cancel := a.callCtx()
	defer cancel()
	return store.Delete(ctx, id)
}

// SetSystemPrompt sets the conversation's system prompt.
func (a *App) SetSystemPrompt(id, system string) (ipc.Conversation, error) {
	return a.update(id, ipc.ConversationUpdate{System: &system})
}

// SetModel sets the model the conversation talks to ("" for the default).
func (a *App) SetModel(id, model string) (ipc.Conversation, error) {
	return a.update(id, ipc.ConversationUpdate{Model: &model})
}

// Sampling is the subset of sampling settings the UI edits; nil fields
// use the daemon's defaults.
type Sampling struct {
	Temperature *float32 `json:"temperature"`
	TopP        *float32 `json:"top_p"`
	TopK        *int     `json:"top_k"`
	MinP        *float32 `json:"min_p"`
	MaxTokens   int      `json:"max_tokens"`
	Seed        *int64   `json:"seed"` // negative or nil: a random seed
	Repeat      float32  `json:"repeat_penalty"`
}

// SetSampling sets the conversation's sampling settings.
func (a *App) SetSampling(id string, s Sampling) (ipc.Conversation, error) {
	// The daemon's chat endpoint takes OpenAI's range: a conversation set
	// above it failed every reply.
	if s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2) {
		return ipc.Conversation{}, errors.New("temperature must be between 0 and 2")
	}
	if s.TopP != nil && (*s.TopP <= 0 || *s.TopP > 1) {
		return ipc.Conversation{}, errors.New("top_p must be in (0, 1]")
	}
	if s.MaxTokens < 0 {
		return ipc.Conversation{}, errors.New("max_tokens must not be negative")
	}
	f := ipc.SamplingFields{Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP,
		MaxTokens: s.MaxTokens, Seed: s.Seed, RepeatPenalty: s.Repeat}
	return a.update(id, ipc.ConversationUpdate{Sampling: &f})
}

// SetAdapters sets the adapters (with scales) applied in the conversation.
func (a *App) SetAdapters(id string, adapters []ipc.AdapterRef) (ipc.Conversation, error) {
	for _, r := range adapters {
		if r.Name == "" || r.Scale < 0 || r.Scale > 4 {
			return ipc.Conversation{}, fmt.Errorf("adapter %q: scale %.2f must be in [0, 4]", r.Name, r.Scale)
		}
	}
	if adapters == nil {
		adapters = []ipc.AdapterRef{}
	}
	return a.update(id, ipc.ConversationUpdate{Adapters: &adapters})
}

func (a *App) update(id string, u ipc.ConversationUpdate) (ipc.Conversation, error) {
	_, store, err := a.conn()
	if err != nil {
		return ipc.Conversation{}, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	return store.Update(ctx, id, u)
}

// Models lists the models the daemon serves.
func (a *App) Models() ([]string, error) {
	c, _, err := a.conn()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	ms, err := c.Models(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ms.Data))
	for _, m := range ms.Data {
		out = append(out, m.ID)
	}
	return out, nil
}

// Adapters lists the installed adapters.
func (a *App) Adapters() ([]ipc.AdapterInfo, error) {
	c, _, err := a.conn()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	list, err := c.Adapters(ctx)
	if list == nil {
		list = []ipc.AdapterInfo{}
	}
	return list, err
}

// AdapterInstall reports one dropped file's installation.
type AdapterInstall struct {
	Path  string           `json:"path"`
	Name  string           `json:"name"`
	State string           `json:"state"` // "installing", "installed", "rejected"
	Error string           `json:"error,omitempty"`
	Info  *ipc.AdapterInfo `json:"info,omitempty"`
}

// InstallAdapter uploads the adapter file at path to the daemon, which
// validates it against the base model; a rejection carries its reason.
// Progress goes out as adapter:install events too.
func (a *App) InstallAdapter(path string) (ipc.AdapterInfo, error) {
	c, _, err := a.conn()
	if err != nil {
		return ipc.AdapterInfo{}, err
	}
	ev := AdapterInstall{Path: path, Name: filepath.Base(path), State: "installing"}
	a.emit(EventAdapterDrop, ev)
	info, err := a.install(c, path)
	if err != nil {
		ev.State, ev.Error = "rejected", err.Error()
		a.emit(EventAdapterDrop, ev)
		return ipc.AdapterInfo{}, err
	}
	ev.State, ev.Info = "installed", &info
	a.emit(EventAdapterDrop, ev)
	return info, nil
}

func (a *App) install(c *ipc.Client, path string) (ipc.AdapterInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return ipc.AdapterInfo{}, err
	}
	// Uploads have a 4 GiB limit; time scales with size, not a fixed bound.
	ctx := a.ctx
	if fi.IsDir() { // a PEFT directory: the daemon reads it in place
		return c.InstallAdapterPath(ctx, path, "")
	}
	return c.UploadAdapter(ctx, path, "")
}

// HandleFileDrop installs each dropped file as an adapter (the Wails
// OnFileDrop callback). Results go out as adapter:install events.
func (a *App) HandleFileDrop(paths []string) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for _, p := range paths {
			if _, err := a.InstallAdapter(p); err != nil {
				a.log.Warn("adapter drop", "path", p, "err", err)
			}
		}
	}()
}

// RemoveAdapter uninstalls an adapter.
func (a *App) RemoveAdapter(name string) error {
	c, _, err := a.conn()
	if err != nil {
		return err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	return c.RemoveAdapter(ctx, name)
}

// SendFeedback rates an assistant message (+1 or -1) with an optional
// correction: the answer the user wanted.
func (a *App) SendFeedback(conversationID, messageID string, rating int, correction string) (ipc.Feedback, error) {
	if rating != 1 && rating != -1 {
		return ipc.Feedback{}, errors.New("rating must be +1 or -1")
	}
	c, store, err := a.conn()
	if err != nil {
		return ipc.Feedback{}, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	conv, err := store.Get(ctx, conversationID)
	if err != nil {
		return ipc.Feedback{}, err
	}
	var msg *ipc.ConversationMessage
	for i := range conv.Messages {
		if conv.Messages[i].ID == messageID {
			msg = &conv.Messages[i]
		}
	}
	if msg == nil || msg.Role != "assistant" || msg.RequestID == "" {
		return ipc.Feedback{}, fmt.Errorf("message %q is not a rated reply of this conversation", messageID)
	}
	return c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: msg.RequestID, Rating: rating,
		Correction: strings.TrimSpace(correction), ConversationID: conversationID, MessageID: messageID})
}

// Stats is the stats view: the app's last replies and the daemon's cache
// and memory figures.
type Stats struct {
	Replies []ReplyStat       `json:"replies"`
	Cache   []ipc.ModelCache  `json:"cache"`
	Loaded  []ipc.LoadedModel `json:"loaded"`
	// Memory is the bytes of loaded models (from /api/ps).
	Memory  int64   `json:"memory"`
	Version string  `json:"version"`
	Uptime  float64 `json:"uptime_seconds"`
}

// Stats gathers the figures of the stats view.
func (a *App) Stats() (Stats, error) {
	c, _, err := a.conn()
	if err != nil {
		return Stats{}, err
	}
	ctx, cancel := a.callCtx()
	defer cancel()
	var s Stats
	a.mu.Lock()
	s.Replies = append([]ReplyStat{}, a.replies...)
	a.mu.Unlock()
	h, err := c.Health(ctx)
	if err != nil {
		return s, err
	}
	s.Loaded, s.Version, s.Uptime = h.Loaded, h.Version, h.UptimeSeconds
	cache, err := c.Cache(ctx)
	if err != nil {
		return s, err
	}
	s.Cache = cache.Models
	ps, err := c.Ps(ctx)
	if err != nil {
		return s, err
	}
	for _, m := range ps.Models {
		s.Memory += m.Size
	}
	return s, nil
}

// HideWindow hides the window, as closing it does: the app keeps running
// in the tray or menu bar (Ctrl+W).
func (a *App) HideWindow() {
	if a.cfg.Window != nil {
		a.cfg.Window.Hide()
	}
}

// Quit ends the app (Ctrl+Q, and the tray's and app menu's Quit); a daemon
// the app did not start keeps serving other apps.
func (a *App) Quit() {
	if a.cfg.Window != nil {
		a.cfg.Window.Quit()
	}
}
