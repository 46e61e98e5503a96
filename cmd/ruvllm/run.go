package main

import (
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
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/kldiv"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/internal/backends"
)

// genFlags are the sampling and length flags shared by run and bench.
type genFlags struct {
	prompt    string
	maxTokens int
	params    sample.Params
	seed      int64
	stops     []string
	// predictionFile holds run's predicted output (--prediction).
	predictionFile string
	// speculation is --spec as run --remote sends it (empty: the
	// daemon's setting).
	speculation string
}

// checkRemoteFlags refuses, for run --remote, a flag that was set and
// configures the engine of an in-process run, or a sampling field the
// daemon's OpenAI endpoints do not take: with --remote such flags were
// accepted and silently not applied.
func checkRemoteFlags(f *pflag.FlagSet) error {
	for _, name := range []string{"threads", "ctx", "draft", "spec-fixed", "kv-type", "kv-hot-window", "typical-p", "repeat-last-n"} {
		if f.Changed(name) {
			return fmt.Errorf("--%s applies to in-process runs only: run --remote does not send it (the daemon's flags decide)", name)
		}
	}
	return nil
}

// maxSpecFixed bounds --spec-fixed: a step verifies at most this many
// draft tokens a sequence (spec.Options.MaxDraft's default).
const maxSpecFixed = 7

// maxPredictionFile bounds --prediction's file: a prediction is drafted
// from its first 8192 tokens at most.
const maxPredictionFile = 1 << 20

// prediction reads --prediction's file ("" without one).
func (g *genFlags) prediction() (string, error) {
	if g.predictionFile == "" {
		return "", nil
	}
	f, err := os.Open(g.predictionFile)
	if err != nil {
		return "", fmt.Errorf("--prediction: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPredictionFile+1))
	if err != nil {
		return "", fmt.Errorf("--prediction: %w", err)
	}
	if len(b) > maxPredictionFile {
		return "", fmt.Errorf("--prediction: %s is larger than %d bytes", g.predictionFile, maxPredictionFile)
	}
	return string(b), nil
}

// sampling is the sampling parameters the flags ask for, the seed
// included (-1: a random one, as llama.cpp's --seed).
func (g *genFlags) sampling() sample.Params {
	p := g.params
	p.SetSeed(g.seed)
	return p
}

// check refuses a sampling flag that is not a finite number or is out of
// its range: in process,
// --temp NaN sampled greedily and --min-p Inf generated nothing, without a
// word (the daemon refuses them with --remote).
func (g *genFlags) check() error {
	p := g.params
	for _, f := range []struct {
		name string
		v    float32
	}{
		{"temp", p.Temperature}, {"top-p", p.TopP}, {"min-p", p.MinP}, {"typical-p", p.TypicalP},
		{"repeat-penalty", p.RepeatPenalty}, {"presence-penalty", p.PresencePenalty}, {"frequency-penalty", p.FrequencyPenalty},
	} {
		if v := float64(f.v); math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("--%s %v: want a finite number", f.name, f.v)
		}
	}
	// Out of range, as the daemon refuses them with --remote: --min-p
	// above 1 left no token to draw, and the run printed nothing, ending
	// "stop"; a negative repeat penalty turned the penalty into a bonus.
	for _, f := range []struct {
		name   string
		v      float32
		lo, hi float32
	}{
		{"top-p", p.TopP, 0, 1}, {"min-p", p.MinP, 0, 1}, {"typical-p", p.TypicalP, 0, 1},
		{"repeat-penalty", p.RepeatPenalty, 0, math.MaxFloat32},
	} {
		if f.v < f.lo || f.v > f.hi {
			if f.hi == math.MaxFloat32 {
				return fmt.Errorf("--%s %v: want at least %g", f.name, f.v, f.lo)
			}
			return fmt.Errorf("--%s %v: want %g to %g", f.name, f.v, f.lo, f.hi)
		}
	}
	if p.TopK < 0 {
		return fmt.Errorf("--top-k %d: want 0 (off) or more", p.TopK)
	}
	if p.RepeatLastN < -1 {
		return fmt.Errorf("--repeat-last-n %d: want -1 (all), 0 (the default) or more", p.RepeatLastN)
	}
	return nil
}

func (g *genFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&g.prompt, "prompt", "p", "", "prompt text")
	f.IntVarP(&g.maxTokens, "n", "n", 128, "maximum tokens to generate (0: until the context is full)")
	f.Float32Var(&g.params.Temperature, "temp", 0.8, "temperature (0: greedy)")
	f.IntVar(&g.params.TopK, "top-k", 40, "top-k (0: off)")
	f.Float32Var(&g.params.TopP, "top-p", 0.95, "top-p (1: off)")
	f.Float32Var(&g.params.MinP, "min-p", 0.05, "min-p (0: off)")
	f.Float32Var(&g.params.TypicalP, "typical-p", 1, "typical-p (1: off)")
	f.Float32Var(&g.params.RepeatPenalty, "repeat-penalty", 1, "repetition penalty (1: off)")
	f.Float32Var(&g.params.PresencePenalty, "presence-penalty", 0, "presence penalty")
	f.Float32Var(&g.params.FrequencyPenalty, "frequency-penalty", 0, "frequency penalty")
	f.IntVar(&g.params.RepeatLastN, "repeat-last-n", 64, "penalty window in tokens (-1: all)")
	f.Int64Var(&g.seed, "seed", -1, "random seed (-1: a random one; 0 and up give the same tokens on every run)")
	f.StringArrayVar(&g.stops, "stop", nil, "stop string (repeatable)")
}

