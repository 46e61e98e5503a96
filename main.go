//go:build desktop

// Command ruvllm-app is the desktop chat app: a Wails v2 window over the
// frontend in frontend/dist, with the Go methods of package app bound to
// it. It talks to ruvllmd through ipc and starts the daemon when none
// answers.
//
// Build with `make app` (tags desktop,production and, on Linux,
// webkit2_41); frontend/dist must be built first.
package main

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	"github.com/wailsapp/wails/v2/pkg/runtime"

	"github.com/ruvllm/ruvllm/app"
)

//go:embed all:frontend/dist
var assets embed.FS

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	var cfg app.Config
	fs := pflag.NewFlagSet("ruvllm-app", pflag.ExitOnError)
	fs.StringVar(&cfg.Socket, "socket", "", "daemon socket (default $RUVLLM_SOCKET or the standard path)")
	fs.StringVar(&cfg.Model, "model", env("RUVLLM_MODEL", ""), "model for new conversations, preloaded by a daemon the app starts ($RUVLLM_MODEL)")
	fs.StringVar(&cfg.Daemon, "daemon", env("RUVLLM_DAEMON", ""), "ruvllmd binary to start when none answers ($RUVLLM_DAEMON)")
	daemonArgs := fs.String("daemon-args", env("RUVLLM_DAEMON_ARGS", ""), "extra arguments for a started daemon, space-separated ($RUVLLM_DAEMON_ARGS)")
	fs.BoolVar(&cfg.StopDaemon, "stop-daemon", false, "stop the daemon the app started when the app quits")
	fs.StringVar(&cfg.TracePath, "trace", env("RUVLLM_APP_TRACE", ""), "append a JSON line per finished reply to this file ($RUVLLM_APP_TRACE)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	fs.Parse(os.Args[1:])
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllm-app: --log-level:", err)
		os.Exit(2)
	}
	cfg.DaemonArgs = strings.Fields(*daemonArgs)
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))

	var wctx context.Context
	a := app.New(cfg, func(name string, data any) {
		if wctx != nil {
			runtime.EventsEmit(wctx, name, data)
		}
	})
	err := wails.Run(&options.App{
		Title:     "ruvllm",
		Width:     1180,
		Height:    780,
		MinWidth:  720,
		MinHeight: 480,
		AssetServer: &assetserver.Options{
			Assets: assets,
		},
		BackgroundColour: &options.RGBA{R: 246, G: 246, B: 248, A: 255},
		DragAndDrop:      &options.DragAndDrop{EnableFileDrop: true, DisableWebViewDrop: true},
		OnStartup: func(ctx context.Context) {
			wctx = ctx
			a.Start(ctx)
			// Dropped files become adapter installs (frontend elements with
			// --wails-drop-target: drop receive them).
			runtime.OnFileDrop(ctx, func(_, _ int, paths []string) { a.HandleFileDrop(paths) })
			// Wiring point for branch tray: start app/tray (Linux
			// StatusNotifierItem) or app/menubar (darwin) and app/notify
			// here, after the lead merges it.
		},
		OnShutdown: func(context.Context) { a.Close() },
		Bind:       []any{a},
		Linux:      &linux.Options{ProgramName: "ruvllm", WebviewGpuPolicy: linux.WebviewGpuPolicyNever},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ruvllm-app:", err)
		os.Exit(1)
	}
}
