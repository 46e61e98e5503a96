package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/ipc"
)

// The chat REPL's commands, as an Ollama user types them in ollama run:
// /set, /unset, /show, /load and /save beside chat's own /system, /up,
// /down, /clear and /bye.

// chatHelp lists the REPL's commands.
const chatHelp = `Available commands:
  /set parameter NAME VALUE  set a sampling parameter for this chat (/show parameters lists them)
  /set system TEXT           set the system prompt (also /system TEXT; /system alone clears it)
  /set format json           answer in JSON; /unset format answers in text again
  /set think, /set nothink   let a thinking model reason before it answers, or not
  /set verbose, /set quiet   show each reply's token counts and speeds, or not
  /show info | parameters | system | template | modelfile | license
  /load MODEL                talk to another model (a new conversation)
  /save NAME                 save the model with this chat's system prompt, parameters and messages as NAME
  /clear                     start a new conversation
  /up, /down [CORRECTION]    rate the last reply
  /bye                       quit
  """                        begin and end a message of several lines`

// chatParameter is one sampling parameter /set parameter takes: its
// name (Ollama's), what it takes, and how it is set on the session and
// read back.
type chatParameter struct {
	name, want string
	set        func(s *chatSession, args []string) error
	// get is the value set, as a Modelfile's PARAMETER takes it.
	get func(s *chatSession) any
}

// chatParameters are the parameters /set parameter knows, in the order
// help and /show parameters list them.
var chatParameters = []chatParameter{
	{"temperature", "a number from 0 to 2", func(s *chatSession, a []string) error {
		v, err := parseFloat(a, 0, 2)
		if err == nil {
			s.opts.temp, s.opts.tempFromModel = float32(v), false
		}
		return err
	}, func(s *chatSession) any { return s.opts.temp }},
	{"top_p", "a number from 0 to 1", func(s *chatSession, a []string) error {
		v, err := parseFloat(a, 0, 1)
		if err == nil {
			f := float32(v)
			s.sampling.TopP = &f
		}
		return err
	}, func(s *chatSession) any { return *s.sampling.TopP }},
	{"top_k", "a whole number from 0 (off)", func(s *chatSession, a []string) error {
		v, err := parseInt(a, 0, math.MaxInt32)
		if err == nil {
			k := int(v)
			s.sampling.TopK = &k
		}
		return err
	}, func(s *chatSession) any { return *s.sampling.TopK }},
	{"min_p", "a number from 0 to 1", func(s *chatSession, a []string) error {
		v, err := parseFloat(a, 0, 1)
		if err == nil {
			f := float32(v)
			s.sampling.MinP = &f
		}
		return err
	}, func(s *chatSession) any { return *s.sampling.MinP }},
	{"seed", "a whole number", func(s *chatSession, a []string) error {
		v, err := parseInt(a, math.MinInt64, math.MaxInt64)
		if err == nil {
			s.sampling.Seed = &v
		}
		return err
	}, func(s *chatSession) any { return *s.sampling.Seed }},
	{"num_predict", "-1 (no limit but the context) or a whole number from 1", func(s *chatSession, a []string) error {
		v, err := parseInt(a, -1, math.MaxInt32)
		if err == nil && v == 0 {
			err = fmt.Errorf("0")
		}
		if err == nil {
			// Kept in the sampling settings too, so that the conversation
			// stores it and a resumed chat applies it (-1, no limit, is
			// stored as no setting).
			s.opts.maxTokens, s.opts.maxFromModel = int(max(v, 0)), false
			s.sampling.MaxTokens = s.opts.maxTokens
		}
		return err
	}, func(s *chatSession) any {
		if s.opts.maxTokens == 0 {
			return -1 // no limit
		}
		return s.opts.maxTokens
	}},
	{"repeat_penalty", "a number above 0 (1: off)", func(s *chatSession, a []string) error {
		v, err := parseFloat(a, math.SmallestNonzeroFloat32, 100)
		if err == nil {
			s.sampling.RepeatPenalty = float32(v)
		}
		return err
	}, func(s *chatSession) any { return s.sampling.RepeatPenalty }},
	{"presence_penalty", "a number from -2 to 2", func(s *chatSession, a []string) error {
		v, err := parseFloat(a, -2, 2)
		if err == nil {
			s.sampling.PresencePenalty = float32(v)
		}
		return err
	}, func(s *chatSession) any { return s.sampling.PresencePenalty }},
	{"frequency_penalty", "a number from -2 to 2", func(s *chatSession, a []string) error {
		v, err := parseFloat(a, -2, 2)
		if err == nil {
			s.sampling.FrequencyPenalty = float32(v)
		}
		return err
	}, func(s *chatSession) any { return s.sampling.FrequencyPenalty }},
	{"stop", "one or more stop strings", func(s *chatSession, a []string) error {
		if len(a) == 0 {
			return fmt.Errorf("no stop string")
		}
		s.sampling.Stop = append(ipc.StopList(nil), a...)
		return nil
	}, func(s *chatSession) any { return []string(s.sampling.Stop) }},
}

