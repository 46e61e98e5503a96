package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/ipc"
)

func newChatCmd() *cobra.Command {
	var o chatOptions
	var convID string
	cmd := &cobra.Command{
		Use:   "chat [-m MODEL] [--conversation ID]",
		Short: "Chat with a model through the daemon (starting it if needed)",
		Long: "chat is an interactive REPL. Every turn is saved in a new conversation in the daemon (see\n" +
			"`ruvllm conversations`); --conversation ID continues a saved one with its history, model, system\n" +
			"prompt and temperature. If no daemon is running, it starts ruvllmd in the background.\n\n" + chatHelp,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// Checked before a daemon is started, not by every turn.
			if t := float64(o.temp); math.IsNaN(t) || t < 0 || t > 2 {
				return fmt.Errorf("--temp %v: want a temperature from 0 to 2", o.temp)
			}
			if o.maxTokens < 0 {
				return fmt.Errorf("--max-tokens %d: want 0 (no limit but the context) or more", o.maxTokens)
			}
			// A model file is checked here, before any daemon is started
			// for it, and sent as an absolute path: the daemon's working
			// directory is not ours.
			if isModelPath(o.model) {
				abs, err := modelFile(o.model)
				if err != nil {
					return err
				}
				o.model = abs
			}
			var dargs []string
			if o.model != "" {
				dargs = []string{"--model", o.model}
			}
			c, err := connect(ctx, true, dargs...)
			if err != nil {
				return err
			}
			defer c.Close()
			f := cmd.Flags()
			o.thinkAsked = o.think && f.Changed("think")
			s := &chatSession{c: c, opts: o, out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr()}
			if convID != "" {
				if err := s.resume(ctx, convID, f.Changed("model"), f.Changed("system"), f.Changed("temp"), f.Changed("max-tokens")); err != nil {
					return err
				}
			}
			// A created model's PARAMETERs apply where no flag (nor a
			// resumed conversation's stored temperature) was given: the
			// model is the one a resumed conversation talks to, unless
			// -m names another.
			params := modelParameters(ctx, c, s.opts.model)
			s.opts.tempFromModel = !f.Changed("temp") && s.sampling.Temperature == nil && params["temperature"]
			s.opts.maxFromModel = !f.Changed("max-tokens") && s.sampling.MaxTokens == 0 && params["num_predict"]
			return s.repl(ctx, cmd.InOrStdin())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.model, "model", "m", "", "model name or .gguf path (default: the daemon's default model)")
	f.StringVar(&o.system, "system", "", "system prompt")
	f.Float32Var(&o.temp, "temp", 0.7, "temperature (unset: a created model's PARAMETER temperature, else this)")
	f.IntVarP(&o.maxTokens, "max-tokens", "n", 512, "most tokens per reply (unset: a created model's PARAMETER num_predict, else this)")
	f.StringVar(&convID, "conversation", "", "continue the saved conversation `ID`")
	f.BoolVar(&o.noSave, "no-save", false, "do not save the conversation in the daemon")
	f.BoolVar(&o.think, "think", true, "let a thinking model reason before it answers (--think=false turns it off where its template can)")
	f.BoolVar(&o.hideThinking, "hide-thinking", false, "do not show a thinking model's reasoning")
	return cmd
}

// chatOptions are the settings of a chat, from flags or a resumed
// conversation.
type chatOptions struct {
	model, system string
	temp          float32
	maxTokens     int
	noSave        bool
	// think false asks a thinking model not to reason; hideThinking does
	// not show its reasoning (shown on the error stream, apart from the
	// answer, by default).
	think, hideThinking bool
	// thinkAsked is true where --think or /set think asked for thinking:
	// it is then requested (chat_template_kwargs.enable_thinking), which
	// a created model's TEMPLATE needs to think (.Think); unset, the
	// model's template decides.
	thinkAsked bool
	// tempFromModel and maxFromModel leave the temperature and the reply
	// length to a created model's PARAMETERs (no flag set them).
	tempFromModel, maxFromModel bool
}

