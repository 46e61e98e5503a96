package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/internal/learndbench"
)

func newBenchLearnDaemonCmd() *cobra.Command {
	var (
		o         learndbench.Options
		asJSON    bool
		daemonLog string
		profile   string
	)
	cmd := &cobra.Command{
		Use:   "learn-daemon [-m FILE.gguf] [--rounds 3] [--corrections 10]",
		Short: "Measure learning through a real daemon: update latency and TTFT while training",
		Long: "learn-daemon starts ruvllmd in process on the model and alternates an idle phase (streamed 8-token\n" +
			"completions 150 ms apart; their time to first token) with a training phase (the same requests while\n" +
			"corrections go through POST /v1/feedback one after another: each one's latency from arrival to the end of\n" +
			"its first instant step, when the scope's requests apply it). The requests opt out of the learned\n" +
			"adapters, so that the phases differ only in the training the daemon does.",
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Model == "" {
				o.Model = filepath.Join("..", "shared", "models", "ruvllm-test-llama-19m-f16.gguf")
				if _, err := os.Stat(o.Model); err != nil {
					return errors.New("missing -m FILE.gguf")
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			o.Log = cmd.ErrOrStderr()
			if daemonLog != "" {
				f, err := os.Create(daemonLog)
				if err != nil {
					return err
				}
				defer f.Close()
				o.DaemonLog = f
			}
			if profile != "" {
				stopProfile, err := startCPUProfile(profile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			rep, err := learndbench.Run(ctx, o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			learndbench.Print(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Model, "model", "m", "", "GGUF model (default ../shared/models/ruvllm-test-llama-19m-f16.gguf)")
	f.IntVar(&o.Rounds, "rounds", 3, "idle/training rounds")
	f.IntVar(&o.Corrections, "corrections", 10, "corrections per training phase")
	f.IntVar(&o.Requests, "requests", 20, "requests per idle phase")
	f.IntVarP(&o.Threads, "threads", "t", 0, "threads (0: all cores)")
	f.IntVar(&o.TrainThreads, "train-threads", 0, "the trainer's threads (0: the daemon's default)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringVar(&daemonLog, "daemon-log", "", "write the daemon's debug log to `FILE`")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the run (daemon included) to `FILE`")
	return cmd
}
