package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/internal/maskbench"
)

func newBenchGrammarCmd() *cobra.Command {
	var (
		data, vocab, failures, profile string
		workers, sample                int
		match                          string
		asJSON, cold                   bool
		diagnose                       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "grammar [--data maskbench-data.tar.gz] [--vocab ggml-vocab-llama-bpe.gguf] [--workers N] [--sample N]",
		Short: "Run MaskBench (JSON Schema token masks) against the grammar engine",
		Long: "grammar runs MaskBench, the mask benchmark of JSONSchemaBench: every schema is compiled, every\n" +
			"valid instance (compact JSON, members in schema order) is fed token by token with the Llama 3\n" +
			"tokenizer and must stay allowed to its end, and every invalid one must be refused at some token\n" +
			"or at its end. It prints the schemas passing, the compile errors by keyword, the validation\n" +
			"errors (a valid instance refused) and invalidation errors (an invalid one accepted), and the time\n" +
			"to first mask (compile + first mask, TTFM) and time per mask (TBM) percentiles, in CPU time of\n" +
			"the one thread that computed each (workers run schemas side by side, each single-threaded).\n" +
			"The data is read from the tarball at run time; nothing is unpacked to disk.",
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if profile != "" {
				done, err := startCPUProfile(profile)
				if err != nil {
					return err
				}
				defer done()
			}
			keep := func(name string) bool {
				if match != "" && !strings.Contains(name, match) {
					return false
				}
				if sample > 1 {
					h := fnv.New32a()
					h.Write([]byte(name))
					return h.Sum32()%uint32(sample) == 0
				}
				return true
			}
			cases, err := maskbench.Load(data, keep)
			if err != nil {
				return err
			}
			if len(cases) == 0 {
				return errors.New("bench grammar: no schemas selected")
			}
			f, err := gguf.Open(vocab)
			if err != nil {
				return err
			}
			tok, err := tokenizer.FromGGUF(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("bench grammar: %s: %w", vocab, err)
			}
			v, err := grammar.VocabFromTokenizer(tok)
			if err != nil {
				return err
			}
			v.SetSharing(!cold)
			start := time.Now()
			errOut := cmd.ErrOrStderr()
			var diag func(string, time.Duration, grammar.Stats, grammar.Stats)
			var diagMu sync.Mutex
			slowBy := map[string]int{}
			if diagnose > 0 {
				diag = func(name string, d time.Duration, before, after grammar.Stats) {
					if d < diagnose {
						return
					}
					k := "cached"
					if after.Lexemes > before.Lexemes {
						k = "new lexeme walks"
					} else if after.Entries > before.Entries {
						k = "new frontier"
					}
					diagMu.Lock()
					slowBy[k]++
					diagMu.Unlock()
				}
			}
			res, err := maskbench.Run(ctx, cases, maskbench.Options{Vocab: v, Tokenizer: tok, Workers: workers, Diagnose: diag,
				Progress: func(done, total int) {
					if done%500 == 0 || done == total {
						fmt.Fprintf(errOut, "\r%d/%d schemas", done, total)
					}
				}})
			fmt.Fprintln(errOut)
			if err != nil {
				return err
			}
			if failures != "" {
				if err := writeFailures(failures, res.Failures); err != nil {
					return err
				}
			}
			rep := grammarReport(res, vocab, v.Size(), time.Since(start), workers)
			rep.Cold = cold
			if diagnose > 0 {
				fmt.Fprintf(errOut, "masks over %v: %v\n", diagnose, slowBy)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printGrammarReport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "../shared/jsonschema/maskbench-data.tar.gz", "MaskBench tarball")
	f.StringVar(&vocab, "vocab", "../shared/vocab/ggml-vocab-llama-bpe.gguf", "GGUF file whose tokenizer is used (Llama 3 for the published figures)")
	f.IntVar(&workers, "workers", 1, "schemas run side by side, each on one thread")
	f.IntVar(&sample, "sample", 0, "run about one schema in N (a fixed choice by name)")
	f.StringVar(&match, "match", "", "only schemas whose name contains this")
	f.StringVar(&failures, "failures", "", "write every schema that did not pass, with the reason, to `FILE` (JSON lines)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVar(&cold, "cold", false, "compile every schema from a cold start: no lexeme masks shared between schemas\n"+
		"(by default they are shared, as in a daemon that has seen other schemas before)")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the run to `FILE`")
	f.DurationVar(&diagnose, "diagnose", 0, "count the masks slower than this by what they had to build")
	return cmd
}

type grammarBench struct {
	Schemas     int                `json:"schemas"`
	Outcomes    map[string]int     `json:"outcomes"`
	ByKeyword   map[string]int     `json:"compile_errors_by_keyword"`
	TBM         map[string]float64 `json:"tbm_us"`
	TTFM        map[string]float64 `json:"ttfm_us"`
	Masks       int                `json:"masks"`
	Tokens      int                `json:"tokens"`
	Vocab       string             `json:"vocab"`
	VocabSize   int                `json:"vocab_size"`
	Workers     int                `json:"workers"`
	WallSeconds float64            `json:"wall_seconds"`
	CPU         string             `json:"cpu"`
	Cold        bool               `json:"cold"`
	Slowest     []maskbench.Slow   `json:"slowest,omitempty"`
}

func grammarReport(res *maskbench.Result, vocab string, vocabSize int, wall time.Duration, workers int) grammarBench {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	pct := func(ds []time.Duration) map[string]float64 {
		return map[string]float64{"p50": us(maskbench.Percentile(ds, 50)), "p75": us(maskbench.Percentile(ds, 75)),
			"p90": us(maskbench.Percentile(ds, 90)), "p99": us(maskbench.Percentile(ds, 99)), "max": us(maskbench.Percentile(ds, 100))}
	}
	out := grammarBench{Schemas: res.Schemas, Outcomes: map[string]int{}, ByKeyword: res.ByKeyword,
		TBM: pct(res.TBM), TTFM: pct(res.TTFM), Masks: len(res.TBM) + len(res.TTFM), Tokens: res.Tokens,
		Vocab: vocab, VocabSize: vocabSize, Workers: max(1, workers), WallSeconds: wall.Seconds(), CPU: runtime.GOARCH,
		Slowest: res.Slowest}
	for k, n := range res.Outcomes {
		out.Outcomes[string(k)] = n
	}
	return out
}

func printGrammarReport(w io.Writer, r grammarBench) {
	cache := "lexeme masks shared between schemas"
	if r.Cold {
		cache = "every schema cold"
	}
	fmt.Fprintf(w, "MaskBench: %d schemas, vocabulary %s (%d tokens), %d tokens fed, %d masks, %d worker(s), %s, %.0f s\n",
		r.Schemas, r.Vocab, r.VocabSize, r.Tokens, r.Masks, r.Workers, cache, r.WallSeconds)
	fmt.Fprintf(w, "| metric | ruvllm |\n|---|---:|\n")
	for _, o := range []maskbench.Outcome{maskbench.Passing, maskbench.CompileError, maskbench.Validation, maskbench.Invalidation} {
		fmt.Fprintf(w, "| %s | %d |\n", o, r.Outcomes[string(o)])
	}
	for _, p := range []string{"p50", "p75", "p99"} {
		fmt.Fprintf(w, "| TBM %s (µs) | %.0f |\n", p, r.TBM[p])
	}
	for _, p := range []string{"p50", "p75", "p99"} {
		fmt.Fprintf(w, "| TTFM %s (µs) | %.0f |\n", p, r.TTFM[p])
	}
	type kv struct {
		k string
		n int
	}
	var kws []kv
	for k, n := range r.ByKeyword {
		kws = append(kws, kv{k, n})
	}
	sort.Slice(kws, func(i, j int) bool { return kws[i].n > kws[j].n || kws[i].n == kws[j].n && kws[i].k < kws[j].k })
	fmt.Fprint(w, "compile errors by keyword:")
	for _, x := range kws {
		fmt.Fprintf(w, " %s %d,", x.k, x.n)
	}
	fmt.Fprintln(w)
}

func writeFailures(path string, fs []maskbench.Failure) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, x := range fs {
		if err := enc.Encode(x); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
