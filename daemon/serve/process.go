package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// Process holds the daemon's flags that are not Options: its log level
// and CPU profile. ruvllmd and `ruvllm daemon` both register them, so that
// the two take the same flags (`ruvllm daemon` refused --log-level).
type Process struct {
	LogLevel   string
	CPUProfile string
}

// RegisterFlags binds --log-level and --cpuprofile.
func (p *Process) RegisterFlags(f *pflag.FlagSet) {
	f.StringVar(&p.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&p.CPUProfile, "cpuprofile", "", "write a CPU profile of the daemon's whole run to `FILE` (go tool pprof)")
}

// Logger returns a text logger writing to w at --log-level.
func (p Process) Logger(w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(p.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})), nil
}

// Run serves o until ctx ends, profiling the CPU into --cpuprofile's file
// when it is set.
func (p Process) Run(ctx context.Context, o Options) error {
	if p.CPUProfile != "" {
		f, err := os.Create(p.CPUProfile)
		if err != nil {
			return fmt.Errorf("ruvllmd: cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("ruvllmd: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	return Run(ctx, o)
}

// RegisterAllFlags binds every flag of ruvllmd to o and p: the daemon's
// configuration, the model flags and the process's own. ruvllmd, `ruvllm
// daemon` and `ruvllm service install --` (which checks the flags it keeps
// in the unit) take the same flags through it.
func RegisterAllFlags(f *pflag.FlagSet, o *Options, p *Process) {
	o.RegisterFlags(f)
	RegisterFlags(o, f)
	p.RegisterFlags(f)
}