// chatSession is one REPL conversation: the turns sent with every request
// and the stored conversation they are saved to.
type chatSession struct {
	c    *ipc.Client
	opts chatOptions
	// conv is the stored conversation's id, "" until the first reply is
	// saved (so a chat left without a reply leaves nothing behind).
	conv    string
	history []ipc.Message
	// sampling holds a resumed conversation's stored sampling settings.
	sampling ipc.SamplingFields
	// lastRequest and lastMessage name the last reply for /up and /down.
	lastRequest, lastMessage string
	out, errw                io.Writer
	// pending holds the settings given by flags on resume, stored with
	// the first reply saved: not before (a mistyped -m was stored though
	// no turn could use it) and not at all with --no-save.
	pending *ipc.ConversationUpdate
	// replyContext is the context a reply streams under at a terminal
	// (nil: one that Ctrl-C cancels).
	replyContext func(context.Context) (context.Context, context.CancelFunc)
	// answered is the model that gave the last reply.
	answered string
	// userParams are the parameters /set parameter gave, in order.
	userParams []string
	// format is "json" after /set format json.
	format string
	// verbose prints each reply's counts and speeds (/set verbose).
	verbose bool
}

// resume loads conversation id: its thread becomes the history and its
// settings apply unless the matching flag was given, in which case the
// flag's value is stored in the conversation.
func (s *chatSession) resume(ctx context.Context, id string, modelSet, systemSet, tempSet, maxSet bool) error {
	conv, err := s.c.Conversation(ctx, id)
	if err != nil {
		return fmt.Errorf("load conversation %s: %w", id, err)
	}
	s.conv = id
	for _, m := range conv.Messages {
		s.history = append(s.history, ipc.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent})
		if m.Role == "assistant" {
			s.lastRequest, s.lastMessage = m.RequestID, m.ID
		}
	}
	var upd ipc.ConversationUpdate
	if stored := storedModel(s.opts.model); modelSet && stored != conv.Model {
		upd.Model = &stored
	} else {
		s.opts.model = conv.Model
	}
	if systemSet && s.opts.system != conv.System {
		upd.System = &s.opts.system
	} else {
		s.opts.system = conv.System
	}
	// The stored sampling settings (which another client may have set)
	// apply to every request; --temp overrides the stored temperature.
	if conv.Sampling != nil {
		s.sampling = *conv.Sampling
	}
	switch {
	case tempSet:
		sampling := s.sampling
		sampling.Temperature = &s.opts.temp
		upd.Sampling = &sampling
	case s.sampling.Temperature != nil:
		s.opts.temp = *s.sampling.Temperature
	}
	// A stored reply length (/set parameter num_predict) applies unless
	// -n was given; the stored settings are the chat's parameters for
	// /show parameters and /save, as /set parameter made them.
	if s.sampling.MaxTokens > 0 && !maxSet {
		s.opts.maxTokens = s.sampling.MaxTokens
	}
	s.userParams = storedParams(s.sampling)
	if upd.Model != nil || upd.System != nil || upd.Sampling != nil {
		s.pending = &upd
	}
	fmt.Fprintf(s.errw, "(continuing %q, %d messages)\n", conv.Title, len(conv.Messages))
	return nil
}

// storedParams are the names of the /set parameter parameters that
// stored sampling settings hold, in chatParameters' order.
func storedParams(sf ipc.SamplingFields) []string {
	set := map[string]bool{
		"temperature": sf.Temperature != nil, "top_p": sf.TopP != nil, "top_k": sf.TopK != nil,
		"min_p": sf.MinP != nil, "seed": sf.Seed != nil, "num_predict": sf.MaxTokens > 0,
		"repeat_penalty": sf.RepeatPenalty != 0, "presence_penalty": sf.PresencePenalty != 0,
		"frequency_penalty": sf.FrequencyPenalty != 0, "stop": len(sf.Stop) > 0,
	}
	var names []string
	for _, p := range chatParameters {
		if set[p.name] {
			names = append(names, p.name)
		}
	}
	return names
}

