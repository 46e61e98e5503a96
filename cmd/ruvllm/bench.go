package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/spec"
	"github.com/ruvllm/ruvllm/internal/backends"
	"github.com/ruvllm/ruvllm/internal/membw"
	"github.com/ruvllm/ruvllm/internal/servebench"
	"github.com/ruvllm/ruvllm/ipc"
)

func newBenchCmd() *cobra.Command {
	var (
		path    string
		o       llm.BenchOptions
		threads int
		batch   int
		asJSON  bool
		membwOn bool
		backend string
		profile string
		draft   string
		specs   []string
		kvo     kvBenchOptions
		exact   bool
		amx     cpu.AMXMode
		ctxLen  int
	)
	cmd := &cobra.Command{
		Use:   "bench [-m FILE.gguf] [-p 512] [-n 128] [-d DEPTH] [-t THREADS] [-r REPS] [--membw] [--json]",
		Short: "Measure prompt processing and generation speed, like llama-bench",
		Long: "bench loads a model and measures prompt processing (ppN) and generation (tgN) in tokens\n" +
			"per second, mean ± stddev over the repetitions, plus peak resident memory and KV cache size.\n" +
			"-d runs both after a context of that many tokens (\"pp512 @ d4096\", as llama-bench -d), read\n" +
			"from the prefix cache in whole KV blocks, so a multiple of 16; the KV cache is sized for the\n" +
			"depth and the tests (or --ctx, for the memory of a longer context).\n" +
			"--membw also measures memory bandwidth with the same threads (a read-only stream through\n" +
			"buffers far beyond the caches, loaded as the decode kernels load weights; and a copy) and, with\n" +
			"a model, the decode speed the read bandwidth allows (weight bytes read per token ÷ bandwidth).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" && !membwOn {
				return errors.New("missing -m FILE.gguf")
			}
			// Negative token counts were taken as 0 (the test skipped).
			if o.PromptTokens < 0 || o.GenTokens < 0 {
				return fmt.Errorf("-p %d -n %d: token counts must be at least 0 (0 skips the test)", o.PromptTokens, o.GenTokens)
			}
			// A batch under one token ran as the default 256, without a
			// word.
			if batch < 1 {
				return fmt.Errorf("-b %d: a batch holds at least 1 token", batch)
			}
			// A prompt under one KV block panicked in the prefix capacity.
			if len(kvo.types) > 0 && kvo.prompt < 16 {
				return fmt.Errorf("--kv-prompt %d: a cached prefix holds at least 16 tokens (one KV block)", kvo.prompt)
			}
			// The depth comes from the prefix cache, which holds whole KV
			// blocks: -d 17 timed 33 prompt tokens at depth 16 as "pp32 @
			// d17".
			if o.Depth < 0 || o.Depth%16 != 0 {
				return fmt.Errorf("-d %d: the context comes from the prefix cache in whole KV blocks of 16 tokens; want 0 (none) or a multiple of 16", o.Depth)
			}
			// The parallel test runs only without a depth and with tokens to
			// generate, and only for 2 sequences or more: otherwise
			// --parallel was accepted and no tgNxP line came.
			switch {
			case o.Parallel == 1:
				return errors.New("--parallel 1: want 0 (no parallel test) or at least 2 sequences")
			case o.Parallel > 1 && o.Depth > 0:
				return fmt.Errorf("--parallel %d with -d %d: the parallel test runs without a depth; give one or the other", o.Parallel, o.Depth)
			case o.Parallel > 1 && o.GenTokens == 0:
				return fmt.Errorf("--parallel %d with -n 0: the parallel test generates -n tokens in each sequence", o.Parallel)
			}
			if err := checkBenchFlagsApply(cmd.Flags(), kvo, specs); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if profile != "" {
				done, err := startCPUProfile(profile)
				if err != nil {
					return err
				}
				defer done()
			}
			out := benchOutput{}
			// The model runs first: the bandwidth buffers would otherwise
			// count in its peak RSS.
			if path != "" {
				newBackend, err := backends.Factory(backend, threads)
				if err != nil {
					return err
				}
				// -p 0 -n 0 alone reports the model's memory (--ctx); with
				// --spec or --kv-types it leaves the run to them.
				if o.PromptTokens > 0 || o.GenTokens > 0 || len(specs) == 0 && len(kvo.types) == 0 {
					rep, err := runBench(ctx, path, llm.Options{Threads: threads, NewBackend: newBackend, BatchSize: batch, Exact: exact, AMX: amx, ContextLength: ctxLen}, o)
					if err != nil {
						return err
					}
					out.BenchReport = rep
				}
				if len(specs) > 0 {
					before := loadAverage()
					figs, err := runSpecBench(ctx, path, draft, specs, llm.Options{Threads: threads, NewBackend: newBackend, Exact: exact, AMX: amx}, o)
					if err != nil {
						return err
					}
					out.Speculation = figs
					if before != "" {
						out.SpecLoad = before + " → " + loadAverage()
					}
				}
				if len(kvo.types) > 0 {
					figs, err := runKVBench(ctx, cmd.ErrOrStderr(), path, llm.Options{Threads: threads, NewBackend: newBackend, BatchSize: batch, Exact: exact, AMX: amx}, kvo)
					if err != nil {
						return err
					}
					out.KV = figs
				}
			}
			if membwOn {
				bwThreads := threads
				if bwThreads <= 0 {
					bwThreads = runtime.NumCPU()
				}
				r, err := membw.Measure(ctx, membw.Options{Threads: bwThreads})
				if err != nil {
					return err
				}
				out.MemBW = &r
				if rep := out.BenchReport; rep != nil && rep.WeightBytesPerToken > 0 {
					out.DecodeBoundTPS = r.ReadBytesPerSecond / float64(rep.WeightBytesPerToken)
				}
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			printBench(cmd.OutOrStdout(), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&path, "model", "m", "", "GGUF model file")
	f.IntVarP(&o.PromptTokens, "p", "p", 512, "prompt tokens (pp test; 0 skips)")
	f.IntVarP(&o.GenTokens, "n", "n", 128, "generated tokens (tg test; 0 skips)")
	f.IntVarP(&o.Reps, "reps", "r", 5, "repetitions")
	f.BoolVar(&o.NoWarmup, "no-warmup", false, "skip the untimed run before each test's repetitions")
	f.IntVarP(&o.Depth, "depth", "d", 0, "run the tests after a context of this many tokens, a multiple of 16 (like llama-bench -d)")
	f.IntVar(&ctxLen, "ctx", 0, "size the KV cache for this context, at least depth + the tests' tokens + 2 (0: that + 14); with -p 0 -n 0 it reports that context's memory")
	f.IntVar(&o.Parallel, "parallel", 0, "also generate N sequences at once and report their aggregate tokens per second (tgNxP)")
	f.IntVarP(&threads, "threads", "t", 0, "threads (0: all cores)")
	f.IntVarP(&batch, "batch-size", "b", 256, "prompt tokens per forward pass (like llama-bench's -ub)")
	f.BoolVar(&membwOn, "membw", false, "also measure memory read (and copy) bandwidth and the decode bound it sets")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)")
	f.StringVar(&draft, "draft", "", "draft model (same vocabulary) for the draft speculation kinds: FILE, or self:TYPE (the model converted to TYPE, kept in the user cache)")
	f.StringSliceVar(&specs, "spec", nil, "also measure decode on the speculation workloads with these kinds, e.g. lookup,lookup+tree,draft,draft+tree,all; KINDS+prediction (or prediction: lookup+prediction) also sends each workload's reply with two words changed as its predicted output (each against none, alternated; -n tokens per workload)")
	f.StringSliceVar(&kvo.types, "kv-types", nil, "also report KV bytes per token, cached-prefix capacity and (with --ppl-file) perplexity for these KV types, e.g. f16,q8_0,q4_0")
	f.IntVar(&kvo.window, "kv-hot-window", 256, "hot window of the quantized KV types (--kv-types)")
	f.IntVar(&kvo.ctx, "kv-ctx", 2048, "context of the KV report: sequence length for bytes per token, chunk size for perplexity")
	f.IntVar(&kvo.prompt, "kv-prompt", 512, "tokens per cached prefix when measuring how many the KV budget holds")
	f.StringVar(&kvo.pplFile, "ppl-file", "", "text file for perplexity per KV type (--kv-types)")
	backends.Flag(f, &backend)
	backends.ExactFlag(f, &exact)
	backends.AMXFlag(f, &amx)
	cmd.AddCommand(newBenchServeCmd(), newBenchGrammarCmd(), newBenchLearnCmd(), newBenchLearnDaemonCmd())
	return cmd
}

// startCPUProfile starts a CPU profile into path; the returned function
// stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// benchOutput is everything one `ruvllm bench` run measured; the JSON form
// is read by bench/compare.
type benchOutput struct {
	*llm.BenchReport
	MemBW *membw.Result `json:"membw,omitempty"`
	// DecodeBoundTPS is the generation speed memory bandwidth allows:
	// read bandwidth ÷ weight bytes per token.
	DecodeBoundTPS float64 `json:"decode_bound_tokens_per_second,omitempty"`
	// Speculation is decode speed per speculation kind (--spec).
	Speculation []llm.SpecFigure `json:"speculation,omitempty"`
	// SpecLoad is the machine's load average before and after the
	// speculation runs ("" where unknown): their ratios are only as good
	// as the machine was quiet.
	SpecLoad string `json:"speculation_load,omitempty"`
	// KV is the memory and quality of each KV type (--kv-types).
	KV []kvFigure `json:"kv,omitempty"`
}

// kvBenchOptions are the --kv-types report's settings.
type kvBenchOptions struct {
	types               []string
	window, ctx, prompt int
	pplFile             string
}

// kvFigure is one KV type's report.
type kvFigure struct {
	llm.KVInfo
	// BytesPerTokenAtCtx is the mean memory per position of a sequence of
	// the report's context length; RatioToF16 that of the cold tier (the
	// state of cached prefixes) over f16's.
	Ctx                int     `json:"ctx"`
	BytesPerTokenAtCtx float64 `json:"bytes_per_token_at_ctx"`
	RatioToF16         float64 `json:"ratio_to_f16"`
	// CachedPrefixes is how many prompts of PrefixTokens the budget held
	// when the cache started evicting.
	PrefixTokens   int     `json:"prefix_tokens"`
	CachedPrefixes int     `json:"cached_prefixes"`
	Perplexity     float64 `json:"perplexity,omitempty"`
}

// runKVBench loads path once per KV type (two sequences of the report's
// context, the same budget for every type) and reports each one.
func runKVBench(ctx context.Context, log io.Writer, path string, lo llm.Options, o kvBenchOptions) ([]kvFigure, error) {
	var text string
	if o.pplFile != "" {
		b, err := readInputFile("--ppl-file", o.pplFile, maxTextFile)
		if err != nil {
			return nil, err
		}
		text = string(b)
	}
	var out []kvFigure
	for _, t := range o.types {
		cold, err := llm.ParseKVType(t)
		if err != nil {
			return nil, err
		}
		opts := lo
		opts.KVCold, opts.KVHotWindow, opts.ContextLength, opts.Sequences = cold, o.window, o.ctx, 2
		m, err := llm.Load(ctx, path, opts)
		if err != nil {
			return nil, err
		}
		fig := kvFigure{KVInfo: m.KVInfo(), Ctx: o.ctx, PrefixTokens: o.prompt}
		fig.BytesPerTokenAtCtx = fig.BytesPerToken(o.ctx)
		fig.RatioToF16 = fig.HotBytesPerToken / fig.HotBytesPerToken
		if fig.ColdBytesPerToken > 0 {
			fig.RatioToF16 = fig.ColdBytesPerToken / fig.HotBytesPerToken
		}
		fig.CachedPrefixes, err = m.PrefixCapacity(ctx, o.prompt)
		if err == nil && o.pplFile != "" { // an empty file is refused by Perplexity, not skipped
			var res llm.PerplexityResult
			res, err = m.Perplexity(ctx, text, o.ctx, func(c int, ppl float64) { fmt.Fprintf(log, "[%s %d]%.4f ", t, c+1, ppl) })
			fmt.Fprintln(log)
			fig.Perplexity = res.Perplexity
		}
		m.Close()
		if err != nil {
			return nil, fmt.Errorf("kv type %s: %w", t, err)
		}
		out = append(out, fig)
	}
	return out, nil
}

// runSpecBench loads path with every speculation kind (and draft, when
// given) and measures decode with each of specs against none.
func runSpecBench(ctx context.Context, path, draft string, specs []string, lo llm.Options, o llm.BenchOptions) ([]llm.SpecFigure, error) {
	if o.GenTokens < 2 {
		return nil, fmt.Errorf("--spec with -n %d: the speculation workloads decode -n tokens each; want at least 2", o.GenTokens)
	}
	var kinds []llm.SpecSetting
	for _, s := range specs {
		k, err := llm.ParseSpecSetting(s)
		if err != nil {
			return nil, err
		}
		if k.Kinds&spec.KindDraft != 0 && draft == "" {
			return nil, fmt.Errorf("--spec %s needs --draft FILE", s)
		}
		kinds = append(kinds, k)
	}
	lo.Speculate, lo.Draft, lo.DraftDir, lo.NoPrefixCache = spec.KindsAll, draft, draftDir(), true
	lo.ContextLength = 1024 + o.GenTokens
	m, err := llm.Load(ctx, path, lo)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.BenchSpec(ctx, kinds, o.GenTokens, o.Reps)
}

// checkBenchFlagsApply refuses the flags of the KV report without
// --kv-types and --draft without --spec: they were accepted and did
// nothing (bench --ppl-file FILE printed no perplexity), and a KV
// report context under 1 token printed "B/tok @-5".
func checkBenchFlagsApply(fl *pflag.FlagSet, kvo kvBenchOptions, specs []string) error {
	if len(kvo.types) == 0 {
		for _, name := range []string{"ppl-file", "kv-ctx", "kv-prompt", "kv-hot-window"} {
			if fl.Changed(name) {
				return fmt.Errorf("--%s applies to the KV report: give --kv-types with it (e.g. --kv-types f16,q8_0)", name)
			}
		}
	} else if kvo.ctx < 1 {
		return fmt.Errorf("--kv-ctx %d: want at least 1 token", kvo.ctx)
	}
	if len(specs) == 0 && fl.Changed("draft") {
		return errors.New("--draft applies to the speculation workloads: give --spec with it (e.g. --spec draft)")
	}
	return nil
}

// runBench loads path with lo (threads, backend, and a context of at least
// what o needs) and runs the bench.
func runBench(ctx context.Context, path string, lo llm.Options, o llm.BenchOptions) (*llm.BenchReport, error) {
	if o.Depth < 0 || lo.ContextLength < 0 {
		return nil, fmt.Errorf("bench: negative depth %d or context %d", o.Depth, lo.ContextLength)
	}
	// The tests need their tokens, the depth's, and one position past
	// the last (llm.Model.Bench). A --ctx under that was enlarged without
	// a word; 0 sizes the cache for the tests, with a block to spare.
	need := o.Depth + max(o.PromptTokens, o.GenTokens) + 2
	switch {
	case lo.ContextLength == 0:
		lo.ContextLength = o.Depth + max(o.PromptTokens, o.GenTokens) + 16
	case lo.ContextLength < need:
		tests := fmt.Sprintf("-p %d -n %d", o.PromptTokens, o.GenTokens)
		if o.Depth > 0 {
			tests += fmt.Sprintf(" -d %d", o.Depth)
		}
		return nil, fmt.Errorf("--ctx %d: %s need a context of at least %d tokens; give --ctx %d or more, or leave --ctx out", lo.ContextLength, tests, need, need)
	}
	// A batch holds the prompt (or the depth's), or one token of every
	// parallel sequence.
	lo.BatchSize = min(max(lo.BatchSize, 1), max(o.PromptTokens, o.Depth, o.Parallel, 1))
	// At depth the tests read the context from the prefix cache.
	lo.Sequences, lo.NoPrefixCache = max(1, o.Parallel), o.Depth == 0
	m, err := llm.Load(ctx, path, lo)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	figs, err := m.Bench(ctx, o)
	if err != nil {
		return nil, err
	}
	info := m.Info()
	_, isa := quant.Accelerated()
	rep := &llm.BenchReport{
		Model: info.Name, FileType: info.FileType, FileSize: info.FileSize, Parameters: info.Parameters,
		Backend: m.Backend(), ISA: isa, Exact: m.Exact(), Threads: m.Threads(), KVBytes: m.KVBytes(),
		ContextLength: info.ContextLength, KVBytesPerToken: m.KVBytesPerToken(),
		WeightBytesPerToken: m.WeightBytesPerToken(), Results: figs,
	}
	if rss, err := llm.PeakRSS(); err == nil {
		rep.PeakRSS = rss
	}
	return rep, nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// writeMarkdownTable writes rows (the first is the header) as a markdown
// table whose columns are as wide as their widest cell, right-aligned
// where right says so, so that it reads aligned in a terminal too.
func writeMarkdownTable(w io.Writer, rows [][]string, right []bool) {
	width := make([]int, len(right))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c), 4)
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if right[i] {
				c = pad + c
			} else {
				c += pad
			}
			b.WriteString(" " + c + " |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(right))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
		if right[i] {
			sep[i] = sep[i][1:] + ":"
		}
	}
	line(sep)
	for _, row := range rows[1:] {
		line(row)
	}
}

