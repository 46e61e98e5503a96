package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/ipc"
)

// newLearnCmd is `ruvllm learn`: what the daemon learned from your
// feedback, and control over it.
func newLearnCmd() *cobra.Command {
	var scope, model string
	cmd := &cobra.Command{
		Use:   "learn",
		Short: "Show and control what the daemon learns from your feedback: status, pause, resume, reset, undo, export",
	}
	cmd.PersistentFlags().StringVar(&scope, "scope", "", `learning scope ("user", or "app:<name>" with per-app learning; default: yours)`)
	cmd.PersistentFlags().StringVarP(&model, "model", "m", "", "loaded model (default: every loaded model)")

	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Per scope: signals received, applied and pending, steps, last update, validation figures",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			st, err := c.Learning(cmd.Context(), scope, model)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printLearning(cmd.OutOrStdout(), st)
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(status)

	for _, a := range []struct{ name, short string }{
		{"pause", "Stop learning: feedback is kept and learned on resume"},
		{"resume", "Learn again, starting with the feedback received while paused"},
		{"reset", "Forget everything learned: requests run on the base model exactly (undo brings it back)"},
		{"undo", "Undo the last update (a feedback, a consolidation, a deep run or a reset), exactly"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   a.name,
			Short: a.short,
			Args:  exactArgs(0, ""),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := connect(cmd.Context(), false)
				if err != nil {
					return err
				}
				res, err := c.LearningAction(cmd.Context(), a.name, scope, model)
				if err != nil {
					return err
				}
				for _, s := range res.Scopes {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s on %s (version %d, %d signals learned, paused %v)\n",
						a.name, s.Scope, s.Model, s.Version, s.Applied, s.Paused)
				}
				return nil
			},
		})
	}

	var out string
	export := &cobra.Command{
		Use:   "export [-o FILE.gguf]",
		Short: "Write the scope's consolidated adapter as a llama.cpp GGUF LoRA file (consolidating first)",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			if out == "" {
				out = "ruvllm-learned.gguf"
			}
			n, err := writeFileAtomic(out, func(w io.Writer) (int64, error) {
				return c.ExportLearning(cmd.Context(), scope, model, w)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes): load it with llama.cpp's --lora or `ruvllm adapter add`\n", out, n)
			return nil
		},
	}
	export.Flags().StringVarP(&out, "output", "o", "", "file to write (default ruvllm-learned.gguf)")
	cmd.AddCommand(export)
	return cmd
}

// printLearning writes the learning status as a table per model.
func printLearning(w io.Writer, st ipc.LearningStatus) {
	if !st.Enabled {
		fmt.Fprintln(w, "learning is switched off in the daemon (--no-learning)")
	}
	if len(st.Models) == 0 {
		fmt.Fprintln(w, "no model is loaded")
		return
	}
	for _, m := range st.Models {
		fmt.Fprintf(w, "%s: %s", m.Model, m.Status)
		if m.Error != "" {
			fmt.Fprintf(w, " (%s)", m.Error)
		}
		fmt.Fprintln(w)
		if len(m.Scopes) == 0 {
			fmt.Fprintln(w, "  nothing learned yet")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SCOPE\tRECEIVED\tAPPLIED\tPENDING\tQUEUED\tSTEPS\tCONSOLIDATED\tDEEP\tVERSION\tLAST UPDATE\tTREND")
		for _, s := range m.Scopes {
			last := "-"
			if s.LastUpdate != nil {
				last = s.LastUpdate.Local().Format(time.DateTime)
			}
			scope := s.Scope
			if s.Paused {
				scope += " (paused)"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t%d\t%s\t%s\n", scope, s.Received, s.Applied, s.Pending, s.Queued+s.Unlearned,
				s.Steps, s.Consolidations, s.DeepAccepted, s.DeepRuns, s.Version, last, sparkline(s.History))
		}
		tw.Flush()
		for _, s := range m.Scopes {
			if n := len(s.Candidates); n > 0 {
				c := s.Candidates[n-1]
				verdict := "accepted"
				if !c.Accepted {
					verdict = "rejected: " + c.Reason
				}
				fmt.Fprintf(w, "  %s: last deep run %s: held-back NLL %.3f (current %.3f), general perplexity %.2f (current %.2f), %s\n",
					s.Scope, c.At.Local().Format(time.DateTime), c.HoldoutNLL, c.CurrentHoldoutNLL, c.GeneralPPL, c.CurrentGeneralPPL, verdict)
			}
		}
	}
}

// sparkline draws the held-out losses of a scope's feedback (each
// correction's or thumbs-up's loss before it was learned; thumbs-down and
// regenerates score an unlikelihood, on another scale), oldest first.
func sparkline(h []ipc.LearningPoint) string {
	var v []float64
	for _, p := range h {
		if p.Kind == "feedback" && (p.Signal == "correction" || p.Signal == "thumbs-up") && p.Loss > 0 {
			v = append(v, p.Loss)
		}
	}
	if len(v) > 24 {
		v = v[len(v)-24:]
	}
	if len(v) == 0 {
		return "-"
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	bars := []rune("▁▂▃▄▅▆▇█")
	var sb strings.Builder
	for _, x := range v {
		i := 0
		if hi > lo {
			i = int((x - lo) / (hi - lo) * float64(len(bars)-1))
		}
		sb.WriteRune(bars[i])
	}
	return sb.String()
}

// writeFileAtomic writes path through a temporary file beside it, renamed
// over it once write succeeds. The temporary file was made in the working
// directory: -o on another file system failed at the rename ("invalid
// cross-device link") after the whole download, and a read-only working
// directory refused any -o.
func writeFileAtomic(path string, write func(io.Writer) (int64, error)) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is there
	n, err := write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return n, os.Rename(tmp.Name(), path)
}