// parseFloat reads the one value of args as a number in [lo, hi].
func parseFloat(args []string, lo, hi float64) (float64, error) {
	if len(args) != 1 {
		return 0, fmt.Errorf("%d values", len(args))
	}
	v, err := strconv.ParseFloat(args[0], 64)
	if err != nil || math.IsNaN(v) || v < lo || v > hi {
		return 0, fmt.Errorf("%q", args[0])
	}
	return v, nil
}

// parseInt reads the one value of args as a whole number in [lo, hi].
func parseInt(args []string, lo, hi int64) (int64, error) {
	if len(args) != 1 {
		return 0, fmt.Errorf("%d values", len(args))
	}
	v, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%q", args[0])
	}
	return v, nil
}

// runCommand runs one REPL command (a line that begins with "/") and
// reports whether the chat ends.
func (s *chatSession) runCommand(ctx context.Context, line string) (quit bool) {
	fields := strings.Fields(line)
	rest := func(n int) string { // the line after its first n words
		r := line
		for range n {
			r = strings.TrimLeft(r, " \t")
			if i := strings.IndexAny(r, " \t"); i >= 0 {
				r = r[i:]
			} else {
				r = ""
			}
		}
		return strings.TrimSpace(r)
	}
	switch cmd := fields[0]; {
	case cmd == "/bye" || cmd == "/exit":
		return true
	case cmd == "/clear":
		s.newConversation()
		fmt.Fprintln(s.errw, "(new conversation)")
	case cmd == "/system":
		s.setSystem(ctx, rest(1))
	case cmd == "/up" || cmd == "/down":
		if cmd == "/up" {
			s.rate(ctx, 1, "")
		} else {
			s.rate(ctx, -1, rest(1))
		}
	case cmd == "/set" && len(fields) > 1:
		s.set(ctx, fields[1], fields[2:], rest(2))
	case cmd == "/unset" && len(fields) == 2 && fields[1] == "format":
		s.format = ""
		fmt.Fprintln(s.errw, "(answers in text)")
	case cmd == "/unset" && len(fields) == 2 && fields[1] == "system":
		s.setSystem(ctx, "")
	case cmd == "/show" && len(fields) == 2:
		s.show(ctx, fields[1])
	case cmd == "/load" && len(fields) == 2:
		s.load(ctx, fields[1])
	case cmd == "/save" && len(fields) == 2:
		s.saveModel(ctx, fields[1])
	case cmd == "/?" || cmd == "/help":
		fmt.Fprintln(s.errw, chatHelp)
	case commandUsage(cmd) != "":
		// A known command with missing or extra words: how to type it,
		// where it was called an unknown command.
		fmt.Fprintf(s.errw, "usage: %s\n", commandUsage(cmd))
	default:
		fmt.Fprintf(s.errw, "unknown command %q; /? lists the commands\n", line)
	}
	return false
}

// commandUsage is how to type the REPL command cmd that takes words
// ("" for another).
func commandUsage(cmd string) string {
	switch cmd {
	case "/set":
		return "/set parameter NAME VALUE | system TEXT | format json | think | nothink | verbose | quiet"
	case "/unset":
		return "/unset format | system"
	case "/show":
		return "/show info | parameters | system | template | modelfile | license"
	case "/load":
		return "/load MODEL"
	case "/save":
		return "/save NAME"
	}
	return ""
}

