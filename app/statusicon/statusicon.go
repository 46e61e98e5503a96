// Package statusicon is the one call the desktop app makes for its status
// icon on every desktop: app/menubar (an NSStatusItem) on macOS, app/tray (a
// StatusNotifierItem on the session bus) elsewhere, with the same menu:
//
//	Show / hide ruvllm     → Options.OnToggle (also a left click on the icon)
//	Model: <name>          (information line, see SetModel)
//	────────────
//	Quit (macOS: Quit ruvllm) → Options.OnQuit
//
// and desktop notifications through app/notify where the system has a
// freedesktop notification server.
//
// Usage from the app (Wails OnStartup; on macOS NSApp must be running or about
// to run on the main thread):
//
//	icon, err := statusicon.New(ctx, statusicon.Options{
//		Model:    cfg.Model,
//		OnToggle: func() { /* show or hide the window */ },
//		OnQuit:   func() { /* runtime.Quit(ctx) */ },
//		Logger:   log,
//	})
//	if err != nil { /* no status icon: log it, the app works without */ }
//	defer icon.Close()
//	icon.SetModel("llama-3.2-1b-q8_0")
//	icon.Notify(ctx, "Model loaded", "llama-3.2-1b-q8_0 is ready")
//	icon.SetMenuBarMode(true) // macOS: hide the Dock icon
//
// Callbacks run on their own goroutine and may call back into the Icon.
package statusicon

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ruvllm/ruvllm/internal/sessionbus"
)

// ErrUnsupported is returned by Notify where the package has no way to show
// notifications (macOS: not implemented).
var ErrUnsupported = errors.New("statusicon: not supported on this system")

// ErrNoSessionBus is returned by New on Linux when there is no D-Bus
// session bus to put the icon on (a terminal or ssh session without
// one). New never starts a bus (no dbus-launch).
var ErrNoSessionBus = sessionbus.ErrNoSessionBus

// Options configures an Icon. Every field is optional.
type Options struct {
	// Model is the initial "Model:" line; empty shows "Model: none".
	Model string
	// OnToggle is called when the user clicks the icon or picks
	// "Show / hide ruvllm".
	OnToggle func()
	// OnQuit is called when the user picks "Quit"; the Icon does not close
	// itself or end the process.
	OnQuit func()
	// Logger receives log lines; nil discards them.
	Logger *slog.Logger
}

// Icon is the app's status icon. Its methods are safe for concurrent use.
type Icon struct {
	p platformIcon
}

// platformIcon is what each system's file provides.
type platformIcon interface {
	SetModel(name string) error
	SetMenuBarMode(on bool) error
	Notify(ctx context.Context, summary, body string) error
	Close() error
}

// New shows the status icon. ctx bounds the setup (bus calls on Linux, the
// wait for the main thread on macOS); the icon then stays until Close.
func New(ctx context.Context, opts Options) (*Icon, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := newPlatform(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Icon{p: p}, nil
}

// SetModel changes the "Model:" line; empty shows "Model: none".
func (i *Icon) SetModel(name string) error { return i.p.SetModel(name) }

// SetMenuBarMode switches macOS menu-bar mode: on hides the Dock icon (the
// app lives in the menu bar; its windows still work), off shows it. Linux
// desktops have no Dock icon to hide, so there it does nothing and returns
// nil.
func (i *Icon) SetMenuBarMode(on bool) error { return i.p.SetMenuBarMode(on) }

// Notify shows a desktop notification with the app's name and icon. A
// desktop without a notification server is not an error. On macOS it
// returns ErrUnsupported.
func (i *Icon) Notify(ctx context.Context, summary, body string) error {
	return i.p.Notify(ctx, summary, body)
}

// Close removes the icon and frees what New took (on Linux, its session-bus
// connection). It is idempotent.
func (i *Icon) Close() error { return i.p.Close() }
