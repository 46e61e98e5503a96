package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/ipc"
)

// newTrainCmd is `ruvllm train FILE.jsonl -m MODEL`: the OpenAI
// fine-tuning API from the shell, with a progress bar.
func newTrainCmd() *cobra.Command {
	var (
		model, suffix, validation string
		epochs, batch, rank       int
		lrMult                    float64
		seed                      int64
		detach                    bool
	)
	cmd := &cobra.Command{
		Use:   "train FILE.jsonl -m MODEL",
		Short: "Fine-tune a LoRA adapter on JSONL chat examples through the daemon",
		Long: "train uploads FILE.jsonl (one {\"messages\": [...]} per line, OpenAI's chat format) and runs a fine-tuning\n" +
			"job on MODEL in the daemon, as background work that yields to requests. When it succeeds the adapter is\n" +
			"installed as ft:<model>:<suffix>:<id>: name it in a request's adapters, or use it as the model.\n" +
			"Ctrl-C cancels the job (with --detach it goes on in the daemon).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return errors.New("name the model to fine-tune with -m")
			}
			// Only a positive value is sent: a negative one (or NaN) was
			// taken for 0, "auto", and trained without a word.
			for _, h := range []struct {
				name string
				v    float64
			}{{"epochs", float64(epochs)}, {"batch-size", float64(batch)}, {"lr-multiplier", lrMult}, {"rank", float64(rank)}} {
				if h.v < 0 || math.IsNaN(h.v) || math.IsInf(h.v, 0) {
					return fmt.Errorf("--%s %v: want 0 (auto) or a positive number", h.name, h.v)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			c, err := connect(ctx, true)
			if err != nil {
				return err
			}
			out := cmd.ErrOrStderr()
			file, err := c.UploadFile(ctx, args[0], ipc.FilePurposeFineTune)
			if err != nil {
				return fmt.Errorf("upload %s: %w", args[0], err)
			}
			fmt.Fprintf(out, "uploaded %s as %s (%d examples)\n", args[0], file.ID, file.Examples)
			// A job that is refused leaves no upload behind: each retry
			// with a bad flag kept another copy of the file (up to 512 MiB)
			// in the daemon.
			uploaded := []string{file.ID}
			jobMade := false
			defer func() {
				if jobMade {
					return
				}
				dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				for _, id := range uploaded {
					if err := c.DeleteFile(dctx, id); err != nil {
						fmt.Fprintf(out, "could not remove the upload %s: %v\n", id, err)
					}
				}
			}()
			req := ipc.FineTuningJobCreate{Model: model, TrainingFile: file.ID, Suffix: suffix, Hyperparameters: &ipc.Hyperparameters{}}
			if validation != "" {
				vf, err := c.UploadFile(ctx, validation, ipc.FilePurposeFineTune)
				if err != nil {
					return fmt.Errorf("upload %s: %w", validation, err)
				}
				uploaded = append(uploaded, vf.ID)
				req.ValidationFile = vf.ID
			}
			num := func(v float64) *ipc.AutoNumber { return &ipc.AutoNumber{Value: v} }
			if epochs > 0 {
				req.Hyperparameters.NEpochs = num(float64(epochs))
			}
			if batch > 0 {
				req.Hyperparameters.BatchSize = num(float64(batch))
			}
			if lrMult > 0 {
				req.Hyperparameters.LearningRateMultiplier = num(lrMult)
			}
			if rank > 0 {
				req.Hyperparameters.LoRARank = num(float64(rank))
			}
			if cmd.Flags().Changed("seed") {
				req.Seed = &seed
			}
			job, err := c.CreateFineTuningJob(ctx, req)
			if err != nil {
				return err
			}
			jobMade = true
			fmt.Fprintf(out, "job %s queued\n", job.ID)
			if detach {
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", job.ID)
				return nil
			}
			j, err := followJob(ctx, c, job.ID, out)
			if err != nil {
				if ctx.Err() != nil {
					cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					if _, cerr := c.CancelFineTuningJob(cctx, job.ID); cerr == nil {
						return fmt.Errorf("interrupted: job %s cancelled", job.ID)
					}
				}
				return err
			}
			switch j.Status {
			case ipc.JobSucceeded:
				fmt.Fprintf(out, "trained %d tokens\n", derefInt(j.TrainedTokens))
				fmt.Fprintln(cmd.OutOrStdout(), *j.FineTunedModel)
				return nil
			case ipc.JobFailed:
				msg := "unknown error"
				if j.Error != nil {
					msg = j.Error.Message
				}
				return fmt.Errorf("job %s failed: %s", j.ID, msg)
			}
			return fmt.Errorf("job %s %s", j.ID, j.Status)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&model, "model", "m", "", "model to fine-tune (a model the daemon serves)")
	f.StringVar(&suffix, "suffix", "", "name part of the adapter (ft:<model>:<suffix>:<id>)")
	f.StringVar(&validation, "validation", "", "JSONL file of held-out examples, whose loss is reported")
	f.IntVar(&epochs, "epochs", 0, "passes over the examples (0: auto, 3)")
	f.IntVar(&batch, "batch-size", 0, "examples per step (0: auto)")
	f.Float64Var(&lrMult, "lr-multiplier", 0, "learning rate multiplier (0: auto, 1 = 1e-3)")
	f.IntVar(&rank, "rank", 0, "LoRA rank (0: auto, 8)")
	f.Int64Var(&seed, "seed", 0, "seed (default: random)")
	f.BoolVar(&detach, "detach", false, "print the job id and return; the job goes on in the daemon")
	return cmd
}

func derefInt(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// followJob shows a job's progress until it ends.
func followJob(ctx context.Context, c *ipc.Client, id string, w interface{ Write([]byte) (int, error) }) (j ipc.FineTuningJob, err error) {
	var bar *progressbar.ProgressBar
	defer func() {
		if bar != nil {
			// A job that failed or was cancelled stays where it stopped.
			if err == nil && j.Status == ipc.JobSucceeded {
				bar.Finish()
			} else {
				bar.Exit()
			}
			fmt.Fprintln(w)
		}
	}()
	status := ""
	for {
		j, err := c.FineTuningJob(ctx, id)
		if err != nil {
			return j, err
		}
		if j.Status != status {
			status = j.Status
			if j.Status == ipc.JobQueued {
				fmt.Fprintln(w, "waiting for the job before it")
			}
		}
		if j.TotalSteps > 0 {
			if bar == nil {
				bar = progressbar.NewOptions(j.TotalSteps, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("training"),
					progressbar.OptionSetWidth(30), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
					progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetRenderBlankState(true))
			}
			bar.Set(j.Steps)
			if evs, err := c.FineTuningEvents(ctx, id, 5); err == nil {
				for _, e := range evs {
					if loss, ok := e.Data["train_loss"].(float64); ok {
						bar.Describe(fmt.Sprintf("training (loss %.3f)", loss))
						break
					}
				}
			}
		}
		switch j.Status {
		case ipc.JobSucceeded, ipc.JobFailed, ipc.JobCancelled:
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}
