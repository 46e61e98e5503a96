// Command ruvllmd is the ruvllm daemon: one warm model per user, shared by
// every local app over a Unix socket.
package main

import (
	"context"
	"fmt"
	"os"

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
	var p serve.Process
	fs := pflag.NewFlagSet("ruvllmd", pflag.ExitOnError)
	serve.RegisterAllFlags(fs, &o, &p)
	fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "ruvllmd: unexpected argument %q (options start with --; the model is -m FILE)\n", fs.Arg(0))
		os.Exit(2)
	}
	if err := serve.FinishFlags(&o, fs); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllmd:", err)
		os.Exit(2)
	}
	if err := o.CheckDirs(); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllmd:", err)
		os.Exit(2)
	}
	if o.Logger, err = p.Logger(os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllmd:", err)
		os.Exit(2)
	}
	ctx, stop := daemon.SignalContext(context.Background())
	defer stop()
	if err := p.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
