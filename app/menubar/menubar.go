// Package menubar puts a ruvllm status item in the macOS menu bar, the
// counterpart of app/tray on Linux, with the same menu and callbacks:
//
//	Show / hide ruvllm     → Options.OnToggle
//	Model: <name>          (disabled information line, see SetModel)
//	────────────
//	Quit ruvllm            → Options.OnQuit
//
// A left click on the item calls OnToggle; a right click (or control-click)
// opens the menu.
//
// It talks to AppKit (NSStatusBar, NSStatusItem, NSMenu, NSApplication)
// through github.com/ebitengine/purego's Objective-C runtime bindings, so it
// builds with CGO_ENABLED=0. It does not run an event loop of its own: the
// process's NSApplication run loop (the one Wails runs on the main thread)
// must be running for the item to appear and for New to return. AppKit calls
// are made on the main thread; the package's methods may be called from any
// goroutine.
//
// Usage from the app (after the Wails OnStartup hook, when NSApp runs):
//
//	mb, err := menubar.New(ctx, menubar.Options{
//		Title:    "ruvllm",
//		OnToggle: func() { /* show or hide the window */ },
//		OnQuit:   func() { /* quit the app */ },
//		Logger:   log,
//	})
//	if errors.Is(err, menubar.ErrUnsupported) { /* not macOS: use app/tray */ }
//	...
//	mb.SetModel("llama-3.2-1b-q8_0")
//	mb.SetDockIconVisible(false) // menu-bar mode: no Dock icon
//	defer mb.Close()
//
// Menu-bar mode: build/darwin/Info.plist sets LSUIElement, so the app starts
// without a Dock icon and without taking the menu bar; SetDockIconVisible
// switches the activation policy at run time (Regular with a Dock icon,
// Accessory without).
//
// Callbacks run on their own goroutine, never on the AppKit main thread, so
// they may call back into the MenuBar (or Close it) and may block.
//
// On other systems New returns ErrUnsupported. Only the platform-neutral
// logic (menu labels, callbacks, closing, icon checks) is tested, on Linux
// with a recording backend; the AppKit backend is compiled for darwin/arm64
// by `make test-darwin` but has not been run by this package's tests.
package menubar

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"image/png"
	"log/slog"
	"sync"
)

// ErrUnsupported is returned by New on systems without a macOS menu bar.
var ErrUnsupported = errors.New("menubar: only supported on macOS")

// ErrClosed is returned by the setters of a MenuBar after Close.
var ErrClosed = errors.New("menubar: closed")

// templateIcon is the default menu-bar icon, drawn by tools/appicon: a black
// shape on transparency, 36 px for an 18 pt item at @2x. AppKit recolours
// template images for light and dark menu bars.
//
//go:embed icons/template-36.png
var templateIcon []byte

// Menu labels, shared by every backend.
const (
	toggleLabel = "Show / hide ruvllm"
	quitLabel   = "Quit ruvllm"
)

// modelLabel is the text of the information line for a model name.
func modelLabel(name string) string {
	if name == "" {
		return "Model: none"
	}
	return "Model: " + name
}

// Options configures a MenuBar. Every field is optional.
type Options struct {
	// Title is the item's tooltip; default "ruvllm".
	Title string
	// Icon is a PNG used as the item's image. It is drawn as a template image
	// (only its alpha counts; AppKit picks the colour), at 18 pt high, so a
	// 36 px black-on-transparent PNG looks right on Retina screens. Nil uses
	// the embedded ruvllm template icon.
	Icon []byte
	// Model is the initial text of the "Model:" menu line; empty shows
	// "Model: none".
	Model string
	// OnToggle is called when the user clicks the item or picks
	// "Show / hide ruvllm".
	OnToggle func()
	// OnQuit is called when the user picks "Quit ruvllm". The MenuBar does
	// not close itself or end the process; the app decides.
	OnQuit func()
	// Logger receives the menu bar's log lines; nil discards them.
	Logger *slog.Logger
}

// backend draws the item; appkit (darwin) is the real one. Every method is
// called with MenuBar.mu held, in order, at most once after close.
type backend interface {
	setModelLabel(label string) error
	setTitle(title string) error
	setDockIconVisible(visible bool) error
	close() error
}

// action is what the user asked for through the item or its menu.
type action int

const (
	actToggle action = iota
	actQuit
)

// MenuBar is a status item with its menu. Its methods are safe for
// concurrent use.
type MenuBar struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	b      backend
	model  string
	title  string
	closed bool
}

// New adds the status item to the menu bar. ctx bounds the wait for the main
// thread to create it (New fails with ctx's error if the app's run loop is
// not running); the item then stays until Close. On systems other than
// macOS it returns ErrUnsupported.
func New(ctx context.Context, opts Options) (*MenuBar, error) {
	m, err := newMenuBar(opts)
	if err != nil {
		return nil, err
	}
	b, err := newBackend(ctx, m)
	if err != nil {
		return nil, err
	}
	m.b = b
	return m, nil
}

// newMenuBar checks opts and fills in the defaults; the caller attaches the
// backend.
func newMenuBar(opts Options) (*MenuBar, error) {
	if opts.Title == "" {
		opts.Title = "ruvllm"
	}
	if opts.Icon == nil {
		opts.Icon = templateIcon
	}
	// AppKit accepts any image data and silently shows nothing for bad
	// data; check here so that a broken icon is an error, on every system.
	if _, err := png.DecodeConfig(bytes.NewReader(opts.Icon)); err != nil {
		return nil, fmt.Errorf("menubar: icon: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &MenuBar{
		opts:  opts,
		log:   log.With("component", "menubar"),
		model: opts.Model,
		title: opts.Title,
	}, nil
}

// SetModel changes the "Model:" menu line; empty shows "Model: none".
func (m *MenuBar) SetModel(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if name == m.model {
		return nil
	}
	if err := m.b.setModelLabel(modelLabel(name)); err != nil {
		return fmt.Errorf("menubar: set model: %w", err)
	}
	m.model = name
	return nil
}

// SetTitle changes the item's tooltip.
func (m *MenuBar) SetTitle(title string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if title == m.title {
		return nil
	}
	if err := m.b.setTitle(title); err != nil {
		return fmt.Errorf("menubar: set title: %w", err)
	}
	m.title = title
	return nil
}

// SetDockIconVisible shows (true) or hides (false) the app's Dock icon by
// switching NSApp's activation policy between Regular and Accessory. Hidden
// is menu-bar mode: the app then also has no menu bar of its own and does not
// appear in the app switcher, while its windows still work.
func (m *MenuBar) SetDockIconVisible(visible bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if err := m.b.setDockIconVisible(visible); err != nil {
		return fmt.Errorf("menubar: dock icon: %w", err)
	}
	return nil
}

// Close removes the item from the menu bar. It is idempotent, like
// tray.Tray's Close; the setters return ErrClosed afterwards. Callbacks
// already started still run.
func (m *MenuBar) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if err := m.b.close(); err != nil {
		return fmt.Errorf("menubar: close: %w", err)
	}
	return nil
}

// dispatch runs the callback for a, on its own goroutine so that it never
// blocks the AppKit main thread and may call back into the MenuBar. Actions
// arriving after Close are dropped.
func (m *MenuBar) dispatch(a action) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return
	}
	var fn func()
	switch a {
	case actToggle:
		fn = m.opts.OnToggle
	case actQuit:
		fn = m.opts.OnQuit
	}
	m.log.Debug("menu action", "action", a)
	if fn != nil {
		go fn()
	}
}
