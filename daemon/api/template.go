package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/ipc"
)

// chatTemplater is a model that renders conversations with its chat
// template (*llm.Model).
type chatTemplater interface {
	ApplyChatTemplate(ctx context.Context, conv chat.Conversation) (string, error)
}

// chatTemplate serves POST /v1/chat/template: the conversation rendered
// with the model's chat template, exactly as the model would read it, so
// apps can see the prompt (llama-server's /apply-template).
func (a *API) chatTemplate(w http.ResponseWriter, r *http.Request) {
	var body ipc.ChatTemplateRequest
	if err := decode(r, &body); err != nil {
		openAIError(w, err)
		return
	}
	conv, err := templateConversation(body)
	if err != nil {
		openAIError(w, err)
		return
	}
	rm, err := a.resolveModel(body.Model) // a created model renders as its requests are
	if err != nil {
		openAIError(w, err)
		return
	}
	h, err := a.models.AcquireAs(r.Context(), rm.base, psName(rm.alias(body.Model)), nil)
	if err != nil {
		openAIError(w, err)
		return
	}
	defer h.Release()
	name, format := rm.shown(body.Model, h.Name), h.Model.Info().ChatFormat
	if rm.man != nil {
		t, err := manifestConversation(rm.man, &conv)
		if err != nil {
			openAIError(w, err)
			return
		}
		if t != nil {
			// chat_template_kwargs reach the TEMPLATE as a chat
			// request's do: enable_thinking as .Think, others refused.
			if _, err := t.applyThinking(&thinkingSpec{vars: body.ChatTemplateKwargs}); err != nil {
				openAIError(w, err)
				return
			}
			prompt, err := t.Prompt(r.Context(), conv)
			if err != nil {
				openAIError(w, badParam("model", "its template failed: %v", err))
				return
			}
			daemon.WriteJSON(w, http.StatusOK, ipc.ChatTemplateResponse{Model: name, Prompt: prompt, ChatFormat: "the created model's TEMPLATE"})
			return
		}
	}
	m, ok := h.Model.(chatTemplater)
	if !ok {
		openAIError(w, &requestError{status: http.StatusBadRequest, msg: fmt.Sprintf("model %s cannot render chat templates", h.Name)})
		return
	}
	prompt, err := m.ApplyChatTemplate(r.Context(), conv)
	if err != nil {
		if isTemplateError(err) {
			// The template (or the built-in format) refuses this conversation.
			err = &requestError{status: http.StatusBadRequest, msg: fmt.Sprintf("chat template of %s: %v", h.Name, err)}
		}
		openAIError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.ChatTemplateResponse{Model: name, Prompt: prompt, ChatFormat: format})
}

// manifestConversation puts a created model's system prompt and messages
// before conv's, as its chat requests do (withManifestMessages), and
// returns the model's own TEMPLATE when it has one.
func manifestConversation(man *ipc.ModelManifest, conv *chat.Conversation) (*goTemplate, error) {
	var plain []ipc.Message
	for _, m := range conv.Messages {
		plain = append(plain, ipc.Message{Role: m.Role})
	}
	all := withManifestMessages(man, plain)
	msgs, err := chatMessages(all[:len(all)-len(plain)], "model")
	if err != nil {
		return nil, err
	}
	conv.Messages = append(msgs, conv.Messages...)
	return manifestTemplate(man)
}

// templateConversation checks a request and turns it into the
// conversation to render; a bad field is a 400 naming it.
func templateConversation(body ipc.ChatTemplateRequest) (chat.Conversation, error) {
	conv := chat.Conversation{AddGenerationPrompt: body.AddGenerationPrompt == nil || *body.AddGenerationPrompt, Vars: body.ChatTemplateKwargs}
	if len(body.Messages) == 0 {
		return conv, badParam("messages", "must not be empty")
	}
	for k := range body.ChatTemplateKwargs {
		if slices.Contains(chat.ReservedVars(), k) {
			return conv, badParam("chat_template_kwargs."+k, "is set by the request itself")
		}
	}
	for i, t := range body.Tools {
		var tool struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &tool); err != nil {
			return conv, badParam(fmt.Sprintf("tools[%d]", i), "must be an object: %v", err)
		}
		if tool.Function == nil || tool.Function.Name == "" {
			return conv, badParam(fmt.Sprintf("tools[%d].function.name", i), "is required")
		}
		conv.Tools = append(conv.Tools, t)
	}
	for i, m := range body.Messages {
		if m.Role == "" {
			return conv, badParam(fmt.Sprintf("messages[%d].role", i), "is required")
		}
		// The roles chat requests take, mapped as they map them: the
		// preview is the prompt those requests render.
		role, err := checkRole(m.Role, i, "messages")
		if err != nil {
			return conv, err
		}
		content, err := messageText(m.Content)
		if err != nil {
			return conv, badParam(fmt.Sprintf("messages[%d].content", i), "%v", err)
		}
		msg := chat.Message{Role: role, Content: content, ToolCallID: m.ToolCallID, Name: m.Name, ReasoningContent: m.ReasoningContent}
		for j, c := range m.ToolCalls {
			if c.Function.Name == "" {
				return conv, badParam(fmt.Sprintf("messages[%d].tool_calls[%d].function.name", i, j), "is required")
			}
			if len(c.Function.Arguments) > 0 && !json.Valid(c.Function.Arguments) {
				return conv, badParam(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j), "is not JSON")
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: c.ID, Type: c.Type,
				Function: chat.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments}})
		}
		conv.Messages = append(conv.Messages, msg)
	}
	return conv, nil
}

// messageText is a message's content as text: a string, null (empty), or
// the text parts of an array of content parts joined with newlines, as a
// chat request reads them (ipc.Message).
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string, null or an array of content parts")
	}
	texts := make([]string, len(parts))
	for k, p := range parts {
		if (p.Type != "text" && p.Type != "input_text" && p.Type != "") || p.Text == nil {
			return "", fmt.Errorf("part %d: only text parts are supported, got type %q", k, p.Type)
		}
		texts[k] = *p.Text
	}
	return strings.Join(texts, "\n"), nil
}
