package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/internal/backends"
	"github.com/ruvllm/ruvllm/internal/servebench"
	"github.com/ruvllm/ruvllm/ipc"
)

func newBenchCmd() *cobra.Command {
	var (
		path    string
		o       llm.BenchOptions
		threads int
		asJSON  bool
		backend string
	)
	cmd := &cobra.Command{
		Use:   "bench -m FILE.gguf [-p 512] [-n 128] [-t THREADS] [-r REPS]",
		Short: "Measure prompt processing and generation speed, like llama-bench",
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return errors.New("missing -m FILE.gguf")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			newBackend, err := backends.Factory(backend, threads)
			if err != nil {
				return err
			}
			m, err := llm.Load(ctx, path, llm.Options{Threads: threads, ContextLength: max(o.PromptTokens, o.GenTokens) + 16, BatchSize: max(o.PromptTokens, 1), Sequences: 1, NewBackend: newBackend})
			if err != nil {
				return err
			}
			defer m.Close()
			figs, err := m.Bench(ctx, o)
			if err != nil {
				return err
			}
			info := m.Info()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{
					"model": info.Name, "file_type": info.FileType, "size_bytes": info.FileSize,
					"parameters": info.Parameters, "backend": m.Backend(), "threads": m.Threads(), "results": figs,
				})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "| %-32s | %9s | %8s | %-7s | %7s | %8s | %20s |\n", "model", "size", "params", "backend", "threads", "test", "t/s")
			fmt.Fprintf(w, "| %-32s | %9s | %8s | %-7s | %7s | %8s | %20s |\n", "---", "---:", "---:", "---", "---:", "---:", "---:")
			for _, f := range figs {
				fmt.Fprintf(w, "| %-32s | %6.2f MiB | %6.2f M | %-7s | %7d | %8s | %12.2f ± %5.2f |\n",
					info.Name, float64(info.FileSize)/(1<<20), float64(info.Parameters)/1e6, m.Backend(), m.Threads(), f.Test, f.Mean, f.Stddev)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&path, "model", "m", "", "GGUF model file")
	f.IntVarP(&o.PromptTokens, "p", "p", 512, "prompt tokens (pp test; 0 skips)")
	f.IntVarP(&o.GenTokens, "n", "n", 128, "generated tokens (tg test; 0 skips)")
	f.IntVarP(&o.Reps, "reps", "r", 5, "repetitions")
	f.IntVarP(&threads, "threads", "t", 0, "threads (0: all cores)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	backends.Flag(f, &backend)
	cmd.AddCommand(newBenchServeCmd())
	return cmd
}

func newBenchServeCmd() *cobra.Command {
	var o servebench.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "serve [-m MODEL]",
		Short: "Drive the running daemon with chat, RAG and concurrent workloads; TTFT with the cache on and off",
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