func newRunCmd() *cobra.Command {
	var (
		g       genFlags
		path    string
		asChat  bool
		system  string
		asJSON  bool
		threads int
		ctxLen  int
		remote  bool
		backend string
		gflags  grammarFlags
		draft   string
		specs   string
		// specFixed verifies drafts at a set length (spec.Options.Fixed).
		specFixed int
		kvf       kvFlags
		exact     bool
		lbuild    string
		amx       cpu.AMXMode
	)
	cmd := &cobra.Command{
		Use:   "run [--remote] -m MODEL -p TEXT [--json-schema FILE | --grammar FILE | --regex RE | --any-json] | run MODEL [PROMPT]",
		Short: "Generate text from a GGUF model in this process, or chat with a model as ollama run does",
		Long: "run loads the model itself (no daemon), streams the generated text to stdout and prints timings\n" +
			"to stderr. With --json it prints one object {tokens, text, timings} instead.\n" +
			"As ollama run, `run MODEL PROMPT...` answers the prompt through the daemon (started if needed) as\n" +
			"a chat, with the model's chat template and until it ends its reply (-n limits it); input piped in\n" +
			"comes before the prompt's words. `run MODEL` alone opens the chat REPL (ruvllm chat -m MODEL).\n" +
			"--json-schema, --grammar (GBNF), --regex and --any-json hold the output to a constraint: only\n" +
			"tokens it allows are sampled, and generation stops once the text is complete.",
		// The prompt comes with -p, or as ollama run takes it (run MODEL
		// [PROMPT...]): a word after the flags was ignored, and the model
		// generated from an empty prompt.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (cmd.Flags().Changed("model") || cmd.Flags().Changed("prompt")) {
				name, usage := commandPath(cmd)
				return fmt.Errorf("%s: unexpected argument %q: give the model and prompt as words (run MODEL [PROMPT]) or with -m and -p, not both (usage: %s)", name, args[0], usage)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				// ollama run MODEL [PROMPT...]: through the daemon, as a
				// chat; without a prompt, the chat REPL.
				prompt, interactive, err := ollamaRunPrompt(cmd.InOrStdin(), args[1:])
				if err != nil {
					return err
				}
				if interactive {
					return runChatREPL(cmd, args[0])
				}
				remote, asChat, path, g.prompt = true, true, args[0], prompt
				if isModelPath(path) {
					if path, err = modelFile(path); err != nil {
						return err
					}
				}
				if !cmd.Flags().Changed("n") {
					g.maxTokens = 0 // as ollama run: until the model ends its reply
				}
			}
			if err := g.check(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			constraint, err := gflags.spec()
			if err != nil {
				return err
			}
			if system != "" && !asChat {
				// The raw prompt has no place for it: it was dropped without a word.
				return errors.New("--system needs --chat (a system prompt goes through the model's chat template)")
			}
			if remote {
				if constraint != nil {
					return errors.New("--json-schema, --grammar, --regex and --any-json apply to in-process runs for now")
				}
				if cmd.Flags().Changed("backend") || cmd.Flags().Changed("exact") || cmd.Flags().Changed("llama-build") || cmd.Flags().Changed("amx") {
					return errors.New("--backend, --exact, --llama-build and --amx apply to in-process runs; with --remote the daemon's flags decide")
				}
				if err := checkRemoteFlags(cmd.Flags()); err != nil {
					return err
				}
				if cmd.Flags().Changed("spec") {
					// The request's speculation field: the daemon narrows
					// what it offers to these kinds, or turns it off.
					g.speculation = specs
				}
				return runRemote(ctx, cmd, g, path, asChat, system, asJSON)
			}
			if path == "" {
				return errors.New("missing -m FILE.gguf")
			}
			newBackend, err := backends.Factory(backend, threads)
			if err != nil {
				return err
			}
			kinds, err := parseSpeculation(specs)
			if err != nil {
				return err
			}
			lb, err := backends.ParseBuild(lbuild)
			if err != nil {
				return err
			}
			// Above maxSpecFixed it was cut to maxSpecFixed without a word.
			if specFixed < 0 || specFixed > maxSpecFixed {
				return fmt.Errorf("--spec-fixed %d: want 0 (adaptive) up to %d", specFixed, maxSpecFixed)
			}
			lo := llm.Options{Threads: threads, ContextLength: ctxLen, NewBackend: newBackend, Speculate: kinds, Draft: draft, DraftDir: draftDir(), Exact: exact, LlamaBuild: lb, AMX: amx,
				SpecControl: spec.Options{Fixed: specFixed}}
			if err := kvf.apply(&lo); err != nil {
				return err
			}
			loadStart := time.Now()
			m, err := llm.Load(ctx, path, lo)
			if err != nil {
				return err
			}
			defer m.Close()
			load := time.Since(loadStart)
			req := llm.Request{MaxTokens: g.maxTokens, Sampling: g.sampling(), Stop: g.stops}
			if req.Prediction, err = g.prediction(); err != nil {
				return err
			}
			if constraint != nil {
				if req.Grammar, err = m.Grammar(*constraint); err != nil {
					return err
				}
			}
			if asChat {
				if system != "" {
					req.Messages = append(req.Messages, chat.Message{Role: "system", Content: system})
				}
				req.Messages = append(req.Messages, chat.Message{Role: "user", Content: g.prompt})
			} else {
				req.Prompt = g.prompt
			}
			return runLocal(ctx, cmd, m, req, load, asJSON)
		},
	}
	g.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&path, "model", "m", "", "GGUF model file (with --remote: a model name the daemon knows)")
	f.BoolVar(&remote, "remote", false, "generate through the daemon (started if needed) instead of in this process; sampling flags not given are left to a created model's PARAMETERs")
	f.BoolVar(&asChat, "chat", false, "wrap the prompt in the model's chat template")
	f.StringVar(&system, "system", "", "system prompt (with --chat)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object instead of streaming")
	f.IntVarP(&threads, "threads", "t", 0, "threads (0: all cores)")
	f.IntVar(&ctxLen, "ctx", 0, "context length (0: the model's, at most 4096)")
	f.StringVar(&draft, "draft", "", "draft model for speculative decoding: FILE (same vocabulary, e.g. a Q4_0 of the model), or self:TYPE (the model converted to TYPE once, kept in the user cache)")
	f.StringVar(&specs, "spec", "all", "speculative decoding: all, off, or kinds joined by + (lookup, draft, tree)")
	f.IntVar(&specFixed, "spec-fixed", 0, fmt.Sprintf("verify every draft token up to N a step, whatever the adaptive control would choose (at most %d; 0: adaptive), for measuring and tests", maxSpecFixed))
	f.StringVar(&g.predictionFile, "prediction", "", "the output expected, or most of it, in `FILE` (the file being edited, a reply regenerated): drafted from by prompt lookup; the output is the same, only faster")
	kvf.register(f)
	backends.Flag(f, &backend)
	gflags.register(f)
	backends.ExactFlag(f, &exact)
	backends.BuildFlag(f, &lbuild)
	backends.AMXFlag(f, &amx)
	return cmd
}

