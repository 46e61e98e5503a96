package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/internal/learnbench"
)

func newBenchLearnCmd() *cobra.Command {
	var (
		o      learnbench.Options
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "learn [-m FILE.gguf] [--k 10,20,50] [--held-out 50]",
		Short: "Measure learning from feedback (engine-level, no daemon)",
		Long: "learn simulates a user who wants every answer to close its first sentence with the signature\n" +
			"\"Cheers, Ana.\": K corrections of the model's own answers on distinct questions go through the\n" +
			"instant loop, then the EWC++ consolidation (and, for contrast, one without EWC++). On held-out\n" +
			"questions it reports the per-token NLL of the preferred answers, the share of greedy answers that\n" +
			"follow the preference, the perplexity of general text, and the update latency.",
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
			rep, err := learnbench.Run(ctx, o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			learnbench.Print(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Model, "model", "m", "", "GGUF model (default ../shared/models/ruvllm-test-llama-19m-f16.gguf)")
	f.StringVar(&o.General, "general", "", "general text for perplexity (default /usr/share/common-licenses/GPL-3)")
	f.IntSliceVar(&o.Ks, "k", []int{10, 20, 50}, "corrections per run")
	f.IntVar(&o.HeldOut, "held-out", 50, "held-out questions")
	f.IntVarP(&o.Threads, "threads", "t", 0, "threads (0: all cores)")
	f.IntVar(&o.Config.MicroRank, "micro-rank", 0, "MicroLoRA rank (0: default)")
	f.IntVar(&o.Config.MicroSteps, "micro-steps", 0, "instant steps per feedback (0: default)")
	f.Float64Var(&o.Config.MicroLR, "micro-lr", 0, "instant learning rate (0: default)")
	f.IntVar(&o.Config.MicroWarmup, "micro-warmup", 0, "steps over which a fresh MicroLoRA's learning rate ramps up (0: default, negative: none)")
	f.IntVar(&o.Config.MicroLayers, "micro-layers", 0, "adapt only the top N layers in the instant loop (0: all)")
	f.Float64Var(&o.Config.EWCLambda, "ewc", 0, "EWC++ strength (0: default)")
	f.Float64Var(&o.Config.ConsolidateLR, "consolidate-lr", 0, "background learning rate (0: default)")
	f.IntVar(&o.Config.ConsolidateSteps, "consolidate-steps", 0, "background steps (0: default)")
	f.IntVar(&o.Config.MicroRecent, "micro-recent", 0, "earlier corrections in each instant step after the first (0: default, negative: none)")
	f.IntVar(&o.Config.GeneralFisherRows, "fisher-rows", 0, "general-text examples seeding the EWC Fisher (0: default, negative: none)")
	f.Float64Var(&o.Config.ConsolidateTransfer, "transfer", 0, "weight of the KL towards the current model (consolidated + MicroLoRA) on the queued feedback in the background loop (0: default, negative: off)")
	f.Float64Var(&o.Config.DistillWeight, "distill", 0, "weight of the distillation towards the base on general text (0: default, negative: off)")
	f.IntVar(&o.Config.DistillRows, "distill-rows", 0, "general-text examples distilled per step (0: default, negative: none)")
	f.IntVar(&o.Config.GuardRows, "guard-rows", 0, "general-text examples held out for the guard (0: default, negative: none)")
	f.Float64Var(&o.Config.GuardBudget, "guard-budget", 0, "relative perplexity increase the guard allows on its text (0: default, negative: guard off)")
	f.IntVar(&o.Config.GuardRepair, "guard-repair", 0, "distillation-only steps an update over the guard's budget takes before it is scaled back (0: default, negative: none)")
	f.IntVar(&o.Config.ReplaySize, "replay", 0, "replayed earlier examples per consolidation (0: default, negative: none)")
	f.IntVar(&o.ConsolidateEvery, "consolidate-every", 0, "also consolidate after every `N` corrections (0: only after the K-th)")
	f.BoolVar(&o.Transient, "transient", false, "measure general perplexity after every publication and report the worst served")
	f.StringVar(&o.Other, "other", "", "a second general text (`FILE`) whose perplexity is reported too; nothing of it is trained on")
	f.StringVar(&o.Export, "export", "", "write the last run's consolidated adapter to `FILE` (GGUF LoRA) and its held-out prompts to FILE.prompts")
	f.BoolVar(&o.NoLearn, "routing-only", false, "run the routing bench alone")
	f.BoolVar(&o.NoServing, "no-serving", false, "skip the TTFT-while-training phase")
	f.BoolVar(&o.Routing, "routing", true, "also run the routing bench (two domains' adapters, 100 held-out questions)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
