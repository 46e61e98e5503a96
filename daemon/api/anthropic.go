package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/toolcall"
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
	keepOneAtZero(&p.TopP, body.TopP)
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
	if err := checkMessageCount(len(body.Messages), "messages"); err != nil {
		return req, err
	}
	for i, m := range body.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		if m.Role != "user" && m.Role != "assistant" {
			return req, badParam(at+".role", "must be \"user\" or \"assistant\", not %q", m.Role)
		}
		msgs, err := anthropicTurn(m, at)
		if err != nil {
			return req, err
		}
		req.Messages = append(req.Messages, msgs...)
	}
	// A last assistant message is the start of the reply (prefill).
	req.ContinueLast = true
	return req, nil
}

// anthropicTurn converts one message: its text, an assistant's tool_use
// blocks (its calls) and a user's tool_result blocks (tool turns, which
// come first, as they answer the calls before).
func anthropicTurn(m ipc.AnthropicMessage, at string) ([]chat.Message, error) {
	var texts []string
	var calls []chat.ToolCall
	var results []chat.Message
	var reasoning []string
	for j, b := range m.Content.Blocks {
		bat := fmt.Sprintf("%s.content[%d]", at, j)
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "thinking":
			if m.Role != "assistant" {
				return nil, badParam(bat, "a thinking block belongs to an assistant message")
			}
			reasoning = append(reasoning, b.Thinking)
		case "redacted_thinking":
			// Another model's encrypted reasoning: nothing here can read it.
		case "tool_use":
			if m.Role != "assistant" || b.ID == "" || b.Name == "" {
				return nil, badParam(bat, "a tool_use block belongs to an assistant message and needs an id and a name")
			}
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage(`{}`)
			}
			calls = append(calls, chat.ToolCall{ID: b.ID, Type: "function", Function: chat.FunctionCall{Name: b.Name, Arguments: input}})
		case "tool_result":
			if m.Role != "user" || b.ToolUseID == "" {
				return nil, badParam(bat, "a tool_result block belongs to a user message and needs tool_use_id")
			}
			content := ""
			var s string
			var blocks []ipc.AnthropicBlock
			switch {
			case len(b.Content) == 0:
			case json.Unmarshal(b.Content, &s) == nil:
				content = s
			case json.Unmarshal(b.Content, &blocks) == nil:
				var err error
				if content, err = anthropicText(blocks, bat+".content"); err != nil {
					return nil, err
				}
			default:
				return nil, badParam(bat+".content", "must be a string or text blocks")
			}
			if len(b.IsError) > 0 && string(b.IsError) != "null" {
				var failed bool
				if err := json.Unmarshal(b.IsError, &failed); err != nil {
					return nil, badParam(bat+".is_error", "must be true or false")
				}
				if failed {
					// Templates have no place for it: the model reads it.
					content = "Error: " + content
				}
			}
			results = append(results, chat.Message{Role: "tool", ToolCallID: b.ToolUseID, Content: content})
		case "image", "document":
			return nil, badParam(bat, "this model takes text only, not %s blocks", b.Type)
		default:
			return nil, badParam(bat+".type", "unknown content block type %q", b.Type)
		}
	}
	out := results
	if text := strings.Join(texts, "\n"); text != "" || len(calls) > 0 || len(results) == 0 {
		out = append(out, chat.Message{Role: m.Role, Content: text, ToolCalls: calls, ReasoningContent: strings.Join(reasoning, "\n")})
	}
	return out, nil
}

