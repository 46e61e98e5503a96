package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/ipc"
)

func newTemplateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Work with chat templates",
	}
	cmd.AddCommand(newTemplateRenderCmd())
	return cmd
}

// templateCase is one conversation to render: an entry of
// ../shared/templates/conversations.json plus optional special tokens.
type templateCase struct {
	// ID names the case (as the shared cases do); it renders nothing.
	ID                  string            `json:"id"`
	Messages            []caseMessage     `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	AddGenerationPrompt *bool             `json:"add_generation_prompt"`
	Extra               map[string]any    `json:"extra"`
	BOS                 *string           `json:"bos_token"`
	EOS                 *string           `json:"eos_token"`
}

// caseMessage is a message of a templateCase: a chat.Message whose
// content is read as a chat request (and /v1/chat/template) reads it: a
// string, null, or an array of text parts joined with newlines
// (ipc.Message). A part that is not text is an error naming its type.
type caseMessage struct{ chat.Message }

// UnmarshalJSON reads a message, refusing fields chat.Message lacks.
func (m *caseMessage) UnmarshalJSON(b []byte) error {
	type plain chat.Message
	var v struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	var text ipc.Message
	if len(v.Content) > 0 {
		if err := json.Unmarshal(fmt.Appendf(nil, `{"content":%s}`, v.Content), &text); err != nil {
			return err
		}
	}
	if len(text.NonText) > 0 {
		return fmt.Errorf("content has a %q part: only text parts render", text.NonText[0])
	}
	m.Message = chat.Message(v.plain)
	m.Content = text.Content
	return nil
}

func newTemplateRenderCmd() *cobra.Command {
	var tmplPath, model, convPath, now string
	cmd := &cobra.Command{
		Use:   "render (--template FILE.jinja | -m MODEL.gguf) --conversation CASE.json",
		Short: "Print a conversation rendered with a chat template, exactly",
		Long: "render prints what a chat template makes of a conversation, byte for byte and without a\n" +
			"trailing newline: the Jinja template of --template, or the chat template -m MODEL.gguf\n" +
			"carries (its tool_use variant when the conversation has tools; the built-in family\n" +
			"when it has none). CASE.json is an object with messages, and optionally tools (OpenAI\n" +
			"style), add_generation_prompt (default true), extra (more template variables, e.g.\n" +
			"{\"enable_thinking\": false}), bos_token and eos_token (default: the model's, or empty\n" +
			"with --template). A template that calls raise_exception fails with its message.\n" +
			"--now fixes the time strftime_now reports (2006-01-02T15:04:05, UTC).",
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (tmplPath == "") == (model == "") {
				return errors.New("template render: give exactly one of --template FILE.jinja and -m MODEL.gguf")
			}
			if convPath == "" {
				return errors.New("template render: --conversation CASE.json is required")
			}
			c, err := readTemplateCase(convPath)
			if err != nil {
				return err
			}
			msgs := make([]chat.Message, len(c.Messages))
			for i, m := range c.Messages {
				msgs[i] = m.Message
			}
			conv := chat.Conversation{Messages: msgs, Tools: c.Tools, AddGenerationPrompt: c.AddGenerationPrompt == nil || *c.AddGenerationPrompt, Vars: c.Extra}
			if now != "" {
				if conv.Now, err = time.Parse("2006-01-02T15:04:05", now); err != nil {
					return fmt.Errorf("template render: --now %q: want 2006-01-02T15:04:05", now)
				}
			}
			tmpl, err := loadTemplate(tmplPath, model, c)
			if err != nil {
				return err
			}
			out, err := tmpl.Apply(cmd.Context(), conv)
			if err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), out)
			return err
		},
	}
	cmd.Flags().StringVar(&tmplPath, "template", "", "Jinja chat template file")
	cmd.Flags().StringVarP(&model, "model", "m", "", "GGUF model file whose chat template to use")
	cmd.Flags().StringVar(&convPath, "conversation", "", "JSON file with the conversation (messages, tools, ...)")
	cmd.Flags().StringVar(&now, "now", "", "time for strftime_now, 2006-01-02T15:04:05 (default: the current time)")
	return cmd
}

func readTemplateCase(path string) (templateCase, error) {
	var c templateCase
	data, err := readInputFile("--conversation", path, maxGrammarFile)
	if err != nil {
		return c, fmt.Errorf("template render: %w", err)
	}
	// A field it does not know (a misspelt add_generation_prompt) is an
	// error: it was ignored, and the rendering silently not the one asked.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("template render: --conversation %s: %w", path, err)
	}
	if len(c.Messages) == 0 {
		return c, fmt.Errorf("template render: %s: messages must not be empty", path)
	}
	return c, nil
}

// loadTemplate compiles the --template file or the model's template, with
// the case's special tokens over the model's.
func loadTemplate(tmplPath, model string, c templateCase) (chat.Template, error) {
	var st chat.SpecialTokens
	var src, arch string
	var variants map[string]string
	if tmplPath != "" {
		data, err := readInputFile("--template", tmplPath, maxGrammarFile)
		if err != nil {
			return chat.Template{}, fmt.Errorf("template render: %w", err)
		}
		src = string(data)
	} else {
		f, err := gguf.Open(model)
		if err != nil {
			return chat.Template{}, err
		}
		defer f.Close()
		st = chat.SpecialTokensFromGGUF(f)
		src, variants = chat.TemplatesFromGGUF(f)
		arch = f.Architecture()
	}
	if c.BOS != nil {
		st.BOS = *c.BOS
	}
	if c.EOS != nil {
		st.EOS = *c.EOS
	}
	if tmplPath != "" {
		return chat.FromJinja(src, nil, st)
	}
	return chat.ForModel(src, variants, arch, st)
}
