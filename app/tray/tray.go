// Package tray puts a ruvllm icon in the Linux system tray: a
// StatusNotifierItem (the freedesktop/KDE tray protocol that GNOME with the
// AppIndicator extension, KDE Plasma, XFCE, waybar and others host) with its
// menu exported over com.canonical.dbusmenu, all on the session bus through
// github.com/godbus/dbus/v5. No cgo, no GTK.
//
// The item lives at /StatusNotifierItem (interface org.kde.StatusNotifierItem)
// under the well-known name org.kde.StatusNotifierItem-<pid>-<n>, and its
// menu at /MenuBar:
//
//	Show / hide ruvllm     → Options.OnToggle
//	Model: <name>          (disabled information line, see SetModel)
//	────────────
//	Quit                   → Options.OnQuit
//
// A left click on the icon (Activate) also calls OnToggle.
//
// Usage from the app:
//
//	conn, err := dbus.ConnectSessionBus()
//	...
//	t, err := tray.New(ctx, conn, tray.Options{
//		Title:    "ruvllm",
//		OnToggle: func() { /* show or hide the window */ },
//		OnQuit:   func() { /* quit the app */ },
//		Logger:   log,
//	})
//	...
//	t.SetModel("llama-3.2-1b-q8_0")
//	defer t.Close()
//
// The item registers itself with org.kde.StatusNotifierWatcher. When no
// watcher is running (a desktop without a tray, or one that starts later) the
// Tray still works, logs that the icon is not shown, and registers as soon as
// a watcher takes the name, and again whenever the watcher restarts.
//
// Callbacks run on their own goroutine, never on a D-Bus handler, so they may
// call back into the Tray (or Close it).
//
// The package is verified on a private dbus-daemon with a fake watcher and a
// client that plays the tray host (see tray_test.go); how a particular
// desktop draws the icon is not tested here.
package tray

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

// D-Bus names of the StatusNotifierItem protocol.
const (
	ItemPath      dbus.ObjectPath = "/StatusNotifierItem"
	ItemInterface                 = "org.kde.StatusNotifierItem"
	MenuPath      dbus.ObjectPath = "/MenuBar"
	MenuInterface                 = "com.canonical.dbusmenu"

	WatcherName                      = "org.kde.StatusNotifierWatcher"
	WatcherPath      dbus.ObjectPath = "/StatusNotifierWatcher"
	WatcherInterface                 = "org.kde.StatusNotifierWatcher"
)

// ErrClosed is returned by the setters of a Tray after Close.
var ErrClosed = errors.New("tray: closed")

// Status is the StatusNotifierItem status; hosts may hide Passive items.
type Status string

// The three statuses the protocol defines.
const (
	Passive        Status = "Passive"
	Active         Status = "Active"
	NeedsAttention Status = "NeedsAttention"
)

// Options configures a Tray. Every field is optional.
type Options struct {
	// ID is the item's stable identifier (SNI Id); default "ruvllm".
	ID string
	// Title is the item's name as hosts show it in settings and tooltips;
	// default "ruvllm".
	Title string
	// Icon is a PNG drawn as the icon (sent as an ARGB32 pixmap). Nil uses
	// the embedded ruvllm icon set (22, 32, 48 and 64 px).
	Icon []byte
	// IconName is a freedesktop icon-theme name that hosts resolving names
	// prefer over the pixmap (for example "ruvllm" once the .desktop file's
	// icons are installed). Empty sends the pixmap only.
	IconName string
	// Model is the initial text of the "Model:" menu line; empty shows
	// "Model: none".
	Model string
	// OnToggle is called when the user picks "Show / hide ruvllm" or clicks
	// the icon.
	OnToggle func()
	// OnQuit is called when the user picks "Quit". The Tray does not close
	// itself; the app decides.
	OnQuit func()
	// Logger receives the tray's log lines; nil discards them.
	Logger *slog.Logger
}

// Tray is a StatusNotifierItem with its menu, exported on one D-Bus
// connection. Its methods are safe for concurrent use.
type Tray struct {
	conn     *dbus.Conn
	log      *slog.Logger
	opts     Options
	busName  string
	itemProp *prop.Properties
	menuProp *prop.Properties
	menu     *menu
	matches  []dbus.MatchOption
	sigc     chan *dbus.Signal
	cancel   context.CancelFunc
	done     chan struct{}

	mu     sync.Mutex
	status Status
	title  string
	closed bool
}

// New exports the item and its menu on conn, takes a well-known name and
// registers with the StatusNotifierWatcher if one is running. ctx bounds the
// D-Bus calls New makes; the Tray then lives until Close. conn stays the
// caller's: Close does not close it.
func New(ctx context.Context, conn *dbus.Conn, opts Options) (*Tray, error) {
	if opts.ID == "" {
		opts.ID = "ruvllm"
	}
	if opts.Title == "" {
		opts.Title = "ruvllm"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var pixmaps []pixmap
	if opts.Icon != nil {
		pm, err := pngPixmap(opts.Icon)
		if err != nil {
			return nil, fmt.Errorf("tray: icon: %w", err)
		}
		pixmaps = []pixmap{pm}
	} else {
		var err error
		if pixmaps, err = defaultPixmaps(); err != nil {
			return nil, fmt.Errorf("tray: embedded icon: %w", err)
		}
	}

	t := &Tray{
		conn:   conn,
		log:    log.With("component", "tray"),
		opts:   opts,
		status: Active,
		title:  opts.Title,
		sigc:   make(chan *dbus.Signal, 16),
		done:   make(chan struct{}),
	}
	t.menu = newMenu(t, opts.Model)
	if err := t.export(pixmaps); err != nil {
		t.unexport()
		return nil, err
	}
	name, err := t.requestName()
	if err != nil {
		t.unexport()
		return nil, err
	}
	t.busName = name

	// Watch for the watcher before the first attempt so that one starting in
	// between is not missed.
	t.matches = []dbus.MatchOption{
		dbus.WithMatchSender("org.freedesktop.DBus"),
		dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, WatcherName),
	}
	if err := conn.AddMatchSignalContext(ctx, t.matches...); err != nil {
		conn.ReleaseName(name)
		t.unexport()
		return nil, fmt.Errorf("tray: watch %s: %w", WatcherName, err)
	}
	conn.Signal(t.sigc)

	loopCtx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	go t.watch(loopCtx)

	if err := t.register(ctx); err != nil {
		t.log.Info("tray icon not shown: no StatusNotifierWatcher on the session bus; will register when one appears", "err", err)
	}
	return t, nil
}

