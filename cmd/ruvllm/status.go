package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/daemon/service"
	"github.com/ruvllm/ruvllm/ipc"
)

// notRunning is the error of the commands that need a running daemon.
func notRunning(err error) error {
	sock, _ := ipc.SocketPath()
	if errors.Is(err, ipc.ErrNotRunning) {
		return fmt.Errorf("%w (nothing answers on %s): start it with `ruvllm chat -m MODEL.gguf`, or `ruvllmd -m MODEL.gguf --listen 127.0.0.1:11434` for SDK apps", ipc.ErrNotRunning, sock)
	}
	return err
}

func newSocketCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "socket",
		Short: "Print the daemon's socket path (for curl --unix-socket \"$(ruvllm socket)\")",
		Long: "socket prints the path of the Unix socket the CLI talks to ($RUVLLM_SOCKET, else the platform's\n" +
			"standard path) and nothing else, whether or not a daemon is listening there.",
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := ipc.SocketPath()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), p)
			return nil
		},
	}
}

// statusReport is `ruvllm status --json`.
type statusReport struct {
	Health ipc.Health     `json:"health"`
	Cache  ipc.CacheStats `json:"cache"`
}

func newStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show the running daemon: socket, TCP address, pid, loaded models, prefix cache",
		Long:  "status exits 1 when no daemon answers on the socket.",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := connect(ctx, false)
			if err != nil {
				return notRunning(err)
			}
			defer c.Close()
			var r statusReport
			if r.Health, err = c.Health(ctx); err != nil {
				return err
			}
			if r.Cache, err = c.Cache(ctx); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return printStatus(cmd.OutOrStdout(), r)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the daemon's health and cache statistics as JSON")
	return cmd
}

// printStatus writes the status report as aligned lines.
func printStatus(w io.Writer, r statusReport) error {
	h := r.Health
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	started := "started directly"
	if h.ServiceManager != "" {
		started = "started by " + h.ServiceManager
	}
	fmt.Fprintf(tw, "ruvllmd\trunning, pid %d, up %s, version %s, %s\n", h.PID,
		(time.Duration(h.UptimeSeconds) * time.Second).String(), h.Version, started)
	fmt.Fprintf(tw, "socket\t%s\n", h.Socket)
	switch {
	case h.TCPAddress == "":
		fmt.Fprintf(tw, "tcp\toff (SDK apps need it: restart ruvllmd with --listen 127.0.0.1:11434, then `ruvllm env`)\n")
	case h.TCPSameUserNoToken:
		fmt.Fprintf(tw, "tcp\t%s (bearer token in %s; not needed by your own user's apps)\n", h.TCPAddress, h.TokenFile)
	default:
		fmt.Fprintf(tw, "tcp\t%s (bearer token in %s, required)\n", h.TCPAddress, h.TokenFile)
	}
	if h.CacheDir != "" {
		fmt.Fprintf(tw, "cache dir\t%s\n", h.CacheDir)
	}
	if len(h.Loaded) == 0 {
		fmt.Fprintf(tw, "models\tnone loaded (the first request loads one)\n")
	}
	for i, m := range h.Loaded {
		label := ""
		if i == 0 {
			label = "models"
		}
		until := "kept while in use"
		if !m.ExpiresAt.IsZero() {
			until = "unloads in " + time.Until(m.ExpiresAt).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s (%s %s, %.1f MiB, context %d, KV cache %.1f MiB, %d active, %s)\n", label, m.Name,
			m.Arch, m.FileType, mib(m.Size), m.Context, mib(m.KVBytes), m.Active, until)
	}
	for i, m := range r.Cache.Models {
		label := ""
		if i == 0 {
			label = "prefix cache"
		}
		fmt.Fprintf(tw, "%s\t%s: %d blocks of %d tokens (%d tokens); %d of %d prompt tokens from cache (%.1f%%)\n", label, m.Model,
			m.Blocks, m.BlockTokens, m.Blocks*m.BlockTokens, m.HitTokens, m.HitTokens+m.MissTokens, 100*m.HitRate)
	}
	return tw.Flush()
}

func newEnvCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "Print OPENAI_BASE_URL, OPENAI_API_KEY, OLLAMA_HOST and ANTHROPIC_* for the daemon: eval \"$(ruvllm env)\"",
		Long: "env prints shell export lines that point OpenAI, Ollama and Anthropic SDK apps at the running daemon's\n" +
			"loopback TCP listener, so they work unchanged:\n\n" +
			"  eval \"$(ruvllm env)\"\n\n" +
			"OPENAI_API_KEY and ANTHROPIC_API_KEY are the listener's bearer token. On Linux apps of your own user need no token (the\n" +
			"daemon reads the peer's uid from the kernel) unless ruvllmd runs with --require-token; on macOS\n" +
			"they must send it. A daemon without a TCP listener (started without --listen) is an error.",
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := connect(ctx, false)
			if err != nil {
				return notRunning(err)
			}
			defer c.Close()
			h, err := c.Health(ctx)
			if err != nil {
				return err
			}
			if h.TCPAddress == "" {
				return fmt.Errorf("ruvllmd (pid %d) has no TCP listener, and SDK apps need one: restart it with one, e.g. "+
					"`ruvllm stop && ruvllmd -m MODEL.gguf --listen 127.0.0.1:11434 &` (or `ruvllm daemon --listen 127.0.0.1:11434`), "+
					"then run `eval \"$(ruvllm env)\"` again", h.PID)
			}
			tok, err := ipc.ReadToken(h.TokenFile)
			if err != nil {
				return err
			}
			vars, err := ipc.ClientEnv(h, tok)
			if err != nil {
				return err
			}
			for _, v := range vars {
				fmt.Fprintf(cmd.OutOrStdout(), "export %s=%s\n", v.Name, shellQuote(v.Value))
			}
			return nil
		},
	}
}

