//go:build !darwin

package statusicon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/ruvllm/ruvllm/app/notify"
	"github.com/ruvllm/ruvllm/app/tray"
	"github.com/ruvllm/ruvllm/internal/sessionbus"
)

// notifyTimeout is how long notifications stay up.
const notifyTimeout = 5 * time.Second

// busIcon is a StatusNotifierItem and a notifier on a session-bus
// connection of its own.
type busIcon struct {
	conn   *dbus.Conn
	tray   *tray.Tray
	notify *notify.Notifier

	closeOnce sync.Once
	closeErr  error
}

func newPlatform(ctx context.Context, opts Options) (platformIcon, error) {
	// A connection of its own, not the shared one dbus.SessionBus returns,
	// so that Close can close it without pulling it from under other code.
	// No dbus-launch when there is no session bus (a terminal, ssh):
	// ErrNoSessionBus, which the app logs quietly.
	conn, err := sessionbus.Connect()
	if err != nil {
		return nil, fmt.Errorf("statusicon: %w", err)
	}
	t, err := tray.New(ctx, conn, tray.Options{
		Model:    opts.Model,
		OnToggle: opts.OnToggle,
		OnQuit:   opts.OnQuit,
		Logger:   opts.Logger,
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &busIcon{
		conn:   conn,
		tray:   t,
		notify: notify.New(conn, notify.Options{Logger: opts.Logger}),
	}, nil
}

func (b *busIcon) SetModel(name string) error { return b.tray.SetModel(name) }

func (b *busIcon) SetMenuBarMode(on bool) error { return nil }

func (b *busIcon) Notify(ctx context.Context, summary, body string) error {
	_, err := b.notify.Notify(ctx, notify.Notification{
		Summary: summary,
		Body:    body,
		Urgency: notify.Normal,
		Timeout: notifyTimeout,
	})
	return err
}

func (b *busIcon) Close() error {
	b.closeOnce.Do(func() {
		err := b.tray.Close()
		if cerr := b.conn.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("statusicon: close session bus: %w", cerr)
		}
		b.closeErr = err
	})
	return b.closeErr
}
