// Package notify shows desktop notifications through the freedesktop
// notification service (org.freedesktop.Notifications on the session bus),
// which GNOME Shell, KDE Plasma, dunst, mako, xfce4-notifyd and others
// implement. It uses github.com/godbus/dbus/v5; no cgo, no libnotify.
//
// Usage from the app:
//
//	conn, err := dbus.ConnectSessionBus()
//	...
//	n := notify.New(conn, notify.Options{Logger: log})
//	id, err := n.Notify(ctx, notify.Notification{
//		Summary: "Model loaded",
//		Body:    "llama-3.2-1b-q8_0 is ready",
//		Timeout: 5 * time.Second,
//	})
//
// A desktop without a notification server is not an error: Notify logs at
// debug level and returns id 0 (servers never hand out 0). Any other failure
// is returned.
//
// The package is verified against a fake notification server on a private
// dbus-daemon (notify_test.go); how a real server renders a notification is
// not tested here.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/godbus/dbus/v5"
)

// D-Bus names of the notification service.
const (
	ServiceName                 = "org.freedesktop.Notifications"
	ServicePath dbus.ObjectPath = "/org/freedesktop/Notifications"
	Interface                   = "org.freedesktop.Notifications"
)

// NeverExpire as a Notification.Timeout keeps the notification until the
// user dismisses it.
const NeverExpire time.Duration = -1

// Urgency is the notification's urgency hint.
type Urgency byte

// The urgency levels of the notification specification.
const (
	Low      Urgency = 0
	Normal   Urgency = 1
	Critical Urgency = 2
)

// Notification is one message to show.
type Notification struct {
	// Summary is the one-line title.
	Summary string
	// Body is the optional longer text; servers may render a small subset of
	// markup (b, i, u, a), so it should not contain stray '<' or '&'.
	Body string
	// Icon overrides Options.Icon for this notification: an icon-theme name
	// or an absolute path / file:// URI of an image.
	Icon string
	// Timeout is how long the notification stays up: 0 leaves it to the
	// server, NeverExpire (or any negative value) keeps it until dismissed.
	Timeout time.Duration
	// Urgency is sent as the "urgency" hint; the zero value is Low, so set
	// Normal explicitly for ordinary messages.
	Urgency Urgency
	// ReplacesID, when not 0, replaces an earlier notification in place
	// (for example a progress message) instead of stacking a new one.
	ReplacesID uint32
}

// Options configures a Notifier. Every field is optional.
type Options struct {
	// AppName is the sending application's name; default "ruvllm".
	AppName string
	// Icon is the default icon; default "ruvllm", the icon name that
	// build/linux/ruvllm.desktop installs.
	Icon string
	// DesktopEntry is sent as the "desktop-entry" hint so servers can group
	// notifications under the app's .desktop file; default "ruvllm".
	DesktopEntry string
	// Logger receives debug lines; nil discards them.
	Logger *slog.Logger
}

// Notifier sends notifications on one D-Bus connection. It is safe for
// concurrent use and holds no resources of its own.
type Notifier struct {
	conn *dbus.Conn
	opts Options
	log  *slog.Logger
}

// New returns a Notifier that sends on conn (normally the session bus).
func New(conn *dbus.Conn, opts Options) *Notifier {
	if opts.AppName == "" {
		opts.AppName = "ruvllm"
	}
	if opts.Icon == "" {
		opts.Icon = "ruvllm"
	}
	if opts.DesktopEntry == "" {
		opts.DesktopEntry = "ruvllm"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Notifier{conn: conn, opts: opts, log: log.With("component", "notify")}
}

// expireTimeout converts a Timeout to the specification's milliseconds:
// -1 server default, 0 never.
func expireTimeout(d time.Duration) int32 {
	switch {
	case d == 0:
		return -1
	case d < 0:
		return 0
	}
	// Round up without overflowing: 0 ms would mean "never expire".
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	if ms > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(ms)
}

// noServer reports whether err means nobody owns the notification name.
func noServer(err error) bool {
	var name string
	var e dbus.Error
	var pe *dbus.Error
	switch {
	case errors.As(err, &e):
		name = e.Name
	case errors.As(err, &pe):
		name = pe.Name
	default:
		return false
	}
	return name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner"

}

// Notify shows n and returns the server's id for it, or 0 without an error
// when no notification server is running.
func (nf *Notifier) Notify(ctx context.Context, n Notification) (uint32, error) {
	icon := n.Icon
	if icon == "" {
		icon = nf.opts.Icon
	}
	hints := map[string]dbus.Variant{
		"urgency":       dbus.MakeVariant(byte(n.Urgency)),
		"desktop-entry": dbus.MakeVariant(nf.opts.DesktopEntry),
	}
	obj := nf.conn.Object(ServiceName, ServicePath)
	call := obj.CallWithContext(ctx, Interface+".Notify", 0,
		nf.opts.AppName, n.ReplacesID, icon, n.Summary, n.Body,
		[]string{}, hints, expireTimeout(n.Timeout))
	if call.Err != nil {
		if noServer(call.Err) {
			nf.log.Debug("no notification server on the session bus; notification dropped", "summary", n.Summary, "err", call.Err)
			return 0, nil
		}
		return 0, fmt.Errorf("notify %q: %w", n.Summary, call.Err)
	}
	var id uint32
	if err := call.Store(&id); err != nil {
		return 0, fmt.Errorf("notify %q: reply: %w", n.Summary, err)
	}
	return id, nil
}

// Close withdraws notification id. Closing id 0 (a notification that was
// never shown) or one without a server is a no-op.
func (nf *Notifier) Close(ctx context.Context, id uint32) error {
	if id == 0 {
		return nil
	}
	obj := nf.conn.Object(ServiceName, ServicePath)
	if err := obj.CallWithContext(ctx, Interface+".CloseNotification", 0, id).Err; err != nil {
		if noServer(err) {
			return nil
		}
		return fmt.Errorf("close notification %d: %w", id, err)
	}
	return nil
}
