package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/ipc"
)

// Bounds on stored conversations and feedback. The server's body limit
// caps a request as a whole; these keep single fields sane.
const (
	maxTitleRunes    = 200
	maxNameBytes     = 256 // model, adapter names, ids
	maxSystemBytes   = 256 << 10
	maxContentBytes  = 1 << 20
	maxMessages      = 10000 // per request
	maxCommentRunes  = 4000
	defaultFeedbacks = 50
)

// registerConversations mounts the conversation and feedback endpoints.
func (a *API) registerConversations() {
	a.srv.Handle("GET /v1/conversations", http.HandlerFunc(a.listConversations))
	a.srv.Handle("POST /v1/conversations", http.HandlerFunc(a.createConversation))
	a.srv.Handle("GET /v1/conversations/{id}", http.HandlerFunc(a.getConversation))
	a.srv.Handle("PATCH /v1/conversations/{id}", http.HandlerFunc(a.updateConversation))
	a.srv.Handle("DELETE /v1/conversations/{id}", http.HandlerFunc(a.deleteConversation))
	a.srv.Handle("POST /v1/conversations/{id}/messages", http.HandlerFunc(a.appendMessages))
	a.srv.Handle("POST /v1/feedback", http.HandlerFunc(a.postFeedback))
	a.srv.Handle("GET /v1/feedback", http.HandlerFunc(a.listFeedback))
}

func (a *API) listConversations(w http.ResponseWriter, r *http.Request) {
	list, err := a.srv.Store().Conversations(r.Context())
	if err != nil {
		openAIError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.ConversationList{Conversations: list})
}

func (a *API) createConversation(w http.ResponseWriter, r *http.Request) {
	var body ipc.ConversationCreate
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	if err := validateCreate(body); err != nil {
		openAIError(w, err)
		return
	}
	c, err := a.srv.Store().CreateConversation(r.Context(), ipc.Conversation{Title: body.Title, Model: body.Model, System: body.System,
		Adapters: body.Adapters, Sampling: body.Sampling, Messages: body.Messages})
	if err != nil {
		openAIError(w, err)
		return
	}
	a.conversationEvent("conversation.created", c)
	daemon.WriteJSON(w, http.StatusCreated, c)
}

func (a *API) getConversation(w http.ResponseWriter, r *http.Request) {
	c, err := a.srv.Store().Conversation(r.Context(), r.PathValue("id"))
	if err != nil {
		openAIError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, c)
}

func (a *API) updateConversation(w http.ResponseWriter, r *http.Request) {
	var body ipc.ConversationUpdate
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	if err := validateUpdate(body); err != nil {
		openAIError(w, err)
		return
	}
	var regen string
	if body.Messages != nil {
		if old, err := a.srv.Store().Conversation(r.Context(), r.PathValue("id")); err == nil {
			regen = regenerated(old.Messages, *body.Messages)
		}
	}
	c, err := a.srv.Store().UpdateConversation(r.Context(), r.PathValue("id"), body)
	if err != nil {
		openAIError(w, err)
		return
	}
	if regen != "" {
		a.learnRegenerate(r, c.ID, regen)
	}
	a.conversationEvent("conversation.updated", c)
	daemon.WriteJSON(w, http.StatusOK, c)
}

func (a *API) deleteConversation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := a.srv.Store().DeleteConversation(r.Context(), id); err != nil {
		openAIError(w, err)
		return
	}
	a.srv.Events().Publish("conversation.deleted", map[string]string{"id": id})
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) appendMessages(w http.ResponseWriter, r *http.Request) {
	var body ipc.MessagesAppend
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	if err := validateAppend(body); err != nil {
		openAIError(w, err)
		return
	}
	c, err := a.srv.Store().AppendMessages(r.Context(), r.PathValue("id"), body.Messages)
	if err != nil {
		openAIError(w, err)
		return
	}
	a.conversationEvent("conversation.updated", c)
	daemon.WriteJSON(w, http.StatusOK, c)
}

// conversationEvent announces c on /v1/events without its messages: a
// subscriber refreshes its list from the event and fetches the thread it
// shows with GET /v1/conversations/{id}.
func (a *API) conversationEvent(typ string, c ipc.Conversation) {
	c.Messages = nil
	a.srv.Events().Publish(typ, c)
}