// newConversation starts over: no history, and the next reply is saved in
// a conversation of its own.
func (s *chatSession) newConversation() {
	s.conv, s.history, s.lastRequest, s.lastMessage, s.pending = "", nil, "", "", nil
}

// set runs /set WHAT ARGS... (text: the line after WHAT).
func (s *chatSession) set(ctx context.Context, what string, args []string, text string) {
	switch what {
	case "parameter":
		if len(args) == 0 {
			fmt.Fprintln(s.errw, "usage: /set parameter NAME VALUE; /show parameters lists the names")
			return
		}
		i := slices.IndexFunc(chatParameters, func(p chatParameter) bool { return p.name == strings.ToLower(args[0]) })
		if i < 0 {
			var names []string
			for _, p := range chatParameters {
				names = append(names, p.name)
			}
			fmt.Fprintf(s.errw, "unknown parameter %q; the parameters are %s\n", args[0], strings.Join(names, ", "))
			return
		}
		p := chatParameters[i]
		if err := p.set(s, args[1:]); err != nil {
			fmt.Fprintf(s.errw, "/set parameter %s: %v: want %s\n", p.name, err, p.want)
			return
		}
		if !slices.Contains(s.userParams, p.name) {
			s.userParams = append(s.userParams, p.name)
		}
		s.storeSampling(ctx)
		fmt.Fprintf(s.errw, "(set parameter %s to %s)\n", p.name, strings.Join(args[1:], " "))
	case "system":
		s.setSystem(ctx, text)
	case "format":
		if text != "json" {
			fmt.Fprintln(s.errw, "usage: /set format json (/unset format: text)")
			return
		}
		s.format = "json"
		fmt.Fprintln(s.errw, "(answers in JSON)")
	case "think", "nothink":
		// /set think asks for thinking: a created model's TEMPLATE
		// thinks only when asked (.Think), as with ollama run.
		s.opts.think, s.opts.thinkAsked = what == "think", what == "think"
		fmt.Fprintf(s.errw, "(thinking %s)\n", map[bool]string{true: "on", false: "off"}[s.opts.think])
	case "verbose", "quiet":
		s.verbose = what == "verbose"
		fmt.Fprintf(s.errw, "(%s mode)\n", what)
	default:
		fmt.Fprintf(s.errw, "unknown /set %s; /? lists the commands\n", what)
	}
}

// storeSampling saves the chat's sampling settings in its conversation
// (resumed with it); before the first reply they are saved with it.
func (s *chatSession) storeSampling(ctx context.Context) {
	if s.conv == "" || s.opts.noSave {
		return
	}
	sampling := s.sampling
	if !s.opts.tempFromModel {
		sampling.Temperature = &s.opts.temp
	}
	if _, err := s.c.UpdateConversation(ctx, s.conv, ipc.ConversationUpdate{Sampling: &sampling}); err != nil {
		fmt.Fprintln(s.errw, "error: save parameters:", err)
	}
}

// currentModel is the model the chat talks to: -m's or /load's, else
// the one that answered last, else the daemon's loaded one.
func (s *chatSession) currentModel(ctx context.Context) string {
	switch {
	case s.opts.model != "":
		return s.opts.model
	case s.answered != "":
		return s.answered
	}
	if h, err := s.c.Health(ctx); err == nil && len(h.Loaded) > 0 {
		return h.Loaded[0].Name
	}
	return ""
}

// show runs /show WHAT.
func (s *chatSession) show(ctx context.Context, what string) {
	model := s.currentModel(ctx)
	if model == "" {
		fmt.Fprintln(s.errw, "(no model yet: send a message or /load MODEL)")
		return
	}
	// A model file is shown by its path: the daemon knows it by name only
	// while it is loaded.
	sh, err := s.c.Show(ctx, model)
	if err != nil {
		fmt.Fprintln(s.errw, "error:", err)
		return
	}
	switch what {
	case "info":
		printShow(s.out, sh)
	case "modelfile":
		fmt.Fprintln(s.out, strings.TrimRight(sh.Modelfile, "\n"))
	case "template":
		fmt.Fprintln(s.out, strings.TrimRight(sh.Template, "\n"))
	case "license":
		fmt.Fprintln(s.out, strings.TrimRight(sh.License, "\n"))
	case "system":
		switch {
		case s.opts.system != "":
			fmt.Fprintln(s.out, s.opts.system)
		case sh.System != "":
			fmt.Fprintln(s.out, strings.TrimRight(sh.System, "\n"))
		default:
			fmt.Fprintln(s.errw, "(no system prompt)")
		}
	case "parameters":
		if len(s.userParams) > 0 {
			fmt.Fprintln(s.out, "User defined parameters:")
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			for _, name := range s.userParams {
				fmt.Fprintf(tw, "%s\t%s\n", name, s.paramValue(name))
			}
			tw.Flush()
		}
		if p := strings.TrimSpace(sh.Parameters); p != "" {
			fmt.Fprintln(s.out, "Model defined parameters:")
			fmt.Fprintln(s.out, p)
		} else if len(s.userParams) == 0 {
			fmt.Fprintln(s.errw, "(no parameters set)")
		}
	default:
		fmt.Fprintln(s.errw, "usage: /show info | parameters | system | template | modelfile | license")
	}
}

