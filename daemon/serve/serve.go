// Package serve wires a complete ruvllmd: server, model manager and API.
// Both cmd/ruvllmd and `ruvllm daemon` call it, so they behave the same.
package serve

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/api"
	"github.com/ruvllm/ruvllm/daemon/models"
)

// Options adds model settings to the server configuration.
type Options struct {
	daemon.Config
	// Model is the default model (name or path) for requests naming none,
	// loaded at start when Preload is set.
	Model     string
	Preload   bool
	KeepAlive time.Duration
	MaxLoaded int
}

// Run serves until ctx is cancelled.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	srv, err := daemon.New(o.Config)
	if err != nil {
		return err
	}
	mgr := models.New(models.Options{Dir: o.ModelsDir, CacheDir: o.CacheDir, KeepAlive: o.KeepAlive, MaxLoaded: o.MaxLoaded,
		Threads: o.Threads, Default: o.Model, Events: srv.Events(), Logger: o.Logger, Registry: srv.Store()})
	api.Register(srv, mgr)
	srv.OnShutdown(mgr.Close)
	if o.Preload && o.Model != "" {
		go func() {
			h, err := mgr.Acquire(ctx, o.Model, nil)
			if err != nil {
				o.Logger.Error("preload", "model", o.Model, "err", err)
				return
			}
			h.Release()
		}()
	}
	if err := srv.Run(ctx, daemon.DefaultGrace); err != nil {
		return fmt.Errorf("ruvllmd: %w", err)
	}
	return nil
}

// RegisterFlags binds the model flags.
func RegisterFlags(o *Options, f *pflag.FlagSet) {
	f.StringVarP(&o.Model, "model", "m", "", "default model (name or .gguf path), used when a request names none")
	f.BoolVar(&o.Preload, "preload", true, "load the default model at start")
	f.DurationVar(&o.KeepAlive, "keep-alive", 5*time.Minute, "how long an idle model stays loaded (negative: forever)")
	f.IntVar(&o.MaxLoaded, "max-loaded", 1, "models held in memory at once")
}
