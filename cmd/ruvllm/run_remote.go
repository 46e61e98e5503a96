package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/ipc"
)

// runRemote is `run --remote`: the same generation, done by the daemon
// (its warm model and shared prefix cache) through the ipc client.
func runRemote(ctx context.Context, cmd *cobra.Command, g genFlags, model string, asChat bool, system string, asJSON bool) error {
	c, err := connect(ctx, true)
	if err != nil {
		return err
	}
	defer c.Close()
	sf := g.remoteSampling(cmd.Flags(), modelParameters(ctx, c, model))
	if pred, err := g.prediction(); err != nil {
		return err
	} else if pred != "" {
		sf.Prediction = &ipc.Prediction{Type: "content", Content: pred}
	}
	out := cmd.OutOrStdout()
	start := time.Now()
	var ttft time.Duration
	var text strings.Builder
	var usage *ipc.Usage
	var finish string
	// The reply as chat shows it (a thinking model's reasoning on the
	// error stream), or nothing until the JSON at the end.
	rp := &replyPrinter{out: out, errw: cmd.ErrOrStderr()}
	if asJSON {
		rp.out, rp.errw = io.Discard, io.Discard
	}
	emit := func(s string) {
		if s == "" {
			return
		}
		if ttft == 0 {
			ttft = time.Since(start)
		}
		text.WriteString(s)
		if !asJSON {
			fmt.Fprint(out, s)
		}
	}
	if asChat {
		req := ipc.ChatCompletionRequest{Model: model, SamplingFields: sf}
		if system != "" {
			req.Messages = append(req.Messages, ipc.Message{Role: "system", Content: system})
		}
		req.Messages = append(req.Messages, ipc.Message{Role: "user", Content: g.prompt})
		err = c.ChatStream(ctx, req, func(ch ipc.ChatCompletionChunk) error {
			if ch.Usage != nil {
				usage = ch.Usage
			}
			for _, choice := range ch.Choices {
				if d := choice.Delta; d.Content != "" || d.ReasoningContent != "" {
					if ttft == 0 {
						ttft = time.Since(start)
					}
					rp.delta(d)
				}
				if choice.FinishReason != nil {
					finish = *choice.FinishReason
				}
			}
			return nil
		})
	} else {
		req := ipc.CompletionRequest{Model: model, Prompt: ipc.CompletionPrompt{Text: g.prompt}, SamplingFields: sf}
		err = c.CompleteStream(ctx, req, func(ch ipc.CompletionResponse) error {
			if ch.Usage != nil {
				usage = ch.Usage
			}
			for _, choice := range ch.Choices {
				emit(choice.Text)
				if choice.FinishReason != nil {
					finish = *choice.FinishReason
				}
			}
			return nil
		})
	}
	// Ctrl-C ends the reply as it does in process: what came so far, marked
	// "interrupted", and a failing exit status.
	var status error
	if errors.Is(err, context.Canceled) {
		finish, status = "interrupted", errors.New("interrupted")
	} else if err != nil {
		return err
	}
	total := time.Since(start)
	if asJSON {
		answer := text.String()
		if asChat {
			answer = rp.answer.String()
		}
		// The in-process run's object (its timings as the daemon's usage
		// and this client's clock tell them), without the token ids the
		// API does not send.
		tm := runTimings{TTFTMS: ms(ttft), FinishReason: finish}
		if usage != nil {
			tm.PromptTokens, tm.GenTokens = usage.PromptTokens, usage.CompletionTokens
		}
		if ttft > 0 {
			tm.GenMS = ms(total - ttft)
			if tm.GenTokens > 1 && total > ttft {
				tm.GenTPS = float64(tm.GenTokens-1) / (total - ttft).Seconds()
			}
		}
		res := map[string]any{"text": answer, "timings": tm}
		if rp.reasoning.Len() > 0 {
			res["reasoning"] = rp.reasoning.String()
		}
		if usage != nil {
			res["usage"] = usage
		}
		if err := json.NewEncoder(out).Encode(res); err != nil {
			return err
		}
		return status
	}
	if asChat {
		rp.end()
	} else {
		fmt.Fprintln(out)
	}
	if usage != nil {
		cached := 0
		if usage.PromptTokensDetails != nil {
			cached = usage.PromptTokensDetails.CachedTokens
		}
		gen := total - ttft
		tps := 0.0
		if usage.CompletionTokens > 1 && gen > 0 {
			tps = float64(usage.CompletionTokens-1) / gen.Seconds()
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "prompt %d tokens (%d cached), generated %d tokens, ttft %.0f ms, %.1f tok/s, finish %s\n",
			usage.PromptTokens, cached, usage.CompletionTokens, ttft.Seconds()*1000, tps, finish)
	}
	return status
}

// remoteSampling is the sampling a remote run sends: each flag the user
// set, and each other flag's default unless the model is a created one
// whose PARAMETERs set that field (params): the daemon applies those to
// the fields a request leaves unset, as Ollama does for `ollama run`.
func (g genFlags) remoteSampling(f *pflag.FlagSet, params map[string]bool) ipc.SamplingFields {
	p := g.params
	send := func(flag, param string) bool { return f.Changed(flag) || !params[param] }
	sf := ipc.SamplingFields{Stop: g.stops, Speculation: g.speculation}
	if send("temp", "temperature") {
		sf.Temperature = &p.Temperature
	}
	if send("top-p", "top_p") {
		sf.TopP = &p.TopP
	}
	if send("top-k", "top_k") {
		sf.TopK = &p.TopK
	}
	if send("min-p", "min_p") {
		sf.MinP = &p.MinP
	}
	if send("presence-penalty", "presence_penalty") {
		sf.PresencePenalty = p.PresencePenalty
	}
	if send("frequency-penalty", "frequency_penalty") {
		sf.FrequencyPenalty = p.FrequencyPenalty
	}
	if send("repeat-penalty", "repeat_penalty") {
		sf.RepeatPenalty = p.RepeatPenalty
	}
	if send("n", "num_predict") {
		sf.MaxTokens = g.maxTokens
	}
	if g.seed >= 0 {
		sf.Seed = &g.seed
	}
	return sf
}

// modelParameters are the PARAMETER names a created model sets (what
// `ollama show --parameters` lists), or nil for a model the daemon does
// not describe (a file path, the default model).
func modelParameters(ctx context.Context, c *ipc.Client, model string) map[string]bool {
	if model == "" || isModelPath(model) {
		return nil
	}
	sh, err := c.Show(ctx, model)
	if err != nil {
		return nil
	}
	return parameterNames(sh.Parameters)
}

// parameterNames are the names /api/show's parameters text sets: lines
// of a name and a value, as Ollama writes them, or PARAMETER lines, as
// ruvllmd does (a Modelfile's). The PARAMETER lines were read as setting
// "PARAMETER", so no created model's PARAMETERs applied.
func parameterNames(text string) map[string]bool {
	keys := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.EqualFold(f[0], "PARAMETER") {
			f = f[1:]
		}
		if len(f) > 0 {
			keys[strings.ToLower(f[0])] = true
		}
	}
	return keys
}