// Name returns the well-known bus name the item owns.
func (t *Tray) Name() string { return t.busName }

// requestName takes org.kde.StatusNotifierItem-<pid>-<n> for the first free n.
func (t *Tray) requestName() (string, error) {
	for n := 1; n <= 64; n++ {
		name := fmt.Sprintf("org.kde.StatusNotifierItem-%d-%d", os.Getpid(), n)
		reply, err := t.conn.RequestName(name, dbus.NameFlagDoNotQueue)
		if err != nil {
			return "", fmt.Errorf("tray: request name %s: %w", name, err)
		}
		if reply == dbus.RequestNameReplyPrimaryOwner {
			return name, nil
		}
	}
	return "", errors.New("tray: no free org.kde.StatusNotifierItem name for this process")
}

// register announces the item to the watcher.
func (t *Tray) register(ctx context.Context) error {
	obj := t.conn.Object(WatcherName, WatcherPath)
	call := obj.CallWithContext(ctx, WatcherInterface+".RegisterStatusNotifierItem", 0, t.busName)
	if call.Err != nil {
		return fmt.Errorf("register with %s: %w", WatcherName, call.Err)
	}
	t.log.Debug("registered with StatusNotifierWatcher", "name", t.busName)
	return nil
}

// watch re-registers whenever a watcher takes its name; it ends on Close or
// when the connection closes.
func (t *Tray) watch(ctx context.Context) {
	defer close(t.done)
	for {
		select {
		case <-ctx.Done():
			return
		case sig, ok := <-t.sigc:
			if !ok {
				return
			}
			if sig.Name != "org.freedesktop.DBus.NameOwnerChanged" || len(sig.Body) != 3 {
				continue
			}
			name, _ := sig.Body[0].(string)
			newOwner, _ := sig.Body[2].(string)
			if name != WatcherName {
				continue
			}
			if newOwner == "" {
				t.log.Info("StatusNotifierWatcher went away; tray icon hidden until it returns")
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := t.register(rctx)
			cancel()
			if err != nil {
				t.log.Warn("tray: StatusNotifierWatcher appeared but registration failed", "err", err)
			} else {
				t.log.Info("StatusNotifierWatcher appeared; tray icon registered")
			}
		}
	}
}

// SetStatus changes the item's status and emits NewStatus.
func (t *Tray) SetStatus(s Status) error {
	switch s {
	case Passive, Active, NeedsAttention:
	default:
		return fmt.Errorf("tray: unknown status %q", s)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.status == s {
		return nil
	}
	t.status = s
	t.itemProp.SetMust(ItemInterface, "Status", string(s))
	return t.emit(ItemPath, ItemInterface+".NewStatus", string(s))
}

// SetTitle changes the item's title and tooltip title and emits NewTitle and
// NewToolTip.
func (t *Tray) SetTitle(title string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.title = title
	t.itemProp.SetMust(ItemInterface, "Title", title)
	t.itemProp.SetMust(ItemInterface, "ToolTip", t.toolTipLocked())
	if err := t.emit(ItemPath, ItemInterface+".NewTitle"); err != nil {
		return err
	}
	return t.emit(ItemPath, ItemInterface+".NewToolTip")
}

// SetModel changes the "Model:" menu line (and the tooltip) to name; empty
// shows "Model: none". Hosts are told through LayoutUpdated and
// ItemsPropertiesUpdated.
func (t *Tray) SetModel(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if !t.menu.setModel(name) {
		return nil
	}
	t.itemProp.SetMust(ItemInterface, "ToolTip", t.toolTipLocked())
	if err := t.emit(ItemPath, ItemInterface+".NewToolTip"); err != nil {
		return err
	}
	return t.menu.emitModelChanged()
}

func (t *Tray) emit(path dbus.ObjectPath, name string, values ...any) error {
	if err := t.conn.Emit(path, name, values...); err != nil {
		return fmt.Errorf("tray: emit %s: %w", name, err)
	}
	return nil
}

// Close withdraws the item from the bus: it stops watching for the watcher,
// releases the bus name (which is how watchers learn an item is gone) and
// unexports the objects. The connection stays open. Close is idempotent.
func (t *Tray) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()

	t.conn.RemoveSignal(t.sigc)
	t.cancel()
	<-t.done
	var errs []error
	if err := t.conn.RemoveMatchSignal(t.matches...); err != nil && t.conn.Connected() {
		errs = append(errs, fmt.Errorf("remove match: %w", err))
	}
	if _, err := t.conn.ReleaseName(t.busName); err != nil && t.conn.Connected() {
		errs = append(errs, fmt.Errorf("release %s: %w", t.busName, err))
	}
	t.unexport()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tray: close: %w", err)
	}
	return nil
}

// callback runs fn, if set, on its own goroutine so that it never blocks a
// D-Bus handler and may call back into the Tray.
func (t *Tray) callback(fn func()) {
	if fn != nil {
		go fn()
	}
}