// printBench writes a llama-bench-shaped markdown table and the memory
// figures under it.
func printBench(w io.Writer, out benchOutput) {
	if r := out.BenchReport; r != nil {
		rows := [][]string{{"model", "size", "params", "backend", "threads", "test", "t/s"}}
		backend := r.Backend + " " + r.ISA
		if r.Exact {
			backend += " exact"
		}
		for _, f := range r.Results {
			rows = append(rows, []string{r.Model + " " + r.FileType, fmt.Sprintf("%.2f MiB", mib(r.FileSize)),
				fmt.Sprintf("%.2f M", float64(r.Parameters)/1e6), backend, strconv.Itoa(r.Threads), f.Test,
				fmt.Sprintf("%.2f ± %.2f", f.Mean, f.Stddev)})
		}
		writeMarkdownTable(w, rows, []bool{false, true, true, false, true, true, true})
		fmt.Fprintln(w)
		budget := r.FileSize + r.KVBytes + 64<<20
		rss, verdict := "unavailable", "not checked"
		if r.PeakRSS > 0 {
			rss, verdict = fmt.Sprintf("%.1f MiB", mib(r.PeakRSS)), "within"
			if r.PeakRSS > budget {
				verdict = "OVER"
			}
		}
		fmt.Fprintf(w, "peak RSS %s; file %.1f MiB + KV cache %.1f MiB + 64 MiB = %.1f MiB (%s)\n",
			rss, mib(r.FileSize), mib(r.KVBytes), mib(budget), verdict)
		fmt.Fprintf(w, "weights read per decoded token: %.1f MiB\n", mib(r.WeightBytesPerToken))
		if r.KVBytesPerToken > 0 {
			fmt.Fprintf(w, "KV cache: %.1f MiB for a context of %d tokens, %.1f KiB per token\n", mib(r.KVBytes), r.ContextLength, r.KVBytesPerToken/1024)
		}
	}
	if len(out.Speculation) > 0 {
		fmt.Fprintf(w, "\n| %-18s | %12s | %8s | %14s | %10s | %10s | %12s | %8s | %9s | %9s |\n", "speculation", "decode t/s", "speed-up", "t/CPU-second", "CPU ratio", "acceptance", "tokens/verif", "verified", "TTFT ms", "identical")
		fmt.Fprintf(w, "| %-18s | %12s | %8s | %14s | %10s | %10s | %12s | %8s | %9s | %9s |\n", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---")
		for _, f := range out.Speculation {
			fmt.Fprintf(w, "| %-18s | %12.1f | %7.2fx | %14.1f | %9.2fx | %10.2f | %12.2f | %7.0f%% | %9.1f | %9v |\n", f.Kinds, f.TokensPerSecond, f.Speedup,
				f.CPUTokensPerSecond, f.CPUSpeedup, f.AcceptanceRate, f.TokensPerVerification, 100*f.VerifiedShare, f.TTFTMillis, f.Identical)
		}
		if out.SpecLoad != "" {
			fmt.Fprintf(w, "load average (1, 5, 15 min) before and after: %s\n", out.SpecLoad)
		}
		rows := [][]string{{"speculation", "workload", "decode t/s", "speed-up", "acceptance", "tokens/verif", "verified"}}
		for _, f := range out.Speculation {
			for _, wf := range f.Workloads {
				rows = append(rows, []string{f.Kinds, wf.Name, fmt.Sprintf("%.1f", wf.TokensPerSecond), fmt.Sprintf("%.2fx", wf.Speedup),
					fmt.Sprintf("%.2f", wf.AcceptanceRate), fmt.Sprintf("%.2f", wf.TokensPerVerification), fmt.Sprintf("%.0f%%", 100*wf.VerifiedShare)})
			}
		}
		if len(rows) > 1 {
			fmt.Fprintln(w)
			writeMarkdownTable(w, rows, []bool{false, false, true, true, true, true, true})
		}
	}
	if len(out.KV) > 0 {
		base := out.KV[0]
		fmt.Fprintf(w, "\n| %-6s | %6s | %11s | %11s | %9s | %13s | %14s | %10s | %10s |\n", "KV", "window", "hot B/tok", "cold B/tok", "vs f16", fmt.Sprintf("B/tok @%d", base.Ctx), "budget MiB", fmt.Sprintf("prefixes×%d", base.PrefixTokens), "perplexity")
		fmt.Fprintf(w, "| %-6s | %6s | %11s | %11s | %9s | %13s | %14s | %10s | %10s |\n", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:")
		for _, f := range out.KV {
			ppl := "-"
			if f.Perplexity > 0 {
				ppl = fmt.Sprintf("%.4f", f.Perplexity)
			}
			fmt.Fprintf(w, "| %-6s | %6d | %11.0f | %11.0f | %8.1f%% | %13.0f | %14.2f | %10d | %10s |\n", f.Type, f.HotWindow, f.HotBytesPerToken,
				f.ColdBytesPerToken, 100*f.RatioToF16, f.BytesPerTokenAtCtx, mib(f.BudgetBytes), f.CachedPrefixes, ppl)
		}
	}
	if bw := out.MemBW; bw != nil {
		pf := "no prefetch"
		if bw.ReadPrefetchBytes > 0 {
			pf = fmt.Sprintf("prefetch %d B ahead", bw.ReadPrefetchBytes)
		}
		fmt.Fprintf(w, "memory bandwidth, %d threads: reading %d MiB in all %.2f GB/s (best pass: %s); copying %d MiB each %.2f GB/s read (%.2f GB/s read+write)\n",
			bw.Threads, bw.ReadBytes>>20, bw.ReadBytesPerSecond/1e9, pf, bw.BufferBytes>>20, bw.CopyReadBytesPerSecond/1e9, bw.CopyBytesPerSecond/1e9)
		if r := out.BenchReport; r != nil && out.DecodeBoundTPS > 0 {
			fmt.Fprintf(w, "decode bound: %.2f ms/token = %.2f t/s", 1000/out.DecodeBoundTPS, out.DecodeBoundTPS)
			for _, f := range r.Results {
				if strings.HasPrefix(f.Test, "tg") {
					fmt.Fprintf(w, "; %s reaches %.0f %% of it", f.Test, 100*f.Mean/out.DecodeBoundTPS)
				}
			}
			fmt.Fprintln(w)
		}
	}
}

func newBenchServeCmd() *cobra.Command {
	var o servebench.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "serve [-m MODEL]",
		Short: "Drive the running daemon with chat, RAG and concurrent workloads; TTFT with the cache on and off",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			a, err := ipc.Dial(ctx, ipc.WithApp("bench-editor"))
			if err != nil {
				return err
			}
			b, err := ipc.Dial(ctx, ipc.WithApp("bench-mail"))
			if err != nil {
				return err
			}
			figs, err := servebench.Run(ctx, a, b, o)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(figs)
			}
			servebench.Print(cmd.OutOrStdout(), figs)
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.Model, "model", "m", "", "model name (default: the daemon's default)")
	cmd.Flags().IntVar(&o.Requests, "requests", 8, "requests per workload")
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", 8, "streams in the concurrent workload")
	cmd.Flags().IntVar(&o.MaxTokens, "max-tokens", 32, "tokens generated per request")
	cmd.Flags().StringSliceVar(&o.Workloads, "workloads", nil, "workloads to run, comma-separated: "+strings.Join(servebench.WorkloadNames, ", ")+" (default all but spec and kv)")
	cmd.Flags().StringSliceVar(&o.Spec, "spec", nil, "speculation settings the spec workload compares (default off,lookup,lookup+tree,draft,all; KINDS+prediction or prediction sends the off reply with two words changed as a predicted output)")
	cmd.Flags().IntVar(&o.SpecTokens, "spec-tokens", 96, "tokens generated per request of the spec workload")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// loadAverage returns the 1, 5 and 15 minute load averages of
// /proc/loadavg, or "" where the system has none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
