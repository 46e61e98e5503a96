package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/ipc"
)

// Anthropic's Messages API: POST /v1/messages and /v1/messages/count_tokens,
// so that Claude-style clients run on the shared local model.

// anthropicNames are the Messages API's sampling fields.
var anthropicNames = samplingNames{maxTemperature: 1}

// anthropicError writes err in Anthropic's error shape.
func anthropicError(w http.ResponseWriter, err error) {
	status := statusOf(err)
	daemon.WriteJSON(w, status, anthropicErrorBody(status, err.Error()))
}

func anthropicErrorBody(status int, msg string) ipc.AnthropicError {
	var e ipc.AnthropicError
	e.Type = "error"
	e.Error.Message = msg
	switch {
	case status == http.StatusUnauthorized:
		e.Error.Type = "authentication_error"
	case status == http.StatusForbidden:
		e.Error.Type = "permission_error"
	case status == http.StatusNotFound:
		e.Error.Type = "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		e.Error.Type = "request_too_large"
	case status == http.StatusTooManyRequests:
		e.Error.Type = "rate_limit_error"
	case status == http.StatusServiceUnavailable:
		e.Error.Type = "overloaded_error"
	case status >= 500:
		e.Error.Type = "api_error"
	default:
		e.Error.Type = "invalid_request_error"
	}
	return e
}

// anthropicChat converts a Messages request into the engine's request.
func anthropicChat(body ipc.AnthropicRequest, needMax bool) (llm.Request, error) {
	var req llm.Request
	if needMax {
		if body.MaxTokens == nil {
			return req, badParam("max_tokens", "is required")
		}
		if *body.MaxTokens < 1 {
			return req, badParam("max_tokens", "must be at least 1, not %d", *body.MaxTokens)
		}
		req.MaxTokens = *body.MaxTokens
	}
	p := sample.Params{Temperature: 1, TopP: 1}
	if body.Temperature != nil {
		p.Temperature = *body.Temperature
	}
	if body.TopP != nil {
		p.TopP = *body.TopP
	}
	if body.TopK != nil {
		p.TopK = *body.TopK
	}
	if err := checkSampling(p, anthropicNames); err != nil {
		return req, err
	}
	req.Sampling = p
	if err := checkStops(body.StopSequences, "stop_sequences"); err != nil {
		return req, err
	}
	req.Stop = body.StopSequences
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"tools", body.Tools}, {"tool_choice", body.ToolChoice}, {"thinking", body.Thinking}} {
		if s := strings.TrimSpace(string(f.raw)); s != "" && s != "null" && s != "[]" {
			if f.name == "thinking" && strings.Contains(s, `"disabled"`) {
				continue
			}
			return req, badParam(f.name, "is not supported yet by this daemon")
		}
	}
	if body.System.IsSet() {
		text, err := anthropicText(body.System.Blocks, "system")
		if err != nil {
			return req, err
		}
		if text != "" {
			req.Messages = append(req.Messages, chat.Message{Role: "system", Content: text})
		}
	}
	if len(body.Messages) == 0 {
		return req, badParam("messages", "must not be empty")
	}
	for i, m := range body.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		if m.Role != "user" && m.Role != "assistant" {
			return req, badParam(at+".role", "must be \"user\" or \"assistant\", not %q", m.Role)
		}
		text, err := anthropicText(m.Content.Blocks, at+".content")
		if err != nil {
			return req, err
		}
		req.Messages = append(req.Messages, chat.Message{Role: m.Role, Content: text})
	}
	return req, nil
}

// anthropicText joins text blocks; other blocks are refused by name.
func anthropicText(blocks []ipc.AnthropicBlock, param string) (string, error) {
	var parts []string
	for j, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image", "document":
			return "", badParam(fmt.Sprintf("%s[%d]", param, j), "this model takes text only, not %s blocks", b.Type)
		case "tool_use", "tool_result":
			return "", badParam(fmt.Sprintf("%s[%d]", param, j), "%s blocks need tool calling, which this daemon does not support yet", b.Type)
		default:
			return "", badParam(fmt.Sprintf("%s[%d].type", param, j), "unknown content block type %q", b.Type)
		}
	}
	return strings.Join(parts, "\n"), nil
}