// paramValue is the value /set parameter gave name, as Ollama writes it.
func (s *chatSession) paramValue(name string) string {
	for _, p := range chatParameters {
		if p.name != name {
			continue
		}
		if v, ok := p.get(s).([]string); ok { // stop
			b, _ := json.Marshal(v)
			return string(b)
		}
		return fmt.Sprint(p.get(s))
	}
	return ""
}

// printShow writes a model's details as ollama show does.
func printShow(w io.Writer, s ipc.OllamaShowResponse) {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "  Model")
	fmt.Fprintf(tw, "    architecture\t%s\n", s.Details.Family)
	fmt.Fprintf(tw, "    parameters\t%s\n", s.Details.ParameterSize)
	if n, ok := s.ModelInfo[s.Details.Family+".context_length"]; ok {
		fmt.Fprintf(tw, "    context length\t%v\n", n)
	}
	fmt.Fprintf(tw, "    quantization\t%s\n", s.Details.QuantizationLevel)
	fmt.Fprintln(tw, "\n  Capabilities")
	for _, c := range s.Capabilities {
		fmt.Fprintf(tw, "    %s\t\n", c)
	}
	if s.Parameters != "" {
		fmt.Fprintln(tw, "\n  Parameters")
		for _, line := range strings.Split(strings.TrimSpace(s.Parameters), "\n") {
			fmt.Fprintf(tw, "    %s\n", line)
		}
	}
	if s.System != "" {
		fmt.Fprintf(tw, "\n  System\n    %s\n", strings.ReplaceAll(strings.TrimSpace(s.System), "\n", "\n    "))
	}
	tw.Flush()
}

// load runs /load MODEL: the chat goes on with another model, in a new
// conversation (a saved one is pinned to its model).
func (s *chatSession) load(ctx context.Context, model string) {
	if isModelPath(model) {
		abs, err := modelFile(model)
		if err != nil {
			fmt.Fprintln(s.errw, "error:", err)
			return
		}
		model = abs
	} else if _, err := s.c.Show(ctx, model); err != nil {
		fmt.Fprintln(s.errw, "error:", err)
		return
	}
	s.opts.model, s.answered = model, ""
	// The new model's own PARAMETERs apply where this chat set none.
	params := modelParameters(ctx, s.c, model)
	s.opts.tempFromModel = !slices.Contains(s.userParams, "temperature") && params["temperature"]
	s.opts.maxFromModel = !slices.Contains(s.userParams, "num_predict") && params["num_predict"]
	s.newConversation()
	fmt.Fprintf(s.errw, "(talking to %s in a new conversation)\n", storedModel(model))
}

// saveModel runs /save NAME: a created model over the chat's model with
// its system prompt, the parameters /set gave and its messages, as ollama
// run's /save makes one.
func (s *chatSession) saveModel(ctx context.Context, name string) {
	model := s.currentModel(ctx)
	if model == "" {
		fmt.Fprintln(s.errw, "(no model yet: send a message or /load MODEL)")
		return
	}
	req := ipc.CreateRequest{Model: name, From: model, System: s.opts.system, Parameters: map[string]any{}, Messages: s.history}
	for _, p := range chatParameters {
		if slices.Contains(s.userParams, p.name) {
			req.Parameters[p.name] = p.get(s)
		}
	}
	if err := s.c.Create(ctx, req); err != nil {
		fmt.Fprintln(s.errw, "error:", err)
		return
	}
	fmt.Fprintf(s.errw, "(created new model '%s')\n", name)
}

