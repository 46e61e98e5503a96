package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/ipc"
)

// connect dials the daemon; when start is set and none answers, it starts
// ruvllmd in the background (next to this executable, else on PATH) and
// waits for it.
func connect(ctx context.Context, start bool, daemonArgs ...string) (*ipc.Client, error) {
	c, err := ipc.Dial(ctx, ipc.WithApp("ruvllm-cli"))
	switch {
	case err == nil:
		return c, nil
	case !start || !errors.Is(err, ipc.ErrNotRunning):
		// Not the dial's own words ("dial unix ...: connect: no such
		// file"): what is missing and how to start it.
		return nil, notRunning(err)
	}
	bin := "ruvllmd"
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), "ruvllmd"); fileExists(p) {
			bin = p
		}
	}
	if _, err := exec.LookPath(bin); err != nil && !fileExists(bin) {
		return nil, fmt.Errorf("no daemon is running and ruvllmd was not found next to ruvllm or on PATH")
	}
	cfg, err := daemon.DefaultConfig()
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckDirs(); err != nil {
		return nil, fmt.Errorf("start ruvllmd: %w", err)
	}
	os.MkdirAll(cfg.CacheDir, 0o700)
	logPath := filepath.Join(cfg.CacheDir, "ruvllmd.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	return launchDaemon(ctx, exec.Command(bin, daemonArgs...), logf, daemonStartWait)
}

// daemonStartWait is how long connect waits for a daemon it started to
// answer (it listens before it loads a model).
const daemonStartWait = 20 * time.Second

// launchDaemon starts cmd in its own session with its output to logf and
// waits up to wait for a daemon to answer. A daemon that exits is
// reported with its log; one that does not answer in time, or when ctx
// ends first (Ctrl-C), is stopped — SIGTERM, then SIGKILL — rather than
// left running where nothing can reach it (it held the socket, so the
// next command found a daemon that never answered).
func launchDaemon(ctx context.Context, cmd *exec.Cmd, logf *os.File, wait time.Duration) (*ipc.Client, error) {
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlive this terminal
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ruvllmd: %w", err)
	}
	fmt.Fprintf(os.Stderr, "started ruvllmd (pid %d, log %s)\n", cmd.Process.Pid, logf.Name())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("ruvllmd exited at start (%v); see %s", err, logf.Name())
		case <-ctx.Done():
			stopStarted(cmd, exited)
			return nil, ctx.Err()
		case <-deadline.C:
			stopStarted(cmd, exited)
			return nil, fmt.Errorf("ruvllmd did not answer within %v and was stopped; see %s", wait, logf.Name())
		case <-tick.C:
		}
		if c, err := ipc.Dial(ctx, ipc.WithApp("ruvllm-cli")); err == nil {
			return c, nil
		}
	}
}

// stopStarted ends a daemon launchDaemon started: SIGTERM, and SIGKILL if
// it has not exited 5 s later.
func stopStarted(cmd *exec.Cmd, exited <-chan error) {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

func fileExists(p string) bool { st, err := os.Stat(p); return err == nil && !st.IsDir() }

func newDaemonCmd() *cobra.Command {
	cfg, _ := daemon.DefaultConfig()
	o := serve.Options{Config: cfg}
	var p serve.Process
	cmd := &cobra.Command{
		Use:     "daemon",
		Aliases: []string{"serve"}, // what an Ollama user types
		Short:   "Run ruvllmd in the foreground (also: ruvllm serve, as ollama serve)",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := serve.FinishFlags(&o, cmd.Flags()); err != nil {
				return err
			}
			if err := o.CheckDirs(); err != nil {
				return err
			}
			var err error
			if o.Logger, err = p.Logger(cmd.ErrOrStderr()); err != nil {
				return err
			}
			ctx, stop := daemon.SignalContext(cmd.Context())
			defer stop()
			return p.Run(ctx, o)
		},
	}
	serve.RegisterAllFlags(cmd.Flags(), &o, &p)
	return cmd
}

func newPsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ps",
		Short: "List the models the daemon has loaded",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			h, err := c.Health(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tARCH\tTYPE\tSIZE\tCONTEXT\tACTIVE\tUNTIL")
			for _, m := range h.Loaded {
				until := "in use / forever"
				if !m.ExpiresAt.IsZero() {
					until = time.Until(m.ExpiresAt).Round(time.Second).String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f MiB\t%d\t%d\t%s\n", m.Name, m.Arch, m.FileType, float64(m.Size)/(1<<20), m.Context, m.Active, until)
			}
			return tw.Flush()
		},
	}
}

func newModelsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "models",
		Short: "List the models the daemon can serve",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			list, err := c.Models(cmd.Context())
			if err != nil {
				return err
			}
			for _, m := range list.Data {
				fmt.Fprintln(cmd.OutOrStdout(), m.ID)
			}
			return nil
		},
	}
}

func newCacheCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cache",
		Short: "Show the daemon's shared prefix-cache statistics",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			st, err := c.Cache(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, m := range st.Models {
				fmt.Fprintf(w, "%s: %d lookups, %d hits, %d of %d prompt tokens from cache (%.1f%%), %d blocks of %d tokens, %d evictions\n",
					m.Model, m.Lookups, m.Hits, m.HitTokens, m.HitTokens+m.MissTokens, 100*m.HitRate, m.Blocks, m.BlockTokens, m.Evictions)
				for _, p := range m.Top {
					fmt.Fprintf(w, "  %5d tokens, %4d hits: %q\n", p.Tokens, p.Hits, p.Head)
				}
			}
			return nil
		},
	}
}
