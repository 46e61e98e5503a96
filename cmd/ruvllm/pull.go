package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/pull"
	"github.com/ruvllm/ruvllm/ipc"
)

// pullDisplay turns pull progress reports into status lines and a byte
// progress bar on stderr.
type pullDisplay struct {
	w      io.Writer
	bar    *progressbar.ProgressBar
	status string
}

func (d *pullDisplay) update(status string, total, completed int64) {
	if status == "downloading" {
		if d.bar == nil {
			max := total
			if max <= 0 {
				max = -1
			}
			d.bar = progressbar.NewOptions64(max, progressbar.OptionSetWriter(d.w), progressbar.OptionSetDescription("downloading"),
				progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true), progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetRenderBlankState(true),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(d.w) }))
		}
		d.bar.Set64(completed)
		d.status = status
		return
	}
	if status == d.status {
		return
	}
	if d.bar != nil && !d.bar.IsFinished() {
		d.bar.Finish()
	}
	d.status = status
	fmt.Fprintln(d.w, status)
}

func newPullCmd() *cobra.Command {
	var registry, modelsDir string
	var local bool
	cmd := &cobra.Command{
		Use:   "pull OWNER/REPO/FILE.gguf",
		Short: "Download a GGUF model into the models directory",
		Long: "pull downloads a GGUF file from a Hugging Face–style registry (default https://huggingface.co,\n" +
			"overridden by --registry or $RUVLLM_REGISTRY), e.g.\n" +
			"  ruvllm pull Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf\n" +
			"An interrupted download resumes where it stopped; the SHA-256 the registry publishes is verified\n" +
			"and the file is checked to be a GGUF before it is installed. The daemon does the download\n" +
			"(so its model list updates at once); --local downloads in this process without a daemon.",
		Args: exactArgs(1, "the model reference OWNER/REPO/FILE.gguf"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			disp := &pullDisplay{w: cmd.ErrOrStderr()}
			if local {
				if modelsDir == "" {
					cfg, err := daemon.DefaultConfig()
					if err != nil {
						return err
					}
					if cfg.ModelsDir == "" {
						return fmt.Errorf("--models-dir: no default without a home directory ($HOME is not set): give one")
					}
					modelsDir = cfg.ModelsDir
				}
				res, err := pull.Pull(ctx, args[0], pull.Options{Registry: pull.Registry(registry), Dir: modelsDir,
					Progress: func(p pull.Progress) { disp.update(p.Status, p.Total, p.Completed) }})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", res.Name, res.Path)
				return nil
			}
			c, err := connect(ctx, false)
			if errors.Is(err, ipc.ErrNotRunning) {
				return fmt.Errorf("%w (start it with `ruvllm daemon`, or pull with --local)", err)
			}
			if err != nil {
				return err
			}
			// The daemon reads $RUVLLM_REGISTRY from its own environment,
			// which is not this shell's: send ours, so that
			// `RUVLLM_REGISTRY=URL ruvllm pull` pulls from URL as --local does.
			if registry == "" {
				registry = os.Getenv(pull.RegistryEnv)
			}
			var name string
			err = c.Pull(ctx, ipc.PullRequest{Model: args[0], Registry: registry}, func(p ipc.PullProgress) error {
				disp.update(p.Status, p.Total, p.Completed)
				if p.Model != "" {
					name = p.Model
				}
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&registry, "registry", "", "registry base URL (default $"+pull.RegistryEnv+", else "+pull.DefaultRegistry+")")
	f.BoolVar(&local, "local", false, "download in this process, without the daemon")
	f.StringVar(&modelsDir, "models-dir", "", "models directory for --local (default: the daemon's)")
	return cmd
}

func newRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm MODEL...",
		Short: "Delete models from the models directory",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			for _, name := range args {
				if err := c.Delete(cmd.Context(), name); err != nil {
					return fmt.Errorf("rm %s: %w", name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", name)
			}
			return nil
		},
	}
}
