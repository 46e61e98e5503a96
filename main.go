//go:build desktop || bindings

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
	"errors"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/menu"
	"github.com/wailsapp/wails/v2/pkg/menu/keys"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	"github.com/wailsapp/wails/v2/pkg/runtime"

	"github.com/ruvllm/ruvllm/app"
	"github.com/ruvllm/ruvllm/app/statusicon"
)

//go:embed all:frontend/dist
var assets embed.FS

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// shell ties the Wails window to the status icon (tray on Linux, menu bar
// on macOS): the icon toggles the window and quits the app, and shows the
// loaded model and adapter installs. Wails calls OnStartup once; the
// emitter runs on the app's goroutines, hence the atomics.
type shell struct {
	log    *slog.Logger
	ctx    atomic.Pointer[context.Context]
	icon   atomic.Pointer[statusicon.Icon]
	hidden atomic.Bool
	// quitting is set by every way of quitting the app (tray, app menu,
	// Ctrl+Q): closing the window otherwise only hides it.
	quitting atomic.Bool
}

// Hide hides the window (app.WindowControl).
func (s *shell) Hide() {
	if ctx := s.ctx.Load(); ctx != nil {
		runtime.WindowHide(*ctx)
		s.hidden.Store(true)
		s.log.Info("window hidden")
	}
}

// show brings the window back.
func (s *shell) show() {
	if ctx := s.ctx.Load(); ctx != nil {
		runtime.WindowShow(*ctx)
		runtime.WindowUnminimise(*ctx)
		s.hidden.Store(false)
		s.log.Info("window shown")
	}
}

// Quit ends the app (app.WindowControl).
func (s *shell) Quit() {
	if ctx := s.ctx.Load(); ctx != nil {
		s.quitting.Store(true)
		runtime.Quit(*ctx)
	}
}

// beforeClose keeps the app running in the tray or menu bar when its
// window is closed: the window hides; quitting goes through Quit.
func (s *shell) beforeClose(ctx context.Context) (prevent bool) {
	if s.quitting.Load() {
		return false
	}
	s.Hide()
	return true
}

// appMenu is the macOS application menu: Quit sets quitting first, so it
// ends the app where closing the window only hides it. Other platforms
// have the tray's menu and Ctrl+Q.
func (s *shell) appMenu() *menu.Menu {
	if goruntime.GOOS != "darwin" {
		return nil
	}
	m := menu.NewMenu()
	appMenu := m.AddSubmenu("ruvllm")
	appMenu.AddText("Hide ruvllm", keys.CmdOrCtrl("w"), func(*menu.CallbackData) { s.Hide() })
	appMenu.AddSeparator()
	appMenu.AddText("Quit ruvllm", keys.CmdOrCtrl("q"), func(*menu.CallbackData) { s.Quit() })
	m.Append(menu.EditMenu())
	return m
}

// emit forwards an app event to the page and keeps the icon current.
func (s *shell) emit(name string, data any) {
	ctx := s.ctx.Load()
	if ctx == nil {
		return
	}
	runtime.EventsEmit(*ctx, name, data)
	icon := s.icon.Load()
	if icon == nil {
		return
	}
	switch d := data.(type) {
	case app.Status:
		model := ""
		if len(d.Loaded) > 0 {
			model = d.Loaded[0].Name
		}
		if err := icon.SetModel(model); err != nil {
			s.log.Debug("status icon model", "err", err)
		}
	case app.AdapterInstall:
		if d.State == "installing" {
			return
		}
		title, body := "Adapter installed", d.Name
		if d.State == "rejected" {
			title, body = "Adapter rejected", d.Name+": "+d.Error
		}
		// A notification is a bus round trip: not on the app's goroutine.
		go func() {
			nctx, cancel := context.WithTimeout(*ctx, 5*time.Second)
			defer cancel()
			if err := icon.Notify(nctx, title, body); err != nil {
				s.log.Debug("notification", "err", err)
			}
		}()
	}
}

// startIcon shows the status icon; the app works without one.
func (s *shell) startIcon(ctx context.Context, model string) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	icon, err := statusicon.New(sctx, statusicon.Options{
		Model:    model,
		OnToggle: func() { s.toggle(ctx) },
		OnQuit:   s.Quit,
		Logger:   s.log,
	})
	if errors.Is(err, statusicon.ErrNoSessionBus) {
		s.log.Info("no status icon: no D-Bus session bus")
		return
	}
	if err != nil {
		s.log.Warn("no status icon", "err", err)
		return
	}
	s.icon.Store(icon)
	s.log.Info("status icon shown")
}

func (s *shell) toggle(ctx context.Context) {
	if s.hidden.Load() {
		s.show()
	} else {
		s.Hide()
	}
}

func (s *shell) close() {
	if icon := s.icon.Load(); icon != nil {
		icon.Close()
	}
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
	noIcon := fs.Bool("no-tray", false, "show no status icon (tray or menu bar)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	fs.Parse(os.Args[1:])
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(os.Stderr, "ruvllm-app: --log-level:", err)
		os.Exit(2)
	}
	cfg.DaemonArgs = strings.Fields(*daemonArgs)
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))

	sh := &shell{log: cfg.Logger}
	cfg.Window = sh
	a := app.New(cfg, sh.emit)
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
			sh.ctx.Store(&ctx)
			if !*noIcon {
				sh.startIcon(ctx, cfg.Model)
			}
			a.Start(ctx)
			// Dropped files become adapter installs (frontend elements with
			// --wails-drop-target: drop receive them).
			runtime.OnFileDrop(ctx, func(_, _ int, paths []string) { a.HandleFileDrop(paths) })
		},
		OnShutdown: func(context.Context) {
			a.Close()
			sh.close()
		},
		// Closing the window hides it (the status icon or a second launch
		// brings it back); quitting is the tray's, the app menu's or Ctrl+Q.
		OnBeforeClose: sh.beforeClose,
		Menu:          sh.appMenu(),
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId:               "dev.ruvllm.app",
			OnSecondInstanceLaunch: func(options.SecondInstanceData) { sh.show() },
		},
		Bind:  []any{a},
		Linux: &linux.Options{ProgramName: "ruvllm", WebviewGpuPolicy: linux.WebviewGpuPolicyNever},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ruvllm-app:", err)
		os.Exit(1)
	}
}