func (a *API) postFeedback(w http.ResponseWriter, r *http.Request) {
	var body ipc.FeedbackRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	if err := validateFeedback(body); err != nil {
		openAIError(w, err)
		return
	}
	arrived := time.Now()
	fb, err := a.srv.Store().AddFeedback(r.Context(), body)
	if errors.Is(err, store.ErrRated) {
		openAIError(w, &requestError{status: http.StatusConflict, msg: err.Error(), param: "signal"})
		return
	}
	if err != nil {
		openAIError(w, err)
		return
	}
	// The event names the rating; the prompt and answer it copies can be
	// large, and a subscriber that wants them reads GET /v1/feedback.
	ev := fb
	ev.Prompt, ev.PromptText, ev.Answer = nil, "", ""
	a.srv.Events().Publish("feedback.received", ev)
	// The rating is stored (and listed as not learned yet) before the
	// learner sees it: kill -9 from here on loses no signal.
	if svc := a.learner(); svc != nil {
		l := svc.Learn(r.Context(), fb, arrived)
		fb.Learning = &l
	}
	daemon.WriteJSON(w, http.StatusCreated, fb)
}

// regenerated returns the request id of the reply a conversation update
// drops the way the app's regenerate does: the new thread is the old one
// cut after a user message, and the first message cut is a reply with a
// request id. Other edits return "".
func regenerated(old []ipc.ConversationMessage, next []ipc.ConversationMessage) string {
	if len(next) == 0 || len(next) >= len(old) || next[len(next)-1].Role != "user" {
		return ""
	}
	for i, m := range next {
		if m.ID == "" || m.ID != old[i].ID || m.Content != old[i].Content {
			return ""
		}
	}
	if cut := old[len(next)]; cut.Role == "assistant" && cut.RequestID != "" {
		return cut.RequestID
	}
	return ""
}

// learnRegenerate records and learns the implicit signal of a regenerate:
// a mild negative about the reply the user replaced.
func (a *API) learnRegenerate(r *http.Request, convID, requestID string) {
	arrived := time.Now()
	fb, err := a.srv.Store().AddFeedback(r.Context(), ipc.FeedbackRequest{RequestID: requestID, Signal: ipc.SignalRegenerate,
		Rating: -1, ConversationID: convID})
	if err != nil {
		if !errors.Is(err, store.ErrRated) && !errors.Is(err, store.ErrNotFound) {
			a.log.Warn("regenerate signal not stored", "request", requestID, "err", err)
		}
		return
	}
	ev := fb
	ev.Prompt, ev.PromptText, ev.Answer = nil, "", ""
	a.srv.Events().Publish("feedback.received", ev)
	if svc := a.learner(); svc != nil {
		// Learned in the scope's worker; the answer does not wait.
		svc.Learn(context.WithoutCancel(r.Context()), fb, arrived)
	}
}

func (a *API) listFeedback(w http.ResponseWriter, r *http.Request) {
	// At most daemon.MaxListLimit: a larger limit is refused, not cut in silence.
	limit, err := limitParam(r, defaultFeedbacks)
	if err != nil {
		openAIError(w, err)
		return
	}
	list, more, err := a.srv.Store().RecentFeedback(r.Context(), limit)
	if err != nil {
		openAIError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.FeedbackList{Feedback: list, HasMore: more})
}

// The validate functions check a decoded body before it reaches the
// store; each error is a 400 that names the field.

func validateCreate(body ipc.ConversationCreate) error {
	return firstError(
		checkTitle(body.Title), checkName("model", body.Model), checkSystem(body.System),
		checkConversationAdapters(body.Adapters), checkStoredSampling(body.Sampling), checkMessages(body.Messages),
	)
}

func validateUpdate(body ipc.ConversationUpdate) error {
	var checks []error
	if body.Title != nil {
		checks = append(checks, checkTitle(*body.Title))
	}
	if body.Model != nil {
		checks = append(checks, checkName("model", *body.Model))
	}
	if body.System != nil {
		checks = append(checks, checkSystem(*body.System))
	}
	if body.Adapters != nil {
		checks = append(checks, checkConversationAdapters(*body.Adapters))
	}
	if body.Messages != nil {
		checks = append(checks, checkMessages(*body.Messages))
	}
	checks = append(checks, checkStoredSampling(body.Sampling))
	return firstError(checks...)
}

func validateAppend(body ipc.MessagesAppend) error {
	if len(body.Messages) == 0 {
		return badField("messages", "messages must not be empty")
	}
	return checkMessages(body.Messages)
}

