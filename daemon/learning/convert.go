package learning

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/sona"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/ipc"
)

// Bounds on what one feedback trains on: the end of a long prompt (its
// first token, BOS, kept) and the start of a long answer. An instant step
// costs in proportion to the tokens.
const (
	maxPromptTokens = 512
	maxAnswerTokens = 256
)

// convert turns a stored feedback into the learner's terms: the prompt as
// the model read it (the chat template applied to the stored messages, or
// the raw prompt of a text completion), the answer and the correction as
// token ids, and the text to embed for routing (the last user message or
// the prompt). A chat answer the user wants (a correction, a thumbs-up)
// ends with the model's end-of-turn token, so the model learns to stop
// there; a rejected one does not (only its own tokens are made unlikely).
func (ms *modelState) convert(fb ipc.Feedback) (sona.Feedback, string, error) {
	out := sona.Feedback{Signal: signalOf(fb), At: fb.Time, Key: fb.RequestID}
	for _, a := range fb.Adapters {
		if !strings.HasPrefix(a.Name, "@") {
			out.Adapter = a.Name
			break
		}
	}
	tok := ms.m.Tokenizer()
	var (
		prompt []int32
		err    error
		text   string
		isChat = len(fb.Prompt) > 0
	)
	switch {
	case isChat:
		msgs := make([]chat.Message, 0, len(fb.Prompt))
		for _, m := range fb.Prompt {
			msgs = append(msgs, chat.Message{Role: m.Role, Content: m.Content})
			if m.Role == "user" {
				text = m.Content
			}
		}
		prompt, err = ms.m.PromptTokens(llm.Request{Messages: msgs})
	case fb.PromptText != "":
		text = fb.PromptText
		prompt, err = ms.m.PromptTokens(llm.Request{Prompt: fb.PromptText})
	default:
		return out, "", errors.New("the rated exchange has no prompt on record")
	}
	if err != nil {
		return out, "", fmt.Errorf("the rated prompt: %w", err)
	}
	if text == "" {
		text = fb.PromptText
	}
	if len(prompt) == 0 {
		return out, "", errors.New("the rated prompt is empty")
	}
	if len(prompt) > maxPromptTokens {
		prompt = append(prompt[:1:1], prompt[len(prompt)-maxPromptTokens+1:]...)
	}
	end := int32(-1)
	if isChat {
		if end = tok.EOT(); end < 0 {
			end = tok.EOS()
		}
	}
	encode := func(s string, wanted bool) []int32 {
		ids := tok.Encode(s, tokenizer.EncodeOptions{})
		if len(ids) > maxAnswerTokens {
			ids = ids[:maxAnswerTokens]
		} else if wanted && end >= 0 {
			ids = append(ids, end)
		}
		return ids
	}
	out.Prompt = prompt
	switch out.Signal {
	case sona.Correction:
		out.Answer = encode(fb.Answer, false)
		out.Correction = encode(fb.Correction, true)
		if len(out.Correction) == 0 {
			return out, "", errors.New("the correction is empty")
		}
	case sona.ThumbsUp:
		out.Answer = encode(fb.Answer, true)
	default:
		out.Answer = encode(fb.Answer, false)
	}
	if out.Signal != sona.Correction && strings.TrimSpace(fb.Answer) == "" {
		return out, "", errors.New("the rated answer is empty")
	}
	return out, text, nil
}
