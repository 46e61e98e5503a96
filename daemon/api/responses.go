package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/toolcall"
	"github.com/ruvllm/ruvllm/ipc"
)

// OpenAI's Responses API: POST /v1/responses, GET and DELETE
// /v1/responses/{id}, GET /v1/responses/{id}/input_items. Stored responses
// (store: true, the default) can be continued with previous_response_id:
// the new request's prompt is the stored conversation, the reply and the
// new input, so the shared prefix cache serves the history.

// storedResponse is what the daemon keeps of a response.
type storedResponse struct {
	Response ipc.Response `json:"response"`
	// Messages is the conversation the response answered (instructions
	// aside, as OpenAI does not carry them over), then its reply.
	Messages []ipc.Message `json:"messages"`
	// Input are this request's input items, for input_items.
	Input []ipc.ResponseItem `json:"input"`
}

// registerResponses mounts the Responses API.
func (a *API) registerResponses() {
	a.srv.Handle("POST /v1/responses", http.HandlerFunc(a.createResponse))
	a.srv.Handle("GET /v1/responses/{id}", http.HandlerFunc(a.getResponse))
	a.srv.Handle("DELETE /v1/responses/{id}", http.HandlerFunc(a.deleteResponse))
	a.srv.Handle("GET /v1/responses/{id}/input_items", http.HandlerFunc(a.responseInputItems))
}

// responseInput turns the input into chat messages (and the items as the
// client sent them, with ids).
func responseInput(in ipc.ResponseInput) ([]ipc.Message, []ipc.ResponseItem, error) {
	if in.Items == nil {
		if in.Text == "" {
			return nil, nil, badParam("input", "must not be empty")
		}
		item := ipc.ResponseItem{Type: "message", ID: newID("msg_"), Role: "user",
			Content: &ipc.ResponseContent{Parts: []ipc.ResponsePart{{Type: "input_text", Text: in.Text}}}}
		return []ipc.Message{{Role: "user", Content: in.Text}}, []ipc.ResponseItem{item}, nil
	}
	if len(in.Items) == 0 {
		return nil, nil, badParam("input", "must not be empty")
	}
	var (
		msgs      []ipc.Message
		reasoning string // from a reasoning item, for the assistant turn after it
	)
	items := make([]ipc.ResponseItem, 0, len(in.Items))
	for i, it := range in.Items {
		at := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
		case "function_call":
			if it.Name == "" || it.CallID == "" {
				return nil, nil, badParam(at, "a function_call item needs call_id and name")
			}
			args := it.Arguments
			if args == "" {
				args = "{}"
			}
			if !json.Valid([]byte(args)) {
				return nil, nil, badParam(at+".arguments", "is not JSON")
			}
			call := ipc.ToolCall{ID: it.CallID, Type: "function", Function: ipc.ToolCallFunction{Name: it.Name, Arguments: json.RawMessage(strconv.Quote(args))}}
			// Calls made together form one assistant turn.
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" && len(msgs[n-1].ToolCalls) > 0 && msgs[n-1].Content == "" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, call)
			} else {
				msgs = append(msgs, ipc.Message{Role: "assistant", ToolCalls: []ipc.ToolCall{call}, ReasoningContent: reasoning})
				reasoning = ""
			}
			if it.ID == "" {
				it.ID = newID("fc_")
			}
			items = append(items, it)
			continue
		case "reasoning":
			// A thinking model's reasoning sent back: it belongs to the
			// assistant turn that follows it.
			var texts []string
			if it.Content != nil {
				for _, p := range it.Content.Parts {
					texts = append(texts, p.Text)
				}
			}
			reasoning = strings.Join(texts, "\n")
			if it.ID == "" {
				it.ID = newID("rs_")
			}
			items = append(items, it)
			continue
		case "function_call_output":
			if it.CallID == "" {
				return nil, nil, badParam(at+".call_id", "is required")
			}
			msgs = append(msgs, ipc.Message{Role: "tool", ToolCallID: it.CallID, Content: it.Output})
			if it.ID == "" {
				it.ID = newID("fco_")
			}
			items = append(items, it)
			continue
		default:
			return nil, nil, badParam(at+".type", "%q items are not supported", it.Type)
		}
		switch it.Role {
		case "user", "assistant", "system", "developer":
		default:
			return nil, nil, badParam(at+".role", "is %q: use user, assistant, system or developer", it.Role)
		}
		var texts []string
		if it.Content == nil {
			it.Content = &ipc.ResponseContent{}
		}
		for j, p := range it.Content.Parts {
			switch p.Type {
			case "input_text", "output_text", "text":
				texts = append(texts, p.Text)
			case "refusal":
			default:
				return nil, nil, badParam(fmt.Sprintf("%s.content[%d]", at, j), "has a %q part: this model takes text only", p.Type)
			}
		}
		role := it.Role
		if role == "developer" {
			role = "system"
		}
		msg := ipc.Message{Role: role, Content: strings.Join(texts, "\n")}
		if role == "assistant" {
			msg.ReasoningContent, reasoning = reasoning, ""
		}
		msgs = append(msgs, msg)
		if it.ID == "" {
			it.ID = newID("msg_")
		}
		it.Type = "message"
		items = append(items, it)
	}
	return msgs, items, nil
}