// grammarFlags are the constraint flags of run.
type grammarFlags struct {
	schemaFile, gbnfFile, regex string
	anyJSON                     bool
}

func (g *grammarFlags) register(f *pflag.FlagSet) {
	f.StringVar(&g.schemaFile, "json-schema", "", "hold the output to the JSON Schema in `FILE` (compact JSON, properties in schema order)")
	f.StringVar(&g.gbnfFile, "grammar", "", "hold the output to the GBNF grammar (llama.cpp's format) in `FILE`")
	f.StringVar(&g.regex, "regex", "", "hold the whole output to an ECMAScript regular expression")
	f.BoolVar(&g.anyJSON, "any-json", false, "hold the output to one JSON value")
}

// Limits of readInputFile: a grammar or schema is text a person wrote; a
// text to score is at most a corpus.
const (
	maxGrammarFile = 16 << 20
	maxTextFile    = 4 << 30
)

// readInputFile reads the file a flag names, a pipe included, but refuses
// a character device and stops past limit bytes: --grammar /dev/zero or
// perplexity -f /dev/urandom read forever, taking gigabytes of memory.
func readInputFile(flag, path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		// named by its flag, as the read errors are: perplexity -f or
		// run --grammar with a missing file said only "open NAME: ..."
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.Mode()&os.ModeCharDevice != 0 {
		return nil, fmt.Errorf("%s %s: a character device, not a file", flag, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s %s: larger than %d MiB", flag, path, limit>>20)
	}
	return b, nil
}

// spec returns the constraint the flags ask for (nil: none).
func (g *grammarFlags) spec() (*grammar.Spec, error) {
	var specs []grammar.Spec
	if g.schemaFile != "" {
		b, err := readInputFile("--json-schema", g.schemaFile, maxGrammarFile)
		if err != nil {
			return nil, err
		}
		specs = append(specs, grammar.Spec{Kind: grammar.KindJSONSchema, Source: string(b)})
	}
	if g.gbnfFile != "" {
		b, err := readInputFile("--grammar", g.gbnfFile, maxGrammarFile)
		if err != nil {
			return nil, err
		}
		specs = append(specs, grammar.Spec{Kind: grammar.KindGBNF, Source: string(b)})
	}
	if g.regex != "" {
		specs = append(specs, grammar.Spec{Kind: grammar.KindRegex, Source: g.regex})
	}
	if g.anyJSON {
		specs = append(specs, grammar.Spec{Kind: grammar.KindJSON})
	}
	switch len(specs) {
	case 0:
		return nil, nil
	case 1:
		return &specs[0], nil
	}
	return nil, errors.New("give at most one of --json-schema, --grammar, --regex and --any-json")
}

type runTimings struct {
	LoadMS       float64 `json:"load_ms"`
	PromptTokens int     `json:"prompt_tokens"`
	PromptMS     float64 `json:"prompt_ms"`
	PromptTPS    float64 `json:"prompt_tokens_per_second"`
	GenTokens    int     `json:"generated_tokens"`
	GenMS        float64 `json:"generation_ms"`
	GenTPS       float64 `json:"generation_tokens_per_second"`
	TTFTMS       float64 `json:"ttft_ms"`
	FinishReason string  `json:"finish_reason"`
	ForcedTokens int     `json:"forced_tokens,omitempty"`
	// Speculative decoding: draft tokens verified, accepted, and steps.
	DraftTokens   int `json:"draft_tokens,omitempty"`
	DraftAccepted int `json:"draft_accepted,omitempty"`
	Verifications int `json:"verifications,omitempty"`
	// Of those, the tokens drafted from --prediction and accepted.
	PredictionTokens   int `json:"prediction_tokens,omitempty"`
	PredictionAccepted int `json:"prediction_accepted,omitempty"`
}

func runLocal(ctx context.Context, cmd *cobra.Command, m *llm.Model, req llm.Request, load time.Duration, asJSON bool) error {
	out := cmd.OutOrStdout()
	var tokens []int32
	var text []byte
	res, err := m.Generate(ctx, req, func(t llm.Token) error {
		if t.ID >= 0 {
			tokens = append(tokens, t.ID)
		}
		text = append(text, t.Text...)
		if !asJSON {
			_, err := fmt.Fprint(out, t.Text)
			return err
		}
		return nil
	})
	// Ctrl-C ends the generation: what came so far and the timings are
	// printed, marked "interrupted" (not "length"), and the exit status
	// says it did not finish.
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return err
	}
	tm := runTimings{
		LoadMS:       ms(load),
		PromptTokens: res.PromptTokens,
		PromptMS:     ms(res.Timings.PromptEval),
		GenTokens:    res.CompletionTokens,
		GenMS:        ms(res.Timings.Eval),
		TTFTMS:       ms(res.Timings.TTFT),
		FinishReason: string(res.FinishReason),
		ForcedTokens: res.ForcedTokens,
		DraftTokens:  res.Speculation.Drafted, DraftAccepted: res.Speculation.Accepted, Verifications: res.Speculation.Verifications,
		PredictionTokens: res.Speculation.PredictionDrafted, PredictionAccepted: res.Speculation.PredictionAccepted,
	}
	var status error
	if interrupted {
		tm.FinishReason, status = "interrupted", errors.New("interrupted")
	}
	if res.Timings.PromptEval > 0 {
		tm.PromptTPS = float64(res.PromptTokens) / res.Timings.PromptEval.Seconds()
	}
	if res.CompletionTokens > 1 && res.Timings.Eval > 0 {
		tm.GenTPS = float64(res.CompletionTokens-1) / res.Timings.Eval.Seconds()
	}
	if asJSON {
		if tokens == nil {
			tokens = []int32{}
		}
		if err := json.NewEncoder(out).Encode(map[string]any{"tokens": tokens, "text": string(text), "timings": tm}); err != nil {
			return err
		}
		return status
	}
	fmt.Fprintln(out)
	specNote := ""
	if s := res.Speculation; s.Verifications > 0 {
		specNote = fmt.Sprintf(" | speculation: %d of %d draft tokens accepted, %.2f tokens per verification",
			s.Accepted, s.Drafted, s.TokensPerVerification())
		if s.PredictionDrafted > 0 {
			specNote += fmt.Sprintf(" (%d of %d from the prediction)", s.PredictionAccepted, s.PredictionDrafted)
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "load %.0f ms | prompt %d tokens in %.1f ms (%.1f tok/s) | TTFT %.1f ms | generated %d tokens (%.1f tok/s) | %s%s\n",
		tm.LoadMS, tm.PromptTokens, tm.PromptMS, tm.PromptTPS, tm.TTFTMS, tm.GenTokens, tm.GenTPS, tm.FinishReason, specNote)
	return status
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func newPerplexityCmd() *cobra.Command {
	var (
		path, file string
		ctxLen     int
		threads    int
		backend    string
		kvf        kvFlags
		exact      bool
		lbuild     string
		amx        cpu.AMXMode
		kldBase    string
		kldScore   bool
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "perplexity -m FILE.gguf (-f TEXTFILE | --kl-divergence-base FILE --kl-divergence)",
		Short: "Compute perplexity over a text file, like llama-perplexity, or the KL divergence from a base model",
		Long: "perplexity scores a text file as llama-perplexity does (chunks of --ctx tokens, the second half\n" +
			"of each scored). With --kl-divergence-base FILE it also saves every scored position's\n" +
			"log-probabilities there, in llama-perplexity's format; with --kl-divergence as well it reads\n" +
			"such a file instead (saved by llama-perplexity or ruvllm, no -f needed) and compares this\n" +
			"model with the base on the file's tokens: mean KL divergence, same top token, both perplexities.\n" +
			"--exact here also follows llama.cpp's attention path by batch size (tiled float32 from 64 tokens),\n" +
			"so that its logits equal llama-perplexity's; --amx off matches a llama-perplexity without AMX\n" +
			"(built without it, or run with --no-repack) on a CPU that has AMX-INT8.",
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" || (file == "" && !kldScore) {
				return errors.New("need -m FILE.gguf and -f TEXTFILE (or --kl-divergence-base FILE --kl-divergence)")
			}
			if kldScore && kldBase == "" {
				return errors.New("--kl-divergence needs --kl-divergence-base FILE")
			}
			if kldBase != "" && !kldScore {
				if err := checkKLDBaseTarget(kldBase, path, file); err != nil {
					return err
				}
			}
			var text []byte
			if !kldScore {
				var err error
				if text, err = readInputFile("-f", file, maxTextFile); err != nil {
					return err
				}
			}
			newBackend, err := backends.Factory(backend, threads)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			lb, err := backends.ParseBuild(lbuild)
			if err != nil {
				return err
			}
			lo := llm.Options{Threads: threads, ContextLength: max(ctxLen, 0), NewBackend: newBackend, Sequences: 1,
				Exact: exact, LlamaBatching: exact, LlamaBuild: lb, AMX: amx}
			if err := kvf.apply(&lo); err != nil {
				return err
			}
			m, err := llm.Load(ctx, path, lo)
			if err != nil {
				return err
			}
			defer m.Close()
			start := time.Now()
			if kldScore {
				return scoreKLD(ctx, cmd, m, kldBase, asJSON, start)
			}
			progress := func(c int, ppl float64) { fmt.Fprintf(cmd.ErrOrStderr(), "[%d]%.4f ", c+1, ppl) }
			var res llm.PerplexityResult
			if kldBase != "" {
				// Written beside it and renamed when complete: a run that
				// fails (a text too short, Ctrl-C) keeps the base file
				// saved before instead of truncating it.
				out, err := os.CreateTemp(filepath.Dir(kldBase), "."+filepath.Base(kldBase)+".tmp*")
				if err != nil {
					return err
				}
				if err = out.Chmod(0o644); err == nil { // as os.Create made it
					res, err = m.SaveLogProbs(ctx, string(text), ctxLen, out, progress)
				}
				if cerr := out.Close(); err == nil {
					err = cerr
				}
				if err == nil {
					err = os.Rename(out.Name(), kldBase)
				}
				if err != nil {
					os.Remove(out.Name())
					return err
				}
			} else if res, err = m.Perplexity(ctx, string(text), ctxLen, progress); err != nil {
				return err
			}
			fmt.Fprintln(cmd.ErrOrStderr())
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"perplexity": res.Perplexity, "chunks": res.Chunks, "ctx": res.Ctx, "scored": res.Scored, "exact": exact})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "perplexity: %.4f (%d chunks of %d tokens, %d scored, %.1f s)\n",
				res.Perplexity, res.Chunks, res.Ctx, res.Scored, time.Since(start).Seconds())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&path, "model", "m", "", "GGUF model file")
	f.StringVarP(&file, "file", "f", "", "text file to score")
	f.IntVar(&ctxLen, "ctx", 512, "chunk size in tokens (with --kl-divergence: the model's context, at least the file's chunk size)")
	f.IntVarP(&threads, "threads", "t", 0, "threads (0: all cores)")
	kvf.register(f)
	f.StringVar(&kldBase, "kl-divergence-base", "", "save the scored log-probabilities to `FILE` (with --kl-divergence: read them from it)")
	f.BoolVar(&kldScore, "kl-divergence", false, "compare with the base log-probabilities of --kl-divergence-base")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	backends.Flag(f, &backend)
	backends.ExactFlag(f, &exact)
	backends.BuildFlag(f, &lbuild)
	backends.AMXFlag(f, &amx)
	return cmd
}

