//go:build darwin

package statusicon

import (
	"context"

	"github.com/ruvllm/ruvllm/app/menubar"
)

// macIcon is a menu-bar status item.
type macIcon struct{ mb *menubar.MenuBar }

func newPlatform(ctx context.Context, opts Options) (platformIcon, error) {
	mb, err := menubar.New(ctx, menubar.Options{
		Model:    opts.Model,
		OnToggle: opts.OnToggle,
		OnQuit:   opts.OnQuit,
		Logger:   opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	return macIcon{mb}, nil
}

func (m macIcon) SetModel(name string) error   { return m.mb.SetModel(name) }
func (m macIcon) SetMenuBarMode(on bool) error { return m.mb.SetDockIconVisible(!on) }
func (m macIcon) Close() error                 { return m.mb.Close() }

func (m macIcon) Notify(ctx context.Context, summary, body string) error {
	return ErrUnsupported
}