// responsesThinking reads the Responses API's reasoning: {"effort":
// "none"} turns a thinking model's reasoning off; no effort (or null)
// leaves the model's default; other efforts and summaries cannot be
// honoured (a model's reasoning has no length to set, and nothing here
// summarises it).
func responsesThinking(raw json.RawMessage) (*thinkingSpec, error) {
	ts := &thinkingSpec{param: "reasoning.effort"}
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return ts, nil
	}
	var r struct {
		Effort  *string         `json:"effort"`
		Summary json.RawMessage `json:"summary"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, badParam("reasoning", "must be an object {\"effort\": ...}")
	}
	if s := strings.TrimSpace(string(r.Summary)); s != "" && s != "null" {
		return nil, badParam("reasoning.summary", "reasoning summaries are not supported: the reasoning comes whole, as reasoning_text")
	}
	switch {
	case r.Effort == nil:
	case *r.Effort == "none":
		ts.want = new(false)
	default:
		return nil, badParam("reasoning.effort", "only \"none\" (no reasoning) can be honoured, not %q: a thinking model reasons as long as it needs", *r.Effort)
	}
	return ts, nil
}

// responseTextFormat reads the Responses API's text.format: {"type":
// "text" | "json_object"} or {"type": "json_schema", "name", "schema",
// "strict"} (flat, unlike chat's response_format).
func responseTextFormat(raw json.RawMessage) (*constraintSpec, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" || s == "{}" {
		return nil, nil
	}
	var t struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, badParam("text", "must be an object with a format")
	}
	if t.Format == nil {
		return nil, nil
	}
	switch t.Format.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindJSONObject}, param: "text.format"}, nil
	case "json_schema":
		if len(t.Format.Schema) == 0 {
			return nil, badParam("text.format.schema", "is required")
		}
		return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindJSONSchema, Source: string(t.Format.Schema)}, param: "text.format.schema"}, nil
	}
	return nil, badParam("text.format.type", "must be \"text\", \"json_object\" or \"json_schema\", not %q", t.Format.Type)
}

// checkResponseRequest refuses the fields that would change the output
// but are not supported, naming them.
func checkResponseRequest(body ipc.ResponseRequest) error {
	if body.Background {
		return badParam("background", "background responses are not supported")
	}
	if body.TopLogprobs != nil && *body.TopLogprobs != 0 {
		return badParam("top_logprobs", "is not supported on /v1/responses; use /v1/chat/completions")
	}
	switch body.Truncation {
	case "", "disabled", "auto":
	default:
		return badParam("truncation", "must be \"auto\" or \"disabled\", not %q", body.Truncation)
	}
	if body.MaxOutputTokens != nil && *body.MaxOutputTokens < 1 {
		return badParam("max_output_tokens", "must be at least 1, not %d", *body.MaxOutputTokens)
	}
	return nil
}

func (a *API) createResponse(w http.ResponseWriter, r *http.Request) {
	var body ipc.ResponseRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	if err := checkResponseRequest(body); err != nil {
		openAIError(w, err)
		return
	}
	input, items, err := responseInput(body.Input)
	if err != nil {
		openAIError(w, err)
		return
	}
	var history []ipc.Message
	if body.PreviousResponseID != "" {
		var prev storedResponse
		if err := a.srv.Store().Response(r.Context(), body.PreviousResponseID, &prev); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				err = &requestError{status: http.StatusNotFound, param: "previous_response_id",
					msg: fmt.Sprintf("previous_response_id: no stored response %q (it was not stored, was deleted, or is older than the last %d)", body.PreviousResponseID, store.DefaultMaxResponses)}
			}
			openAIError(w, err)
			return
		}
		history = prev.Messages
		if body.Model == "" {
			body.Model = prev.Response.Model
		}
	}
	// A created model runs its base with its settings, as on the other
	// chat endpoints (the response keeps the name the client asked for).
	rm, err := a.resolveModel(body.Model)
	if err != nil {
		openAIError(w, err)
		return
	}
	sampling := ipc.SamplingFields{Temperature: body.Temperature, TopP: body.TopP, Adapters: body.Adapters}
	withManifestSampling(rm.man, &sampling)
	body.Adapters = sampling.Adapters
	req, err := openAIRequest(sampling)
	if err != nil {
		openAIError(w, err)
		return
	}
	if body.MaxOutputTokens != nil {
		req.MaxTokens = *body.MaxOutputTokens
	}
	field := body.ContextOverflow
	switch {
	case field != "":
	case body.Truncation == "auto":
		field = string(llm.OverflowDropOldest)
	case body.Truncation == "disabled":
		field = string(llm.OverflowError)
	}
	if req.Overflow, err = a.overflowPolicy(field, "context_overflow", llm.OverflowDropOldest); err != nil {
		openAIError(w, err)
		return
	}
	conv := append(append([]ipc.Message{}, history...), input...)
	msgs := conv
	if body.Instructions != "" {
		msgs = append([]ipc.Message{{Role: "system", Content: body.Instructions}}, conv...)
	}
	msgs = withManifestMessages(rm.man, msgs)
	if req.Messages, err = chatMessages(msgs, "input"); err != nil {
		openAIError(w, err)
		return
	}
	if err := setManifestTemplate(rm.man, &req); err != nil {
		openAIError(w, err)
		return
	}
	constraint, err := responseTextFormat(body.Text)
	if err != nil {
		openAIError(w, err)
		return
	}
	var tools *toolSpec
	var rawTools []json.RawMessage
	choice, err := openAIToolChoice(body.ToolChoice)
	if err != nil {
		openAIError(w, err)
		return
	}
	if s := strings.TrimSpace(string(body.Tools)); s == "" || s == "null" || s == "[]" {
		if choice.Mode == toolcall.Required {
			openAIError(w, badParam("tool_choice", "asks for a tool call, but no tools are given"))
			return
		}
	} else {
		if err := json.Unmarshal(body.Tools, &rawTools); err != nil {
			openAIError(w, badParam("tools", "must be an array of tools"))
			return
		}
		tools = &toolSpec{raw: rawTools, choice: choice, parallel: body.ParallelToolCalls == nil || *body.ParallelToolCalls, param: "tools"}
	}
	id := newID("resp_")
	itemID := newID("msg_")
	w.Header().Set(RequestIDHeader, id)
	created := time.Now().Unix()
	storeIt := body.Store == nil || *body.Store
	resp := ipc.Response{ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Model: body.Model,
		Output: []ipc.ResponseItem{}, Text: json.RawMessage(`{"format":{"type":"text"}}`), Tools: []any{}, ToolChoice: "auto",
		ParallelToolCalls: body.ParallelToolCalls == nil || *body.ParallelToolCalls, Store: storeIt, Metadata: body.Metadata,
		MaxOutputTokens: body.MaxOutputTokens, Temperature: req.Sampling.Temperature, TopP: shownP(req.Sampling.TopP), Truncation: "disabled"}
	if req.Overflow.DropOldest {
		resp.Truncation = "auto"
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]any{}
	}
	if body.Instructions != "" {
		resp.Instructions = &body.Instructions
	}
	if body.PreviousResponseID != "" {
		resp.PreviousResponseID = &body.PreviousResponseID
	}
	if body.User != "" {
		resp.User = &body.User
	}
	seq := 0
	sse := &sseWriter{w: w, fl: w.(http.Flusher)}
	event := func(typ string, fields map[string]any) error {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		sse.start()
		b, err := json.Marshal(fields)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b); err != nil {
			return err
		}
		sse.fl.Flush()
		return nil
	}
	part := func(text string) ipc.ResponsePart {
		return ipc.ResponsePart{Type: "output_text", Text: text, Annotations: []any{}}
	}
	item := func(status, text string, withPart bool) ipc.ResponseItem {
		it := ipc.ResponseItem{Type: "message", ID: itemID, Status: status, Role: "assistant", Content: &ipc.ResponseContent{Parts: []ipc.ResponsePart{}}}
		if withPart {
			it.Content.Parts = []ipc.ResponsePart{part(text)}
		}
		return it
	}
	if tools != nil {
		resp.Tools = make([]any, len(rawTools))
		for i, t := range rawTools {
			resp.Tools[i] = t
		}
		if len(body.ToolChoice) > 0 {
			resp.ToolChoice = body.ToolChoice
		}
	}
	if constraint != nil {
		resp.Text = body.Text
	}
	thinking, err := responsesThinking(body.Reasoning)
	if err != nil {
		openAIError(w, err)
		return
	}
	var (
		text        strings.Builder
		oc          = &outputControls{constraint: constraint, tools: tools, thinking: thinking}
		rstream     replyStream
		msgStarted  bool // the message item was announced (streaming)
		rsStarted   bool // the reasoning item was announced and is open (streaming)
		rsText      strings.Builder
		rsID        = newID("rs_")
		outputIndex int
	)
	reasoningItem := func(status, text string) ipc.ResponseItem {
		it := ipc.ResponseItem{Type: "reasoning", ID: rsID, Status: status, Content: &ipc.ResponseContent{Parts: []ipc.ResponsePart{}}}
		if status != "in_progress" {
			it.Content.Parts = []ipc.ResponsePart{{Type: "reasoning_text", Text: text}}
		}
		return it
	}
	// Streamed, the reasoning is an item of its own before the message.
	streamReasoning := func(piece string) {
		if piece == "" {
			return
		}
		if !rsStarted {
			rsStarted = true
			event("response.output_item.added", map[string]any{"output_index": outputIndex, "item": reasoningItem("in_progress", "")})
		}
		rsText.WriteString(piece)
		event("response.reasoning_text.delta", map[string]any{"item_id": rsID, "output_index": outputIndex, "content_index": 0, "delta": piece})
	}
	endReasoning := func() {
		if !rsStarted {
			return
		}
		rsStarted = false
		event("response.reasoning_text.done", map[string]any{"item_id": rsID, "output_index": outputIndex, "content_index": 0, "text": rsText.String()})
		event("response.output_item.done", map[string]any{"output_index": outputIndex, "item": reasoningItem("completed", rsText.String())})
		outputIndex++
	}
	startMessage := func() {
		if msgStarted {
			return
		}
		endReasoning()
		msgStarted = true
		event("response.output_item.added", map[string]any{"output_index": outputIndex, "item": item("in_progress", "", false)})
		event("response.content_part.added", map[string]any{"item_id": itemID, "output_index": outputIndex, "content_index": 0, "part": part("")})
	}
	spec := runSpec{endpoint: "responses", conversation: true, model: rm.base, alias: rm.alias(body.Model), req: req, adapters: body.Adapters, id: id, hdr: w.Header(),
		prepare: oc.prepare,
		onStart: func(n string) {
			resp.Model, rstream = n, oc.newStream()
			if !body.Stream {
				return
			}
			event("response.created", map[string]any{"response": resp})
			event("response.in_progress", map[string]any{"response": resp})
		},
		onToken: func(t llm.Token) error {
			text.WriteString(t.Text)
			reasoning, piece := rstream.token(t)
			if !body.Stream {
				return nil
			}
			streamReasoning(reasoning)
			if piece == "" {
				return nil
			}
			startMessage()
			return event("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": outputIndex, "content_index": 0,
				"delta": piece, "logprobs": []any{}})
		}}
	out, err := a.run(r.Context(), r, spec)
	if err == nil && body.Stream {
		reasoning, rest := rstream.close()
		streamReasoning(reasoning)
		if rest != "" {
			startMessage()
			event("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": outputIndex, "content_index": 0,
				"delta": rest, "logprobs": []any{}})
		}
		endReasoning()
	}
	var reply, reasoning string
	var calls []toolcall.Call
	if err == nil {
		reasoning, reply = oc.think.splitReasoning(text.String())
		reply, calls, err = oc.split(reply, "call_", out.res)
	}
	if err != nil {
		if !sse.started {
			openAIError(w, err)
		} else if tellClient(r, err) {
			resp.Status = "failed"
			_, eb := openAIErrorBody(err)
			resp.Error = &ipc.ResponseError{Code: "server_error", Message: eb.Error.Message}
			event("response.failed", map[string]any{"response": resp})
		}
		return
	}
	resp.Status = "completed"
	final := "completed"
	if out.res.FinishReason == llm.FinishLength {
		resp.Status, final = "incomplete", "incomplete"
		resp.IncompleteDetails = &ipc.IncompleteReason{Reason: "max_output_tokens"}
	}
	// The output: the message (when it has text, nothing was called, or
	// text was already streamed: whitespace before a call, which the reply
	// drops), then a function_call item per call.
	withMessage := reply != "" || len(calls) == 0 || msgStarted
	resp.Output = nil
	if reasoning != "" {
		resp.Output = append(resp.Output, reasoningItem("completed", reasoning))
	}
	msgIndex := len(resp.Output)
	if withMessage {
		resp.Output = append(resp.Output, item(final, reply, true))
	}
	stored := append([]ipc.Message{}, conv...)
	if reply != "" || len(calls) == 0 {
		stored = append(stored, ipc.Message{Role: "assistant", Content: reply, ReasoningContent: reasoning})
		reasoning = ""
	}
	var storedCalls []ipc.ToolCall
	for _, c := range calls {
		resp.Output = append(resp.Output, ipc.ResponseItem{Type: "function_call", ID: newID("fc_"), CallID: c.ID, Name: c.Name,
			Arguments: string(c.Arguments), Status: "completed"})
		storedCalls = append(storedCalls, openAIToolCalls([]toolcall.Call{c})...)
	}
	if len(storedCalls) > 0 {
		stored = append(stored, ipc.Message{Role: "assistant", ToolCalls: storedCalls, ReasoningContent: reasoning})
	}
	resp.Usage = &ipc.ResponseUsage{InputTokens: out.res.PromptTokens, OutputTokens: out.res.CompletionTokens,
		TotalTokens: out.res.PromptTokens + out.res.CompletionTokens, InputTokensDetails: ipc.InputTokensDetails{CachedTokens: out.res.CachedTokens},
		OutputTokensDetails: ipc.OutputTokensDetails{ReasoningTokens: rstream.reasoning}, ContextOverflow: overflowUsage(out.res)}
	if storeIt {
		st := storedResponse{Response: resp, Messages: stored, Input: items}
		// The reply is complete: a client that hung up since (its last
		// events unread) chains from it by the id it already has, so it
		// is stored whether the request is still open or not.
		if err := a.srv.Store().PutResponse(context.WithoutCancel(r.Context()), id, st); err != nil {
			a.log.Warn("response not stored", "id", id, "err", err)
		}
	}
	if !body.Stream {
		daemon.WriteJSON(w, http.StatusOK, resp)
		return
	}
	if withMessage {
		startMessage()
		event("response.output_text.done", map[string]any{"item_id": itemID, "output_index": outputIndex, "content_index": 0, "text": reply, "logprobs": []any{}})
		event("response.content_part.done", map[string]any{"item_id": itemID, "output_index": outputIndex, "content_index": 0, "part": part(reply)})
		event("response.output_item.done", map[string]any{"output_index": outputIndex, "item": resp.Output[msgIndex]})
		outputIndex++
	}
	for _, it := range resp.Output[outputIndex:] {
		added := it
		added.Arguments, added.Status = "", "in_progress"
		event("response.output_item.added", map[string]any{"output_index": outputIndex, "item": added})
		event("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": outputIndex, "delta": it.Arguments})
		event("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": outputIndex, "arguments": it.Arguments})
		event("response.output_item.done", map[string]any{"output_index": outputIndex, "item": it})
		outputIndex++
	}
	event("response."+final, map[string]any{"response": resp})
}

func (a *API) getResponse(w http.ResponseWriter, r *http.Request) {
	var st storedResponse
	if err := a.srv.Store().Response(r.Context(), r.PathValue("id"), &st); err != nil {
		openAIError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, st.Response)
}

func (a *API) deleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := a.srv.Store().DeleteResponse(r.Context(), id); err != nil {
		openAIError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.ResponseDeleted{ID: id, Object: "response.deleted", Deleted: true})
}

func (a *API) responseInputItems(w http.ResponseWriter, r *http.Request) {
	var st storedResponse
	if err := a.srv.Store().Response(r.Context(), r.PathValue("id"), &st); err != nil {
		openAIError(w, err)
		return
	}
	// Newest first, as OpenAI lists them by default.
	items := make([]ipc.ResponseItem, len(st.Input))
	for i, it := range st.Input {
		items[len(items)-1-i] = it
	}
	out := ipc.ResponseItemList{Object: "list", Data: items}
	if len(items) > 0 {
		out.FirstID, out.LastID = items[0].ID, items[len(items)-1].ID
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}
