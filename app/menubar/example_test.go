package menubar_test

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ruvllm/ruvllm/app/menubar"
)

// ExampleNew shows the wiring the desktop app does once NSApp runs (Wails'
// OnStartup): a click toggles the window, Quit ends the app, the model line
// follows the daemon, and menu-bar mode hides the Dock icon.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	mb, err := menubar.New(ctx, menubar.Options{
		OnToggle: func() { /* runtime.WindowShow / WindowHide */ },
		OnQuit:   func() { /* runtime.Quit */ },
		Logger:   slog.Default(),
	})
	if errors.Is(err, menubar.ErrUnsupported) {
		return // Linux: app/tray instead
	}
	if err != nil {
		slog.Error("menu bar", "err", err)
		return
	}
	defer mb.Close()
	mb.SetModel("llama-3.2-1b-q8_0")
	mb.SetDockIconVisible(false)
}
