package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// dial connects an ipc client to the test daemon's socket.
func (ta *testAPI) dial(t *testing.T) *ipc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.WithSocket(ta.sock), ipc.WithApp("conv-test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// watchEvents subscribes to /v1/events through c and returns the events
// as they arrive. It returns once the subscription is live: it publishes
// pings until one comes back.
func (ta *testAPI) watchEvents(t *testing.T, c *ipc.Client) <-chan ipc.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan ipc.Event, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Events(ctx, func(e ipc.Event) error {
			select {
			case ch <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for {
		ta.srv.Events().Publish("test.ping", nil)
		select {
		case e := <-ch:
			if e.Type == "test.ping" {
				return ch
			}
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no event arrived on /v1/events")
		}
	}
}

// nextEvent returns the next event of type typ, skipping others (pings,
// request.finished, model.loaded).
func nextEvent(t *testing.T, ch <-chan ipc.Event, typ string, into any) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e := <-ch:
			if e.Type != typ {
				continue
			}
			if err := json.Unmarshal(e.Data, into); err != nil {
				t.Fatalf("event %s: %v: %s", typ, err, e.Data)
			}
			return
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

// apiError asserts err is the daemon's native error with status and a
// message containing want.
func apiError(t *testing.T, err error, status int, want string) {
	t.Helper()
	var ae *ipc.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want an *ipc.APIError", err, err)
	}
	if ae.Status != status || !strings.Contains(ae.Message, want) || ae.Type == "" {
		t.Fatalf("error status %d type %q message %q; want %d with %q", ae.Status, ae.Type, ae.Message, status, want)
	}
}

func TestConversationLifecycle(t *testing.T) {
	ta := startAPI(t)
	c := ta.dial(t)
	events := ta.watchEvents(t, c)
	ctx := context.Background()
	temp := float32(0.3)

	created, err := c.CreateConversation(ctx, ipc.ConversationCreate{Model: "fake", System: "Be brief.",
		Sampling: &ipc.SamplingFields{Temperature: &temp},
		Messages: []ipc.ConversationMessage{{Role: "user", Content: "What is a kernel?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.ID, "conv-") || created.Title != "What is a kernel?" || created.MessageCount != 1 ||
		len(created.Messages) != 1 || created.Messages[0].ID == "" || created.Messages[0].Time.IsZero() ||
		created.System != "Be brief." || created.Sampling == nil || *created.Sampling.Temperature != temp {
		t.Fatalf("created %+v", created)
	}
	var ev ipc.Conversation
	nextEvent(t, events, "conversation.created", &ev)
	if ev.ID != created.ID || ev.MessageCount != 1 || ev.Messages != nil {
		t.Fatalf("created event %+v", ev)
	}

	second, err := c.CreateConversation(ctx, ipc.ConversationCreate{Title: "Second"})
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, events, "conversation.created", &ev)

	// Appending moves the first conversation to the top of the list.
	stats := &ipc.ReplyStats{PromptTokens: 11, CompletionTokens: 7, TokensPerSecond: 1000}
	got, err := c.AppendMessages(ctx, created.ID, ipc.ConversationMessage{Role: "assistant", Content: "A program.", RequestID: "chatcmpl-x", Stats: stats})
	if err != nil {
		t.Fatal(err)
	}
	if got.MessageCount != 2 || len(got.Messages) != 2 || got.Messages[1].RequestID != "chatcmpl-x" || *got.Messages[1].Stats != *stats {
		t.Fatalf("after append %+v", got)
	}
	nextEvent(t, events, "conversation.updated", &ev)
	if ev.ID != created.ID || ev.MessageCount != 2 || ev.Messages != nil {
		t.Fatalf("updated event %+v", ev)
	}
	list, err := c.Conversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != created.ID || list[1].ID != second.ID || list[0].Messages != nil || list[0].MessageCount != 2 {
		t.Fatalf("list %+v", list)
	}

	// PATCH renames and truncates the thread (regenerate), keeping the
	// id of the message it keeps.
	title := "Kernels"
	keep := got.Messages[:1]
	upd, err := c.UpdateConversation(ctx, created.ID, ipc.ConversationUpdate{Title: &title, Messages: &keep})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Title != title || upd.MessageCount != 1 || len(upd.Messages) != 1 || upd.Messages[0].ID != keep[0].ID || upd.System != "Be brief." {
		t.Fatalf("after update %+v", upd)
	}
	nextEvent(t, events, "conversation.updated", &ev)
	if ev.Title != title {
		t.Fatalf("update event %+v", ev)
	}
	full, err := c.Conversation(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if full.Title != title || len(full.Messages) != 1 || full.Messages[0].Content != "What is a kernel?" {
		t.Fatalf("get %+v", full)
	}

	if err := c.DeleteConversation(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	var del struct{ ID string }
	nextEvent(t, events, "conversation.deleted", &del)
	if del.ID != created.ID {
		t.Fatalf("delete event %+v", del)
	}
	_, err = c.Conversation(ctx, created.ID)
	apiError(t, err, http.StatusNotFound, created.ID)
	if list, _ = c.Conversations(ctx); len(list) != 1 || list[0].ID != second.ID {
		t.Fatalf("list after delete %+v", list)
	}
}

func TestFeedbackLinksCompletion(t *testing.T) {
	ta := startAPI(t)
	c := ta.dial(t)
	events := ta.watchEvents(t, c)
	ctx := context.Background()
	prompt := []ipc.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hello."}}
	answer := strings.Join(script, "")

	resp, err := c.Chat(ctx, ipc.ChatCompletionRequest{Model: "fake", Messages: prompt})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := c.CreateConversation(ctx, ipc.ConversationCreate{Messages: []ipc.ConversationMessage{
		{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hello."},
		{Role: "assistant", Content: resp.Choices[0].Message.Content, RequestID: resp.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	msgID := conv.Messages[2].ID
	fb, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: resp.ID, Rating: -1, Correction: "Hello.",
		ConversationID: conv.ID, MessageID: msgID, Comment: "too long"})
	if err != nil {
		t.Fatal(err)
	}
	if fb.ID == "" || fb.RequestID != resp.ID || fb.Rating != -1 || fb.Correction != "Hello." || fb.Model != "fake" ||
		fb.Answer != answer || len(fb.Prompt) != 2 || !reflect.DeepEqual(fb.Prompt, prompt[:2]) ||
		fb.ConversationID != conv.ID || fb.MessageID != msgID {
		t.Fatalf("feedback %+v", fb)
	}
	var ev ipc.Feedback
	nextEvent(t, events, "feedback.received", &ev)
	if ev.ID != fb.ID || ev.RequestID != resp.ID || ev.Rating != -1 || ev.Model != "fake" || ev.Answer != "" || ev.Prompt != nil {
		t.Fatalf("feedback event %+v", ev)
	}

	// Every generation endpoint's id names its exchange: the streamed chat
	// id, the X-Ruvllm-Request-Id header of a text completion and the
	// request_id of Ollama's final object.
	var streamID string
	err = c.ChatStream(ctx, ipc.ChatCompletionRequest{Model: "fake", Messages: prompt[1:]}, func(ch ipc.ChatCompletionChunk) error {
		streamID = ch.ID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r, body := ta.post(t, "/v1/completions", `{"model":"fake","prompt":"The kernel"}`)
	var cmpl ipc.CompletionResponse
	if err := json.Unmarshal(body, &cmpl); err != nil || r.Header.Get(RequestIDHeader) != cmpl.ID || cmpl.ID == "" {
		t.Fatalf("completion id %q, header %q: %v", cmpl.ID, r.Header.Get(RequestIDHeader), err)
	}
	r, body = ta.post(t, "/api/chat", `{"model":"fake","stream":false,"messages":[{"role":"user","content":"Hi there"}]}`)
	var oll ipc.OllamaChatResponse
	if err := json.Unmarshal(body, &oll); err != nil || oll.RequestID == "" || r.Header.Get(RequestIDHeader) != oll.RequestID {
		t.Fatalf("ollama request_id %q, header %q: %v", oll.RequestID, r.Header.Get(RequestIDHeader), err)
	}
	for _, tc := range []struct {
		id, promptText, lastUser string
	}{
		{streamID, "", "Say hello."},
		{cmpl.ID, "The kernel", ""},
		{oll.RequestID, "", "Hi there"},
	} {
		fb, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: tc.id, Rating: 1})
		if err != nil {
			t.Fatalf("feedback on %s: %v", tc.id, err)
		}
		last := ""
		if len(fb.Prompt) > 0 {
			last = fb.Prompt[len(fb.Prompt)-1].Content
		}
		if fb.Answer != answer || fb.PromptText != tc.promptText || last != tc.lastUser {
			t.Fatalf("feedback on %s: %+v", tc.id, fb)
		}
	}

	// Rating a reply again replaces the earlier rating.
	if _, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: resp.ID, Rating: 1}); err != nil {
		t.Fatal(err)
	}
	list, err := c.Feedback(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 || list[0].RequestID != resp.ID || list[0].Rating != 1 || list[0].Answer != answer {
		t.Fatalf("feedback list %+v", list)
	}
	if list, _ := c.Feedback(ctx, 2); len(list) != 2 {
		t.Fatalf("limit 2 gave %d", len(list))
	}
}

func TestConversationErrors(t *testing.T) {
	ta := startAPI(t)
	c := ta.dial(t)
	ctx := context.Background()
	resp, err := c.Chat(ctx, ipc.ChatCompletionRequest{Model: "fake", Messages: []ipc.Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := c.CreateConversation(ctx, ipc.ConversationCreate{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", maxTitleRunes+1)
	bad := []ipc.ConversationMessage{{Role: "tool", Content: "x"}}
	hot := float32(-1)
	// Written in range, but past year 9999 (or before year 0) in UTC, where
	// the store keeps times: it was a 500 that named MarshalJSON.
	late := []ipc.ConversationMessage{{Role: "user", Content: "x", Time: time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -(23*3600+59*60)))}}
	early := []ipc.ConversationMessage{{Role: "user", Content: "x", Time: time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("", 23*3600+59*60))}}
	for _, tc := range []struct {
		name   string
		call   func() error
		status int
		want   string
	}{
		{"get unknown", func() error { _, err := c.Conversation(ctx, "conv-nope"); return err }, 404, `conversation "conv-nope"`},
		{"patch unknown", func() error {
			_, err := c.UpdateConversation(ctx, "conv-nope", ipc.ConversationUpdate{})
			return err
		}, 404, "not found"},
		{"delete unknown", func() error { return c.DeleteConversation(ctx, "conv-nope") }, 404, "not found"},
		{"append unknown", func() error {
			_, err := c.AppendMessages(ctx, "conv-nope", ipc.ConversationMessage{Role: "user", Content: "x"})
			return err
		}, 404, "not found"},
		{"append nothing", func() error { _, err := c.AppendMessages(ctx, conv.ID); return err }, 400, "messages must not be empty"},
		{"bad role", func() error { _, err := c.AppendMessages(ctx, conv.ID, bad...); return err }, 400, `messages[0].role`},
		{"create time after 9999", func() error {
			_, err := c.CreateConversation(ctx, ipc.ConversationCreate{Messages: late})
			return err
		}, 400, "messages[0].time is in the year 10000"},
		{"append time before 0", func() error { _, err := c.AppendMessages(ctx, conv.ID, early...); return err }, 400, "messages[0].time is in the year -1"},
		{"patch time after 9999", func() error {
			_, err := c.UpdateConversation(ctx, conv.ID, ipc.ConversationUpdate{Messages: &late})
			return err
		}, 400, "messages[0].time"},
		{"long title", func() error {
			_, err := c.CreateConversation(ctx, ipc.ConversationCreate{Title: long})
			return err
		}, 400, "title is 201 characters"},
		{"patch bad sampling", func() error {
			_, err := c.UpdateConversation(ctx, conv.ID, ipc.ConversationUpdate{Sampling: &ipc.SamplingFields{Temperature: &hot}})
			return err
		}, 400, "sampling:"},
		{"adapter without name", func() error {
			_, err := c.CreateConversation(ctx, ipc.ConversationCreate{Adapters: []ipc.AdapterRef{{Scale: 1}}})
			return err
		}, 400, "adapters[0].name is required"},
		{"rating 0", func() error { _, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: resp.ID}); return err }, 400, "rating must be 1"},
		{"rating 2", func() error {
			_, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: resp.ID, Rating: 2})
			return err
		}, 400, "not 2"},
		{"no request id", func() error { _, err := c.SendFeedback(ctx, ipc.FeedbackRequest{Rating: 1}); return err }, 400, "request_id is required"},
		{"unknown request id", func() error {
			_, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: "chatcmpl-nope", Rating: 1})
			return err
		}, 404, `unknown request_id "chatcmpl-nope"`},
		{"unknown conversation", func() error {
			_, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: resp.ID, Rating: 1, ConversationID: "conv-nope"})
			return err
		}, 404, `conversation "conv-nope"`},
		{"unknown message", func() error {
			_, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: resp.ID, Rating: 1, ConversationID: conv.ID, MessageID: "m-nope"})
			return err
		}, 404, "m-nope"},
		{"message without conversation", func() error {
			_, err := c.SendFeedback(ctx, ipc.FeedbackRequest{RequestID: resp.ID, Rating: 1, MessageID: "m"})
			return err
		}, 400, "message_id needs conversation_id"},
		{"bad limit", func() error { return c.Do(ctx, http.MethodGet, "/v1/feedback?limit=-3", nil, nil) }, 400, "must be an integer from 1 to 1000"},
		// Over the bound: refused, not cut to it in silence.
		{"limit over 1000", func() error { return c.Do(ctx, http.MethodGet, "/v1/feedback?limit=5000", nil, nil) }, 400, "must be an integer from 1 to 1000"},
		{"rating as a word", func() error {
			return c.Do(ctx, http.MethodPost, "/v1/feedback", map[string]any{"request_id": resp.ID, "rating": "up"}, nil)
		}, 400, `field "rating" must be an integer, not string`},
		{"body too large", func() error {
			// The test daemon's body limit is 64 KiB.
			_, err := c.CreateConversation(ctx, ipc.ConversationCreate{System: strings.Repeat("x", 70<<10)})
			return err
		}, 413, "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) { apiError(t, tc.call(), tc.status, tc.want) })
	}
	if list, _ := c.Feedback(ctx, 10); len(list) != 0 {
		t.Fatalf("refused feedback was stored: %+v", list)
	}
}

// FuzzConversationRequests feeds arbitrary bodies to the conversation and
// feedback request types and their validation: the answer is nil or a
// client error (4xx), never a panic.
func FuzzConversationRequests(f *testing.F) {
	for _, s := range []string{
		`{"title":"t","model":"m","system":"s","adapters":[{"name":"a","scale":0.5}],"sampling":{"temperature":0.2,"top_k":3},"messages":[{"role":"user","content":"hi"}]}`,
		`{"title":null,"messages":[{"role":"assistant","content":"x","request_id":"chatcmpl-1","stats":{"prompt_tokens":3}}]}`,
		`{"messages":[]}`, `{"sampling":{"temperature":-1}}`, `{"adapters":[{}]}`,
		`{"request_id":"chatcmpl-1","rating":-1,"correction":"c","conversation_id":"conv-1","message_id":"m"}`,
		`{"request_id":"x","rating":"up"}`, `{"rating":1e99}`, `[]`, `null`,
		`{"messages":[{"role":"user","content":"x","time":"9999-12-31T23:59:59-23:59"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		check := func(v any, validate func() error) {
			err := decodeString(body, v)
			if err == nil {
				err = validate()
			}
			var re *requestError
			if err != nil && (!errors.As(err, &re) || re.status < 400 || re.status > 499) {
				t.Fatalf("%q into %T: %v", body, v, err)
			}
		}
		var create ipc.ConversationCreate
		check(&create, func() error { return validateCreate(create) })
		var update ipc.ConversationUpdate
		check(&update, func() error { return validateUpdate(update) })
		var app ipc.MessagesAppend
		check(&app, func() error { return validateAppend(app) })
		var fb ipc.FeedbackRequest
		check(&fb, func() error { return validateFeedback(fb) })
	})
}

// TestGenerateWithoutTemplateIsOneExchange checks that /api/generate on a
// model without a chat template, which the handler retries as a raw
// prompt, leaves one request record and one exchange under its id.
func TestGenerateWithoutTemplateIsOneExchange(t *testing.T) {
	ta := startAPI(t)
	f := ta.fakes["fake"]
	f.mu.Lock()
	f.noTemplate = true
	f.mu.Unlock()
	resp, body := ta.post(t, "/api/generate", `{"model":"fake","prompt":"The kernel","stream":false}`)
	var out ipc.OllamaGenerateResponse
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != 200 || out.RequestID == "" || out.Response != strings.Join(script, "") {
		t.Fatalf("status %d: %s (%v)", resp.StatusCode, body, err)
	}
	recs, err := ta.srv.Store().RecentRequests(context.Background(), 10)
	if err != nil || len(recs) != 1 || recs[0].ID != out.RequestID || recs[0].Status != "ok" {
		t.Fatalf("records %+v %v", recs, err)
	}
	ex, err := ta.srv.Store().Exchange(context.Background(), out.RequestID)
	if err != nil || ex.PromptText != "The kernel" || ex.Prompt != nil || ex.Answer != out.Response {
		t.Fatalf("exchange %+v %v", ex, err)
	}
}