// maxChatLine is the longest input line chat reads.
const maxChatLine = 1 << 20

func (s *chatSession) repl(ctx context.Context, in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxChatLine)
	interactive := isTerminal(in)
	for {
		if interactive {
			fmt.Fprint(s.out, ">>> ")
		}
		if !sc.Scan() {
			if errors.Is(sc.Err(), bufio.ErrTooLong) {
				return fmt.Errorf("an input line is longer than %d MiB, the most chat reads as one message", maxChatLine>>20)
			}
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		if first, ok := strings.CutPrefix(line, `"""`); ok {
			// A message of several lines, up to the line that ends
			// with """ (as ollama run reads one).
			if interactive && !strings.HasSuffix(first, `"""`) {
				fmt.Fprint(s.out, "... ")
			}
			var whole bool
			line, whole = readMessage(first, func() (string, bool) {
				if !sc.Scan() {
					return "", false
				}
				if interactive {
					fmt.Fprint(s.out, "... ")
				}
				return sc.Text(), true
			})
			if !whole {
				if err := sc.Err(); err != nil {
					return err
				}
				return errors.New(`the input ended inside a message begun with """`)
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			if err := s.turn(ctx, line, interactive); err != nil {
				if !interactive {
					return err
				}
				fmt.Fprintln(s.errw, "error:", err)
			}
			continue
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "/"):
			if s.runCommand(ctx, line) {
				return nil
			}
		default:
			if err := s.turn(ctx, line, interactive); err != nil {
				// Typed at a terminal, the next line may do better; read
				// from a pipe or a file, the rest would fail alike and the
				// exit status must say so.
				if !interactive {
					return err
				}
				fmt.Fprintln(s.errw, "error:", err)
			}
		}
	}
}

func (s *chatSession) setSystem(ctx context.Context, system string) {
	s.opts.system = system
	if s.pending != nil {
		s.pending.System = nil // this one is newer
	}
	if s.conv != "" && !s.opts.noSave {
		if _, err := s.c.UpdateConversation(ctx, s.conv, ipc.ConversationUpdate{System: &system}); err != nil {
			fmt.Fprintln(s.errw, "error: save system prompt:", err)
			return
		}
	}
	if system == "" {
		// "/system" alone clears it: say so, not "set".
		fmt.Fprintln(s.errw, "(system prompt cleared)")
		return
	}
	fmt.Fprintln(s.errw, "(system prompt set)")
}

func (s *chatSession) rate(ctx context.Context, rating int, correction string) {
	if s.lastRequest == "" {
		fmt.Fprintln(s.errw, "(no reply to rate yet)")
		return
	}
	req := ipc.FeedbackRequest{RequestID: s.lastRequest, Rating: rating, Correction: correction}
	if s.conv != "" && s.lastMessage != "" {
		req.ConversationID, req.MessageID = s.conv, s.lastMessage
	}
	if _, err := s.c.SendFeedback(ctx, req); err != nil {
		fmt.Fprintln(s.errw, "error:", err)
		return
	}
	fmt.Fprintln(s.errw, "(feedback saved)")
}