// shellQuote quotes s for a POSIX shell (single quotes).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newStopCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "stop [--timeout 30s] [MODEL...]",
		Short: "Stop the daemon (through systemd or launchd when it runs as a service) and wait until it exits, or unload models",
		Long: "stop ends the running ruvllmd and waits for it to exit (requests in flight get the daemon's\n" +
			"--shutdown-grace). A daemon started by the service manager (`ruvllm service install`) is stopped\n" +
			"through it; its socket stays, so the next client starts it again (`ruvllm service uninstall`\n" +
			"removes the service). Otherwise, or when the manager cannot stop it (a socket handed over by\n" +
			"another launcher), the daemon gets SIGTERM. No daemon running is not an error.\n" +
			"With MODEL names, as ollama stop, it unloads those models (ruvllm ps lists them) and the daemon\n" +
			"keeps running.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if cmd.Flags().Changed("timeout") {
					return errors.New("--timeout applies to stopping the daemon, not to unloading models")
				}
				return unloadModels(cmd.Context(), args, cmd.ErrOrStderr())
			}
			// A timeout that has run out before the stop stopped the
			// daemon and then reported that it "did not exit".
			if timeout <= 0 {
				return fmt.Errorf("--timeout %s: want a positive duration", timeout)
			}
			ctx := cmd.Context()
			c, err := connect(ctx, false)
			if errors.Is(err, ipc.ErrNotRunning) {
				sock, _ := ipc.SocketPath()
				fmt.Fprintf(cmd.ErrOrStderr(), "ruvllmd is not running (nothing answers on %s)\n", sock)
				return nil
			}
			if err != nil {
				return err
			}
			h, err := c.Health(ctx)
			c.Close()
			if err != nil {
				return err
			}
			return stopDaemon(ctx, h, timeout, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the daemon to exit")
	return cmd
}

// unloadModels is `stop MODEL...`: each model, which must be loaded,
// unloaded as ollama stop does it (a generate request with keep_alive 0).
func unloadModels(ctx context.Context, models []string, w io.Writer) error {
	c, err := connect(ctx, false)
	if err != nil {
		return err
	}
	defer c.Close()
	ps, err := c.Ps(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, model := range models {
		if seen[model] {
			continue // stop M M unloads M once, and says so once
		}
		seen[model] = true
		name := ""
		for _, m := range ps.Models {
			if m.Name == model || m.Name == model+":latest" || strings.TrimSuffix(m.Name, ":latest") == model {
				name = m.Name
			}
		}
		if name == "" {
			return fmt.Errorf("model %q is not loaded (ruvllm ps lists the loaded ones)", model)
		}
		req := map[string]any{"model": model, "keep_alive": 0, "stream": false}
		if err := c.Do(ctx, "POST", "/api/generate", req, nil); err != nil {
			return fmt.Errorf("unload %s: %w", model, err)
		}
		fmt.Fprintf(w, "unloaded %s\n", name)
	}
	return nil
}

// stopDaemon stops the daemon h describes and waits up to timeout for its
// process to end.
func stopDaemon(ctx context.Context, h ipc.Health, timeout time.Duration, w io.Writer) error {
	if h.PID <= 1 {
		return fmt.Errorf("the daemon reports pid %d: not stopping that", h.PID)
	}
	how := "SIGTERM"
	if h.ServiceManager != "" {
		// A daemon handed its socket by something other than the
		// service `ruvllm service install` made (systemd-socket-activate,
		// a unit of the user's own, no session bus) is no unit the
		// manager can stop: stop failed and left it running. SIGTERM
		// ends it cleanly either way (the units restart it only on
		// failure), so the manager's refusal falls back to it.
		o := service.Options{Logger: slog.New(slog.DiscardHandler)}
		if err := service.Stop(ctx, o); err != nil {
			fmt.Fprintf(w, "cannot stop ruvllmd (pid %d) through %s (%v): sending SIGTERM\n", h.PID, h.ServiceManager, err)
		} else {
			how = h.ServiceManager
		}
	}
	if how == "SIGTERM" {
		if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop ruvllmd (pid %d): %w", h.PID, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !processGone(h.PID) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("ruvllmd (pid %d) did not exit within %s of its stop (%s)", h.PID, timeout, how)
		case <-tick.C:
		}
	}
	fmt.Fprintf(w, "stopped ruvllmd (pid %d, through %s)\n", h.PID, how)
	if how == h.ServiceManager {
		fmt.Fprintf(w, "its socket stays with %s: the next client starts it again (`ruvllm service uninstall` removes the service)\n", h.ServiceManager)
	}
	return nil
}

// processGone reports whether process pid has exited: no such process, or
// only its zombie left (exited, not yet reaped by its parent).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		// The state follows the ")" that ends the command name.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] == 'Z' || b[i+2] == 'X'
		}
		return false
	}
	if _, serr := os.Stat("/proc/self/stat"); serr == nil {
		return true // /proc is there and has no such process
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