// anthropicThinking reads Anthropic's thinking: {"type": "enabled",
// "budget_tokens": n} turns a thinking model's reasoning on, "disabled"
// (or none, Anthropic's default) off where the model's template can. The
// budget is checked as Anthropic checks it (at least 1, under max_tokens)
// and bounds the reasoning's tokens: once they are spent, the block's
// closing tag is written for the model, which goes on with its answer.
func anthropicThinking(raw json.RawMessage, maxTokens *int) (*thinkingSpec, error) {
	ts := &thinkingSpec{param: "thinking", want: new(false)}
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return ts, nil
	}
	var t struct {
		Type   string `json:"type"`
		Budget *int   `json:"budget_tokens"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, badParam("thinking", "must be {\"type\": \"enabled\", \"budget_tokens\": n} or {\"type\": \"disabled\"}")
	}
	switch t.Type {
	case "disabled":
		return ts, nil
	case "enabled", "adaptive":
		if t.Type == "enabled" {
			switch {
			case t.Budget == nil:
				return nil, badParam("thinking.budget_tokens", "is required")
			case *t.Budget < 1 || maxTokens != nil && *t.Budget >= *maxTokens:
				return nil, badParam("thinking.budget_tokens", "must be at least 1 and less than max_tokens, not %d", *t.Budget)
			}
		}
		ts.want = new(true)
		if t.Type == "enabled" {
			ts.budget = *t.Budget
		}
		return ts, nil
	}
	return nil, badParam("thinking.type", "must be \"enabled\", \"adaptive\" or \"disabled\", not %q", t.Type)
}

// anthropicTools converts Anthropic's tools ({name, description,
// input_schema}) and tool_choice ({type: auto | any | tool | none, name}).
// A tool_choice is read, and refused when it asks for a call, even without
// tools: "any" or a named tool cannot be honoured then.
func anthropicTools(body ipc.AnthropicRequest) (*toolSpec, error) {
	choice, parallel, err := anthropicToolChoice(body.ToolChoice)
	if err != nil {
		return nil, err
	}
	s := strings.TrimSpace(string(body.Tools))
	if s == "" || s == "null" || s == "[]" {
		if choice.Mode == toolcall.Required {
			return nil, badParam("tool_choice", "asks for a tool call, but no tools are given")
		}
		return nil, nil
	}
	var defs []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Type        string          `json:"type"`
	}
	if err := json.Unmarshal(body.Tools, &defs); err != nil {
		return nil, badParam("tools", "must be an array of tools")
	}
	ts := &toolSpec{choice: choice, parallel: parallel, param: "tools", anthropic: true}
	for i, d := range defs {
		if d.Type != "" && d.Type != "custom" {
			return nil, badParam(fmt.Sprintf("tools[%d].type", i), "%q tools are not supported (only your own tools)", d.Type)
		}
		raw, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]any{
			"name": d.Name, "description": d.Description, "parameters": d.InputSchema}})
		ts.raw = append(ts.raw, raw)
	}
	return ts, nil
}

// anthropicToolChoice reads Anthropic's tool_choice ({type: auto | any |
// tool | none, name, disable_parallel_tool_use}; absent: auto) and whether
// parallel calls are allowed.
func anthropicToolChoice(raw json.RawMessage) (toolcall.Choice, bool, error) {
	auto := toolcall.Choice{Mode: toolcall.Auto}
	if c := strings.TrimSpace(string(raw)); c == "" || c == "null" {
		return auto, true, nil
	}
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := json.Unmarshal(raw, &tc); err != nil {
		return auto, true, badParam("tool_choice", "must be an object with a type")
	}
	choice := auto
	switch tc.Type {
	case "auto":
	case "any":
		choice.Mode = toolcall.Required
	case "tool":
		if tc.Name == "" {
			return auto, true, badParam("tool_choice.name", "is required")
		}
		choice = toolcall.Choice{Mode: toolcall.Required, Name: tc.Name}
	case "none":
		choice.Mode = toolcall.None
	default:
		return auto, true, badParam("tool_choice.type", "must be auto, any, tool or none, not %q", tc.Type)
	}
	return choice, !tc.DisableParallelToolUse, nil
}

// anthropicOutputFormat reads Anthropic's structured output:
// output_config.format (or the beta's output_format), {"type":
// "json_schema", "schema": {...}}. An effort level is refused: it changes
// what a reasoning model writes, and this daemon runs none.
func anthropicOutputFormat(body ipc.AnthropicRequest) (*constraintSpec, error) {
	present := func(raw json.RawMessage) bool {
		s := strings.TrimSpace(string(raw))
		return s != "" && s != "null"
	}
	format, param := body.OutputFormat, "output_format"
	if present(body.OutputConfig) {
		var oc struct {
			Format json.RawMessage `json:"format"`
			Effort json.RawMessage `json:"effort"`
		}
		if err := json.Unmarshal(body.OutputConfig, &oc); err != nil {
			return nil, badParam("output_config", "must be an object")
		}
		if present(oc.Effort) {
			return nil, badParam("output_config.effort", "this model does not reason: leave effort out")
		}
		if present(oc.Format) {
			if present(format) {
				return nil, badParam("output_format", "cannot be combined with output_config.format")
			}
			format, param = oc.Format, "output_config.format"
		}
	}
	if !present(format) {
		return nil, nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(format, &f); err != nil {
		return nil, badParam(param, "must be an object with a type")
	}
	if f.Type != "json_schema" {
		return nil, badParam(param+".type", "must be \"json_schema\", not %q", f.Type)
	}
	if !present(f.Schema) {
		return nil, badParam(param+".schema", "is required")
	}
	return &constraintSpec{spec: grammar.Spec{Kind: grammar.KindJSONSchema, Source: string(f.Schema)}, param: param + ".schema"}, nil
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
			return "", badParam(fmt.Sprintf("%s[%d]", param, j), "%s blocks belong in messages, not here", b.Type)
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

// anthropicRequest decodes and converts a Messages request (max_tokens
// required when needMax). body.Model stays the name the client sent; rm
// is the model that runs (rm.base) and a created model's settings.
func (a *API) anthropicRequest(r *http.Request, needMax bool) (body ipc.AnthropicRequest, req llm.Request, tools *toolSpec, thinking *thinkingSpec, rm resolvedModel, err error) {
	if err := decode(r, &body); err != nil {
		return body, llm.Request{}, nil, nil, rm, err
	}
	// A created model runs its base with its settings, as on the other
	// chat endpoints.
	rm, err = a.resolveModel(body.Model)
	if err != nil {
		return body, llm.Request{}, nil, nil, rm, err
	}
	if err := checkAdapters(body.Adapters, "adapters"); err != nil {
		return body, llm.Request{}, nil, nil, rm, err
	}
	req, err = anthropicChat(body, needMax)
	if err != nil {
		return body, req, nil, nil, rm, err
	}
	if err := withManifestRequest(rm.man, &req, body.Temperature != nil, body.TopP != nil, body.TopK != nil); err != nil {
		return body, req, nil, nil, rm, err
	}
	if req.Overflow, err = a.overflowPolicy(body.ContextOverflow, "context_overflow", llm.OverflowDropOldest); err != nil {
		return body, req, nil, nil, rm, err
	}
	thinking, err = anthropicThinking(body.Thinking, body.MaxTokens)
	if err != nil {
		return body, req, nil, nil, rm, err
	}
	tools, err = anthropicTools(body)
	return body, req, tools, thinking, rm, err
}

func (a *API) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	body, req, tools, thinking, rm, err := a.anthropicRequest(r, true)
	if err != nil {
		anthropicError(w, err)
		return
	}
	constraint, err := anthropicOutputFormat(body)
	if err != nil {
		anthropicError(w, err)
		return
	}
	id := newID("msg_")
	w.Header().Set(RequestIDHeader, id)
	var (
		name        string
		text        strings.Builder
		inputTokens int
		oc          = &outputControls{constraint: constraint, tools: tools, thinking: thinking}
		rs          replyStream
		textOpen    bool // the text block was started (streaming)
		thinkOpen   bool // a thinking block is open (streaming)
		blocks      int  // content blocks started so far (streaming)
		textIndex   int  // the text block's index
		sse         = &sseWriter{w: w, fl: w.(http.Flusher)}
	)
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
	// Streamed, the reply's blocks come in order: its thinking, its text,
	// its tool calls; a block stops before the next starts.
	closeThinking := func() {
		if thinkOpen {
			thinkOpen = false
			event("content_block_stop", map[string]any{"type": "content_block_stop", "index": blocks - 1})
		}
	}
	openText := func() {
		if !textOpen {
			closeThinking()
			textOpen, textIndex = true, blocks
			blocks++
			event("content_block_start", map[string]any{"type": "content_block_start", "index": textIndex,
				"content_block": map[string]any{"type": "text", "text": ""}})
		}
	}
	think := func(piece string) {
		if piece == "" {
			return
		}
		if !thinkOpen {
			thinkOpen = true
			blocks++
			event("content_block_start", map[string]any{"type": "content_block_start", "index": blocks - 1,
				"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		}
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": blocks - 1,
			"delta": map[string]any{"type": "thinking_delta", "thinking": piece}})
	}
	writeText := func(piece string) error {
		if piece == "" {
			return nil
		}
		openText()
		return event("content_block_delta", map[string]any{"type": "content_block_delta", "index": textIndex,
			"delta": map[string]any{"type": "text_delta", "text": piece}})
	}
	// A created model runs its base; the response names the model the
	// client asked for, as the OpenAI and Ollama endpoints do.
	spec := runSpec{endpoint: "messages", conversation: true, model: rm.base, alias: rm.alias(body.Model), req: req, adapters: mergeAdapters(manifestAdapters(rm.man), body.Adapters), id: id, hdr: w.Header(),
		prepare: func(m models.Model, req *llm.Request) error {
			if err := oc.prepare(m, req); err != nil {
				return err
			}
			if pc, ok := m.(promptCounter); ok {
				if toks, err := pc.PromptTokens(*req); err == nil {
					inputTokens = len(toks)
				}
			}
			return nil
		},
		onStart: func(n string) {
			name, rs = n, oc.newStream()
			if !body.Stream {
				return
			}
			event("message_start", map[string]any{"type": "message_start", "message": ipc.AnthropicResponse{
				ID: id, Type: "message", Role: "assistant", Model: n, Content: []ipc.AnthropicBlock{},
				Usage: ipc.AnthropicUsage{InputTokens: inputTokens}}})
			if rs.plain() { // no tools, no reasoning: the reply is one text block
				openText()
			}
			event("ping", map[string]any{"type": "ping"})
		},
		onToken: func(t llm.Token) error {
			text.WriteString(t.Text)
			if !body.Stream {
				return nil
			}
			reasoning, piece := rs.push(t.Text)
			think(reasoning)
			return writeText(piece)
		}}
	out, err := a.run(r.Context(), r, spec)
	var reply, reasoning string
	var calls []toolcall.Call
	if err == nil {
		if body.Stream {
			r, rest := rs.close()
			think(r)
			writeText(rest)
		}
		reasoning, reply = oc.think.splitReasoning(text.String())
		reply, calls, err = oc.split(reply, "toolu_", out.res)
	}
	if err != nil {
		if !sse.started {
			anthropicError(w, err)
		} else if tellClient(r, err) {
			event("error", anthropicErrorBody(statusOf(err), err.Error()))
		}
		return
	}
	reason, seq := stopReason(out.res)
	if len(calls) > 0 && out.res.FinishReason != llm.FinishLength {
		reason, seq = strPtr("tool_use"), nil
	}
	// Anthropic's input_tokens are those not read from the cache: a
	// client's total is input_tokens + cache_read_input_tokens (+
	// cache_creation_input_tokens), so counting the cached ones in both
	// doubled the prompt of every request that hit the prefix cache.
	usage := ipc.AnthropicUsage{InputTokens: out.res.PromptTokens - out.res.CachedTokens, OutputTokens: out.res.CompletionTokens,
		CacheReadInputTokens: out.res.CachedTokens, ContextOverflow: overflowUsage(out.res)}
	var content []ipc.AnthropicBlock
	if reasoning != "" {
		content = append(content, ipc.AnthropicBlock{Type: "thinking", Thinking: reasoning, Signature: new("")})
	}
	if reply != "" || len(calls) == 0 {
		content = append(content, ipc.AnthropicBlock{Type: "text", Text: reply})
	}
	for _, c := range calls {
		content = append(content, ipc.AnthropicBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: c.Arguments})
	}
	if !body.Stream {
		daemon.WriteJSON(w, http.StatusOK, ipc.AnthropicResponse{ID: id, Type: "message", Role: "assistant", Model: name,
			Content: content, StopReason: reason, StopSequence: seq, Usage: usage})
		return
	}
	// The text block, when it has text, nothing was called, or text was
	// already streamed (whitespace before a call, which the reply drops).
	closeThinking()
	if reply != "" || len(calls) == 0 || textOpen {
		openText()
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": textIndex})
	}
	index := blocks
	for _, c := range calls {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(c.Arguments)}})
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": seq}, "usage": usage})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicCountTokens answers POST /v1/messages/count_tokens: the tokens
// the model would read for the request (template included).
func (a *API) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	body, req, tools, thinking, rm, err := a.anthropicRequest(r, false)
	if err != nil {
		anthropicError(w, err)
		return
	}
	constraint, err := anthropicOutputFormat(body)
	if err != nil {
		anthropicError(w, err)
		return
	}
	h, err := a.models.AcquireAs(r.Context(), rm.base, psName(rm.alias(body.Model)), nil)
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
	if _, err := applyThinking(h.Model, &req, thinking); err != nil {
		anthropicError(w, err)
		return
	}
	if _, err := applyTools(h.Model, &req, tools, nil, constraint); err != nil {
		anthropicError(w, err)
		return
	}
	toks, err := pc.PromptTokens(req)
	if err != nil {
		anthropicError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.AnthropicTokenCount{InputTokens: len(toks)})
}