// turn sends line with the history, streams the reply and saves both. It
// returns the request's error; a failure to save is only reported.
func (s *chatSession) turn(ctx context.Context, line string, interactive bool) error {
	user := ipc.Message{Role: "user", Content: line}
	msgs := append(s.history[:len(s.history):len(s.history)], user)
	if s.opts.system != "" {
		msgs = append([]ipc.Message{{Role: "system", Content: s.opts.system}}, msgs...)
	}
	req := ipc.ChatCompletionRequest{Model: s.opts.model, Messages: msgs, SamplingFields: s.sampling}
	if !s.opts.tempFromModel {
		req.Temperature = &s.opts.temp
	}
	if !s.opts.maxFromModel {
		req.MaxTokens = s.opts.maxTokens
	}
	switch {
	case !s.opts.think:
		req.ReasoningEffort = "none"
	case s.opts.thinkAsked:
		req.ChatTemplateKwargs = map[string]any{"enable_thinking": true}
	}
	if s.format == "json" {
		req.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
	}
	var usage *ipc.Usage
	var id, model string
	start := time.Now()
	var first time.Duration
	p := &replyPrinter{out: s.out, errw: s.errw, hideThinking: s.opts.hideThinking}
	// At a terminal, Ctrl-C stops the reply and returns to the prompt;
	// it ended the whole chat.
	replyCtx := ctx
	if interactive {
		newCtx := s.replyContext
		if newCtx == nil {
			newCtx = func(ctx context.Context) (context.Context, context.CancelFunc) {
				return signal.NotifyContext(ctx, os.Interrupt)
			}
		}
		var stop context.CancelFunc
		replyCtx, stop = newCtx(ctx)
		defer stop()
	}
	err := s.c.ChatStream(replyCtx, req, func(ch ipc.ChatCompletionChunk) error {
		id, model = ch.ID, ch.Model
		if ch.Usage != nil {
			usage = ch.Usage
		}
		for _, choice := range ch.Choices {
			d := choice.Delta
			if (d.Content != "" || d.ReasoningContent != "") && first == 0 {
				first = time.Since(start)
			}
			p.delta(d)
		}
		return nil
	})
	p.end()
	if err != nil && interactive && replyCtx.Err() != nil && ctx.Err() == nil {
		// Not kept in the history nor saved: the next turn goes on from
		// the last whole reply.
		fmt.Fprintln(s.errw, "\n(reply interrupted)")
		return nil
	}
	if err != nil {
		return err
	}
	reply := ipc.Message{Role: "assistant", Content: p.answer.String(), ReasoningContent: p.reasoning.String()}
	s.history = append(s.history, user, reply)
	s.lastRequest, s.lastMessage = id, ""
	s.answered = model
	total := time.Since(start)
	stats := replyStats(usage, first, total)
	switch {
	case stats != nil && s.verbose:
		printVerbose(s.errw, stats, total)
	case stats != nil && interactive:
		fmt.Fprintf(s.errw, "(%d prompt tokens, %d cached, %d generated, first token %.0f ms)\n",
			stats.PromptTokens, stats.CachedTokens, stats.CompletionTokens, stats.TTFTMillis)
	}
	switch {
	case stats == nil:
	case stats.DroppedMessages > 0:
		fmt.Fprintf(s.errw, "(earlier messages were left out to fit the context: %d messages, %d tokens)\n", stats.DroppedMessages, stats.DroppedTokens)
	case stats.DroppedTokens > 0:
		// One message too long for the context: its start was cut.
		fmt.Fprintf(s.errw, "(the conversation was cut to fit the context: %d tokens left out)\n", stats.DroppedTokens)
	}
	if s.opts.noSave {
		return nil
	}
	if s.opts.model == "" {
		// Pin the conversation to the model that answered, so resuming it
		// later talks to the same one whatever the daemon's default is.
		s.opts.model = model
	}
	if err := s.save(ctx, user, reply, id, stats); err != nil {
		fmt.Fprintln(s.errw, "error: save conversation:", err)
	}
	return nil
}

// replyPrinter writes a streamed reply: the answer to out, a thinking
// model's reasoning to errw between "Thinking..." and "...done thinking."
// (unless hidden), so that the answer alone is the output; it keeps both.
type replyPrinter struct {
	out, errw         io.Writer
	hideThinking      bool
	thinking          bool // reasoning is being shown
	answer, reasoning strings.Builder
}

func (p *replyPrinter) delta(d ipc.Delta) {
	if d.ReasoningContent != "" {
		p.reasoning.WriteString(d.ReasoningContent)
		if !p.hideThinking {
			if !p.thinking {
				p.thinking = true
				fmt.Fprintln(p.errw, "Thinking...")
			}
			fmt.Fprint(p.errw, d.ReasoningContent)
		}
	}
	if d.Content != "" && p.thinking {
		p.thinking = false
		fmt.Fprint(p.errw, "\n...done thinking.\n\n")
	}
	p.answer.WriteString(d.Content)
	fmt.Fprint(p.out, d.Content)
}