func validateFeedback(body ipc.FeedbackRequest) error {
	err := firstError(
		required("request_id", body.RequestID), checkName("request_id", body.RequestID),
		checkName("conversation_id", body.ConversationID), checkName("message_id", body.MessageID),
		checkBytes("correction", body.Correction, maxContentBytes), checkRunes("comment", body.Comment, maxCommentRunes),
	)
	switch {
	case err != nil:
		return err
	case body.Signal == ipc.SignalRegenerate:
		if body.Rating != 0 && body.Rating != -1 {
			return badParam("rating", "must be 0 or -1 with signal %q, not %d", ipc.SignalRegenerate, body.Rating)
		}
		if body.Correction != "" {
			return badParam("correction", "must be empty with signal %q", ipc.SignalRegenerate)
		}
	case body.Signal != "" && body.Signal != ipc.SignalRating:
		return badParam("signal", "must be %q (the default) or %q, not %q", ipc.SignalRating, ipc.SignalRegenerate, body.Signal)
	case body.Rating != 1 && body.Rating != -1:
		return badField("rating", "rating must be 1 (up, good) or -1 (down, bad), not %d", body.Rating)
	case body.MessageID != "" && body.ConversationID == "":
		return badField("message_id", "message_id needs conversation_id")
	}
	return nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// badField is a 400 whose param names field (OpenAI's errors carry it),
// with the message written out in full.
func badField(field, format string, args ...any) error {
	return &requestError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...), param: field}
}

func required(field, v string) error {
	if v == "" {
		return badField(field, "%s is required", field)
	}
	return nil
}

func checkRunes(field, v string, max int) error {
	if n := utf8.RuneCountInString(v); n > max {
		return badField(field, "%s is %d characters long; at most %d are allowed", field, n, max)
	}
	return nil
}

func checkBytes(field, v string, max int) error {
	if len(v) > max {
		return badField(field, "%s is %d bytes long; at most %d are allowed", field, len(v), max)
	}
	return nil
}

func checkTitle(v string) error  { return checkRunes("title", v, maxTitleRunes) }
func checkSystem(v string) error { return checkBytes("system", v, maxSystemBytes) }

func checkName(field, v string) error { return checkBytes(field, v, maxNameBytes) }

// checkConversationAdapters validates a conversation's adapters as a
// request naming them would be validated, with names of bounded length.
func checkConversationAdapters(refs []ipc.AdapterRef) error {
	if err := checkAdapters(refs, "adapters"); err != nil {
		return err
	}
	for i, ref := range refs {
		if err := checkName(fmt.Sprintf("adapters[%d].name", i), ref.Name); err != nil {
			return err
		}
	}
	return nil
}

// checkStoredSampling validates stored sampling settings the way a completion
// request would be validated, so a conversation never holds settings its
// next request would be refused for.
func checkStoredSampling(s *ipc.SamplingFields) error {
	if s == nil {
		return nil
	}
	if _, err := openAIRequest(*s); err != nil {
		return badField("sampling", "sampling: %v", err)
	}
	return nil
}

// checkTime refuses a time the store could not write back: it keeps
// times in UTC as RFC 3339, whose years run from 0 to 9999, and an offset
// can carry a time written within them outside (9999-12-31T23:59:59-23:59).
func checkTime(field string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return badField(field, "%s is in the year %d in UTC; years from 0 to 9999 are allowed", field, y)
	}
	return nil
}

func checkMessages(msgs []ipc.ConversationMessage) error {
	if len(msgs) > maxMessages {
		return badField("messages", "messages has %d entries; at most %d are allowed per request", len(msgs), maxMessages)
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return badField(fmt.Sprintf("messages[%d].role", i), "messages[%d].role must be \"system\", \"user\" or \"assistant\", not %q", i, m.Role)
		}
		err := firstError(
			checkBytes(fmt.Sprintf("messages[%d].content", i), m.Content, maxContentBytes),
			checkBytes(fmt.Sprintf("messages[%d].reasoning_content", i), m.ReasoningContent, maxContentBytes),
			checkName(fmt.Sprintf("messages[%d].request_id", i), m.RequestID),
			checkName(fmt.Sprintf("messages[%d].id", i), m.ID),
			checkTime(fmt.Sprintf("messages[%d].time", i), m.Time),
		)
		if err != nil {
			return err
		}
	}
	return nil
}