// checkKLDBaseTarget refuses a --kl-divergence-base FILE to save to that
// would replace something else than log-probabilities: a directory (found
// only by the rename, after the whole run), the model or the text being
// scored, or any GGUF file (the base model, named where its log-probabilities
// go): they were replaced without a word.
func checkKLDBaseTarget(base, model, text string) error {
	st, err := os.Stat(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--kl-divergence-base: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("--kl-divergence-base %s: it is %s; name a new or regular file", base, gguf.FileKind(st.Mode()))
	}
	for _, in := range []struct{ flag, path string }{{"-m", model}, {"-f", text}} {
		if ist, err := os.Stat(in.path); err == nil && os.SameFile(st, ist) {
			return fmt.Errorf("--kl-divergence-base %s is the file of %s: it would be replaced by the log-probabilities", base, in.flag)
		}
	}
	f, err := os.Open(base)
	if err != nil {
		return fmt.Errorf("--kl-divergence-base: %w", err)
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err == nil && string(magic[:]) == "GGUF" {
		return fmt.Errorf("--kl-divergence-base %s is a GGUF model: it would be replaced by the log-probabilities (to compare with a base model, save its log-probabilities to a new file first)", base)
	}
	return nil
}

// scoreKLD prints the comparison of m with the base log-probabilities in
// the file base, in the terms llama-perplexity --kl-divergence prints.
func scoreKLD(ctx context.Context, cmd *cobra.Command, m *llm.Model, base string, asJSON bool, start time.Time) error {
	in, err := os.Open(base)
	if err != nil {
		return fmt.Errorf("--kl-divergence-base: %w", err)
	}
	defer in.Close()
	s, err := m.KLDivergence(ctx, in, func(c int, s kldiv.Summary) {
		fmt.Fprintf(cmd.ErrOrStderr(), "[%d] KLD %.6f same top %.2f%% ", c+1, s.MeanKLD, 100*s.SameTop)
	})
	fmt.Fprintln(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(s)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "positions:             %d (%.1f s)\n", s.Positions, time.Since(start).Seconds())
	fmt.Fprintf(w, "Mean PPL(Q):           %.6f\n", s.PPL)
	fmt.Fprintf(w, "Mean PPL(base):        %.6f\n", s.BasePPL)
	fmt.Fprintf(w, "Mean PPL(Q)/PPL(base): %.6f\n", s.PPLRatio)
	fmt.Fprintf(w, "Mean KLD:              %.6f ± %.6f (max %.6f)\n", s.MeanKLD, s.KLDUncertainty, s.MaxKLD)
	fmt.Fprintf(w, "Same top p:            %.3f %%\n", 100*s.SameTop)
	fmt.Fprintf(w, "RMS Δp:                %.3f %% (max %.3f %%)\n", 100*s.RMSPDiff, 100*s.MaxPDiff)
	return nil
}

// draftDir is where drafts made from the model itself (--draft self:TYPE)
// are kept: the user cache's ruvllm/drafts, which the daemon shares ("" if
// the system names no cache directory).
func draftDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "ruvllm", "drafts")
}