// stopReason maps a result to Anthropic's stop_reason and stop_sequence.
func stopReason(res llm.Result) (*string, *string) {
	switch {
	case res.FinishReason == llm.FinishLength:
		return strPtr("max_tokens"), nil
	case res.StopSequence != "":
		return strPtr("stop_sequence"), strPtr(res.StopSequence)
	}
	return strPtr("end_turn"), nil
}

// promptCounter is a model that tokenizes a request's prompt (*llm.Model).
type promptCounter interface {
	PromptTokens(req llm.Request) ([]int32, error)
}

func (a *API) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	var body ipc.AnthropicRequest
	if err := decode(r, &body); err != nil {
		anthropicError(w, err)
		return
	}
	req, err := anthropicChat(body, true)
	if err != nil {
		anthropicError(w, err)
		return
	}
	if req.Overflow, err = a.overflowPolicy(body.ContextOverflow, "context_overflow", llm.OverflowDropOldest); err != nil {
		anthropicError(w, err)
		return
	}
	id := newID("msg_")
	w.Header().Set(RequestIDHeader, id)
	var name string
	var text strings.Builder
	var inputTokens int
	sse := &sseWriter{w: w, fl: w.(http.Flusher)}
	event := func(typ string, v any) error {
		sse.start()
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b); err != nil {
			return err
		}
		sse.fl.Flush()
		return nil
	}
	spec := runSpec{endpoint: "messages", conversation: true, model: body.Model, req: req, id: id,
		onStart: func(n string) {
			name = n
			if pc, ok := a.models.Models()[n].(promptCounter); ok {
				if toks, err := pc.PromptTokens(req); err == nil {
					inputTokens = len(toks)
				}
			}
			if !body.Stream {
				return
			}
			event("message_start", map[string]any{"type": "message_start", "message": ipc.AnthropicResponse{
				ID: id, Type: "message", Role: "assistant", Model: n, Content: []ipc.AnthropicBlock{},
				Usage: ipc.AnthropicUsage{InputTokens: inputTokens}}})
			event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("ping", map[string]any{"type": "ping"})
		},
		onToken: func(t llm.Token) error {
			if !body.Stream {
				text.WriteString(t.Text)
				return nil
			}
			if t.Text == "" {
				return nil
			}
			return event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": t.Text}})
		}}
	out, err := a.run(r.Context(), r, spec)
	if err != nil {
		if !sse.started {
			anthropicError(w, err)
		} else if tellClient(r, err) {
			event("error", anthropicErrorBody(statusOf(err), err.Error()))
		}
		return
	}
	reason, seq := stopReason(out.res)
	usage := ipc.AnthropicUsage{InputTokens: out.res.PromptTokens, OutputTokens: out.res.CompletionTokens,
		CacheReadInputTokens: out.res.CachedTokens, ContextOverflow: overflowUsage(out.res)}
	if !body.Stream {
		daemon.WriteJSON(w, http.StatusOK, ipc.AnthropicResponse{ID: id, Type: "message", Role: "assistant", Model: name,
			Content: []ipc.AnthropicBlock{{Type: "text", Text: text.String()}}, StopReason: reason, StopSequence: seq, Usage: usage})
		return
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": seq}, "usage": usage})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicCountTokens answers POST /v1/messages/count_tokens: the tokens
// the model would read for the request (template included).
func (a *API) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	var body ipc.AnthropicRequest
	if err := decode(r, &body); err != nil {
		anthropicError(w, err)
		return
	}
	req, err := anthropicChat(body, false)
	if err != nil {
		anthropicError(w, err)
		return
	}
	h, err := a.models.Acquire(r.Context(), body.Model, nil)
	if err != nil {
		anthropicError(w, err)
		return
	}
	defer h.Release()
	pc, ok := h.Model.(promptCounter)
	if !ok {
		anthropicError(w, badParam("model", "cannot count tokens for this model"))
		return
	}
	toks, err := pc.PromptTokens(req)
	if err != nil {
		anthropicError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.AnthropicTokenCount{InputTokens: len(toks)})
}
