package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// convStore keeps conversations: the daemon's /v1/conversations, or the
// app's memory when the daemon lacks that API.
type convStore interface {
	List(ctx context.Context) ([]ipc.Conversation, error)
	Create(ctx context.Context, req ipc.ConversationCreate) (ipc.Conversation, error)
	Get(ctx context.Context, id string) (ipc.Conversation, error)
	Update(ctx context.Context, id string, req ipc.ConversationUpdate) (ipc.Conversation, error)
	Delete(ctx context.Context, id string) error
	Append(ctx context.Context, id string, msgs ...ipc.ConversationMessage) (ipc.Conversation, error)
}

// daemonStore is the daemon's conversations API.
type daemonStore struct{ c *ipc.Client }

func (d daemonStore) List(ctx context.Context) ([]ipc.Conversation, error) {
	return d.c.Conversations(ctx)
}
func (d daemonStore) Create(ctx context.Context, req ipc.ConversationCreate) (ipc.Conversation, error) {
	return d.c.CreateConversation(ctx, req)
}
func (d daemonStore) Get(ctx context.Context, id string) (ipc.Conversation, error) {
	return d.c.Conversation(ctx, id)
}
func (d daemonStore) Update(ctx context.Context, id string, req ipc.ConversationUpdate) (ipc.Conversation, error) {
	return d.c.UpdateConversation(ctx, id, req)
}
func (d daemonStore) Delete(ctx context.Context, id string) error {
	return d.c.DeleteConversation(ctx, id)
}
func (d daemonStore) Append(ctx context.Context, id string, msgs ...ipc.ConversationMessage) (ipc.Conversation, error) {
	return d.c.AppendMessages(ctx, id, msgs...)
}

// memStore keeps conversations for the app's lifetime, with the daemon
// API's semantics (ids and times assigned, lists newest first, no
// messages in lists).
type memStore struct {
	mu    sync.Mutex
	convs map[string]*ipc.Conversation
}

func newMemStore() *memStore { return &memStore{convs: map[string]*ipc.Conversation{}} }

func newID(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func errNotFound(id string) error {
	return &ipc.APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("conversation %q not found", id)}
}

func copyConv(c *ipc.Conversation, withMessages bool) ipc.Conversation {
	out := *c
	out.Messages = nil
	if withMessages {
		out.Messages = slices.Clone(c.Messages)
	}
	out.MessageCount = len(c.Messages)
	return out
}

func stamp(msgs []ipc.ConversationMessage) []ipc.ConversationMessage {
	out := slices.Clone(msgs)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = newID("msg_")
		}
		if out[i].Time.IsZero() {
			out[i].Time = time.Now().UTC()
		}
	}
	return out
}

func (m *memStore) List(context.Context) ([]ipc.Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ipc.Conversation, 0, len(m.convs))
	for _, c := range m.convs {
		out = append(out, copyConv(c, false))
	}
	slices.SortFunc(out, func(a, b ipc.Conversation) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return out, nil
}

func (m *memStore) Create(_ context.Context, req ipc.ConversationCreate) (ipc.Conversation, error) {
	now := time.Now().UTC()
	c := &ipc.Conversation{ID: newID("conv_"), Title: req.Title, Model: req.Model, System: req.System,
		Adapters: req.Adapters, Sampling: req.Sampling, CreatedAt: now, UpdatedAt: now, Messages: stamp(req.Messages)}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.convs[c.ID] = c
	return copyConv(c, true), nil
}

func (m *memStore) Get(_ context.Context, id string) (ipc.Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.convs[id]
	if !ok {
		return ipc.Conversation{}, errNotFound(id)
	}
	return copyConv(c, true), nil
}

func (m *memStore) Update(_ context.Context, id string, req ipc.ConversationUpdate) (ipc.Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.convs[id]
	if !ok {
		return ipc.Conversation{}, errNotFound(id)
	}
	if req.Title != nil {
		c.Title = *req.Title
	}
	if req.Model != nil {
		c.Model = *req.Model
	}
	if req.System != nil {
		c.System = *req.System
	}
	if req.Adapters != nil {
		c.Adapters = slices.Clone(*req.Adapters)
	}
	if req.Sampling != nil {
		s := *req.Sampling
		c.Sampling = &s
	}
	if req.Messages != nil {
		c.Messages = stamp(*req.Messages)
	}
	c.UpdatedAt = time.Now().UTC()
	return copyConv(c, true), nil
}

func (m *memStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.convs[id]; !ok {
		return errNotFound(id)
	}
	delete(m.convs, id)
	return nil
}

func (m *memStore) Append(_ context.Context, id string, msgs ...ipc.ConversationMessage) (ipc.Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.convs[id]
	if !ok {
		return ipc.Conversation{}, errNotFound(id)
	}
	c.Messages = append(c.Messages, stamp(msgs)...)
	c.UpdatedAt = time.Now().UTC()
	return copyConv(c, true), nil
}
