// Command ruvllmd is the ruvllm daemon: one warm model per user, shared by
// every local app over a Unix socket.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/serve"
)

func main() {
	cfg, err := daemon.DefaultConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ruvllmd:", err)
		os.Exit(1)
	}
	o := serve.Options{Config: cfg}
	fs := pflag.NewFlagSet("ruvllmd", pflag.ExitOnError)
	o.RegisterFlags(fs)
	serve.RegisterFlags(&o, fs)
	level := fs.String("log-level", "info", "debug, info, warn or error")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the daemon's whole run to `FILE` (go tool pprof)")
	fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "ruvllmd: unexpected argument %q (options start with --; the model is -m FILE)\n", fs.Arg(0))
		os.Exit(2)
	}
	if err := serve.FinishFlags(&o, fs); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllmd:", err)
		os.Exit(2)
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllmd: --log-level:", err)
		os.Exit(2)
	}
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	ctx, stop := daemon.SignalContext(context.Background())
	defer stop()
	if err := run(ctx, o, *profile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves until ctx ends, profiling the CPU into profile when it is set.
func run(ctx context.Context, o serve.Options, profile string) error {
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return fmt.Errorf("ruvllmd: cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("ruvllmd: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	return serve.Run(ctx, o)
}