// end finishes the reply's output.
func (p *replyPrinter) end() {
	if p.thinking {
		p.thinking = false
		fmt.Fprint(p.errw, "\n...done thinking.\n")
	}
	fmt.Fprintln(p.out)
}

// save stores a user turn and its reply, creating the conversation on the
// first one.
func (s *chatSession) save(ctx context.Context, user, reply ipc.Message, id string, stats *ipc.ReplyStats) error {
	msgs := []ipc.ConversationMessage{
		{Role: user.Role, Content: user.Content},
		{Role: reply.Role, Content: reply.Content, ReasoningContent: reply.ReasoningContent, RequestID: id, Stats: stats},
	}
	var conv ipc.Conversation
	var err error
	if s.conv == "" {
		sampling := s.sampling
		if !s.opts.tempFromModel {
			sampling.Temperature = &s.opts.temp
		}
		conv, err = s.c.CreateConversation(ctx, ipc.ConversationCreate{Model: storedModel(s.opts.model), System: s.opts.system,
			Sampling: &sampling, Messages: msgs})
		if err == nil {
			s.conv = conv.ID
			fmt.Fprintf(s.errw, "(saved as conversation %s; continue it with ruvllm chat --conversation %s)\n", conv.ID, conv.ID)
		}
	} else {
		if s.pending != nil {
			if _, err := s.c.UpdateConversation(ctx, s.conv, *s.pending); err != nil {
				return fmt.Errorf("update conversation %s: %w", s.conv, err)
			}
			s.pending = nil
		}
		conv, err = s.c.AppendMessages(ctx, s.conv, msgs...)
	}
	if err != nil {
		return err
	}
	if n := len(conv.Messages); n > 0 {
		s.lastMessage = conv.Messages[n-1].ID
	}
	return nil
}

// replyStats turns a reply's usage and client-side timings into the
// figures stored with it.
func replyStats(u *ipc.Usage, first, total time.Duration) *ipc.ReplyStats {
	if u == nil {
		return nil
	}
	st := &ipc.ReplyStats{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TTFTMillis: float64(first.Microseconds()) / 1000}
	if u.PromptTokensDetails != nil {
		st.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if o := u.ContextOverflow; o != nil {
		st.DroppedMessages, st.DroppedTokens, st.ContextShifts = o.DroppedMessages, o.DroppedTokens, o.Shifts
	}
	if gen := total - first; u.CompletionTokens > 1 && gen > 0 {
		st.TokensPerSecond = float64(u.CompletionTokens-1) / gen.Seconds()
	}
	return st
}

// isModelPath reports whether a -m argument names a file rather than a
// model the daemon knows by name: it ends in .gguf or holds a path
// separator.
func isModelPath(model string) bool {
	return strings.HasSuffix(model, ".gguf") || strings.ContainsRune(model, filepath.Separator)
}

// modelFile returns the absolute path of the model file named by path, or
// an error naming that absolute path when there is no such file.
func modelFile(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("model %s: %w", path, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("no model file %s (a model the daemon knows by name is given without .gguf: see `ruvllm models`)", abs)
	case err != nil:
		return "", fmt.Errorf("model file: %w", err)
	case st.IsDir():
		return "", fmt.Errorf("model file %s is a directory", abs)
	}
	return abs, nil
}

// storedModel is what a conversation records as its model: the model's
// name, as the daemon and the app name it, for a model given by path.
func storedModel(model string) string {
	if isModelPath(model) {
		return llm.NameFromPath(model)
	}
	return model
}

// isTerminal reports whether r is a terminal: a character device that
// answers as one, not /dev/null (read as a terminal, `run MODEL
// </dev/null` printed the chat's prompt and exited 0).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