// readMessage reads the rest of a message that began with `"""` on first
// (its text after the quotes): lines up to the one that ends with `"""`.
// ok is false when the input ended first.
func readMessage(first string, next func() (string, bool)) (string, bool) {
	if body, ok := strings.CutSuffix(first, `"""`); ok {
		return body, true // """text""" on one line
	}
	var lines []string
	if first != "" {
		lines = append(lines, first)
	}
	for {
		line, ok := next()
		if !ok {
			return strings.Join(lines, "\n"), false
		}
		if body, ok := strings.CutSuffix(strings.TrimRight(line, " \t\r"), `"""`); ok {
			if strings.TrimSpace(body) != "" { // not """ on a line of its own
				lines = append(lines, body)
			}
			return strings.Join(lines, "\n"), true
		}
		lines = append(lines, line)
	}
}

// printVerbose writes a reply's figures as ollama run --verbose does.
func printVerbose(w io.Writer, st *ipc.ReplyStats, total time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "total duration:\t%v\n", total.Round(time.Microsecond))
	fmt.Fprintf(tw, "prompt eval count:\t%d token(s) (%d cached)\n", st.PromptTokens, st.CachedTokens)
	fmt.Fprintf(tw, "time to first token:\t%.1f ms\n", st.TTFTMillis)
	fmt.Fprintf(tw, "eval count:\t%d token(s)\n", st.CompletionTokens)
	if st.TokensPerSecond > 0 {
		fmt.Fprintf(tw, "eval rate:\t%.2f tokens/s\n", st.TokensPerSecond)
	}
	tw.Flush()
}

// ollamaRunPrompt is the prompt of `run MODEL [PROMPT...]`, as ollama run
// reads it: input piped in (at most maxChatLine bytes), then the words,
// joined by a space. interactive is true when there is neither and the
// input is a terminal: the chat REPL's turn.
func ollamaRunPrompt(in io.Reader, words []string) (prompt string, interactive bool, err error) {
	parts := []string{}
	if !isTerminal(in) && in != nil {
		b, err := io.ReadAll(io.LimitReader(in, maxChatLine+1))
		if err != nil {
			return "", false, fmt.Errorf("read the input: %w", err)
		}
		if len(b) > maxChatLine {
			return "", false, fmt.Errorf("the input is longer than %d MiB, the most run reads as a prompt", maxChatLine>>20)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			parts = append(parts, t)
		}
	}
	if len(words) > 0 {
		parts = append(parts, strings.Join(words, " "))
	}
	if len(parts) == 0 {
		if isTerminal(in) {
			return "", true, nil
		}
		return "", false, errors.New("run MODEL: no prompt: give it after the model, or pipe it in")
	}
	return strings.Join(parts, " "), false, nil
}

// runChatREPL is `run MODEL` at a terminal: ruvllm chat -m MODEL, with
// run's --system, --temp and -n.
func runChatREPL(cmd *cobra.Command, model string) error {
	args, err := chatREPLArgs(cmd.Flags(), model)
	if err != nil {
		return err
	}
	chat := newChatCmd()
	chat.SetArgs(args)
	chat.SetIn(cmd.InOrStdin())
	chat.SetOut(cmd.OutOrStdout())
	chat.SetErr(cmd.ErrOrStderr())
	return chat.ExecuteContext(cmd.Context())
}

// chatREPLArgs are the chat arguments of `run MODEL` at a terminal: the
// model and the run flags the chat takes (--system, --temp, -n); any other
// run flag given is refused by name, where it was dropped without a word.
func chatREPLArgs(f *pflag.FlagSet, model string) ([]string, error) {
	args := []string{"-m", model}
	var err error
	f.Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "system", "temp":
			args = append(args, "--"+fl.Name, fl.Value.String())
		case "n":
			args = append(args, "-n", fl.Value.String())
		case "remote", "chat": // what run MODEL does anyway
		default:
			if err == nil {
				err = fmt.Errorf("--%s applies to run MODEL PROMPT; the chat run MODEL opens takes --system, --temp and -n (/set parameter sets the others)", fl.Name)
			}
		}
	})
	return args, err
}
