package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/daemon/service"
)

func newServiceCmd() *cobra.Command {
	var o service.Options
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Install, remove or inspect ruvllmd as a per-user service (systemd or launchd)",
	}
	cmd.PersistentFlags().StringVar(&o.SocketPath, "socket", "", "socket the service manager listens on (default: the standard path)")
	logger := func() *slog.Logger { return slog.New(slog.NewTextHandler(os.Stderr, nil)) }

	install := &cobra.Command{
		Use:   "install [-- RUVLLMD_FLAGS...]",
		Short: "Install and start the service; the daemon starts on the first connection",
		Long: "install writes and starts a per-user service (a systemd socket and service unit, or a launchd\n" +
			"agent) whose daemon starts on the first connection to its socket. Flags after -- are the\n" +
			"daemon's own (ruvllmd --help), checked now and kept in the unit, for example\n" +
			"  ruvllm service install -- -m /models/qwen.gguf --listen 127.0.0.1:11434\n" +
			"for SDK apps on the TCP port. Paths among them must be absolute (the service does not start in\n" +
			"this directory); the socket is install's own --socket.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				name, usage := commandPath(cmd)
				return fmt.Errorf("%s: unexpected argument %q: the daemon's flags go after -- (usage: %s)", name, args[0], usage)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDaemonArgs(args); err != nil {
				return err
			}
			o.DaemonArgs = args
			o.Logger = logger()
			return service.Install(cmd.Context(), o)
		},
	}
	install.Flags().StringVar(&o.Executable, "exec", "", "daemon binary (default: ruvllmd beside ruvllm, else \"ruvllm daemon\")")
	install.Flags().BoolVar(&o.RunAtLoad, "run-at-load", false, "macOS: start at login instead of on first connection")

	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and remove the service",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Logger = logger()
			return service.Uninstall(cmd.Context(), o)
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the service's units and their states",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Logger = logger()
			st, err := service.Status(cmd.Context(), o)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "MANAGER\tUNIT\tINSTALLED\tFILE STATE\tACTIVE\tPATH\n")
			for _, u := range st.Units {
				fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\t%s\n", st.Manager, u.Name, u.Installed, u.FileState, u.ActiveState, u.Path)
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(install, uninstall, status)
	return cmd
}

// checkDaemonArgs parses the daemon flags service install keeps in the
// unit as ruvllmd would, so that a mistake is told now and not by a
// service that fails at its first connection: unknown flags, stray
// words, values ruvllmd refuses, --socket (install's own) and relative
// paths (the service manager starts the daemon elsewhere).
func checkDaemonArgs(args []string) error {
	if len(args) == 0 {
		return nil
	}
	cfg, err := daemon.DefaultConfig()
	if err != nil {
		return err
	}
	o := serve.Options{Config: cfg}
	var p serve.Process
	fs := pflag.NewFlagSet("ruvllmd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	serve.RegisterAllFlags(fs, &o, &p)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("the daemon's flags after --: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("the daemon's flags after --: unexpected argument %q (the model is -m FILE)", fs.Arg(0))
	}
	if fs.Changed("socket") {
		return errors.New("the daemon's flags after --: --socket is service install's own flag (give it before --)")
	}
	for _, name := range []string{"model", "models-dir", "state-dir", "adapters-dir", "cache-dir", "cpuprofile", "draft"} {
		f := fs.Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		values := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			path := v
			if name == "draft" {
				_, path, _ = strings.Cut(v, "=") // MODEL=FILE, or FILE
				if path == "" {
					path = v
				}
				if strings.HasPrefix(path, "self:") {
					continue
				}
			}
			if name == "model" && !isModelPath(path) {
				continue // a model name
			}
			if path != "" && !filepath.IsAbs(path) {
				return fmt.Errorf("the daemon's flags after --: --%s %s: give an absolute path (the service does not start in this directory)", name, v)
			}
		}
	}
	if err := serve.FinishFlags(&o, fs); err != nil {
		return fmt.Errorf("the daemon's flags after --: %w", err)
	}
	// The values ruvllmd refuses as it starts (--kv-type bogus, --listen
	// 0.0.0.0:80) were kept in the unit, and the service failed at its
	// first connection.
	if err := o.Check(); err != nil {
		return fmt.Errorf("the daemon's flags after --: %w", err)
	}
	return nil
}
