//go:build !darwin

package statusicon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/ruvllm/ruvllm/app/notify"
	"github.com/ruvllm/ruvllm/app/tray"
	"github.com/ruvllm/ruvllm/internal/dbustest"
)

// watcher is a StatusNotifierWatcher that reports registrations.
type watcher struct{ reg chan string }

func (w *watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	w.reg <- service
	return nil
}

// server is a notification server that records summaries and bodies.
type server struct {
	mu   sync.Mutex
	got  []string
	hint map[string]dbus.Variant
	ms   int32
}

func (s *server) Notify(app string, replaces uint32, icon, summary, body string,
	actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, summary+"|"+body)
	s.hint, s.ms = hints, timeout
	return uint32(len(s.got)), nil
}

func (s *server) CloseNotification(id uint32) *dbus.Error { return nil }

func wait[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func TestNewOnSessionBus(t *testing.T) {
	addr := dbustest.Start(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)

	peer := dbustest.Connect(t, addr) // plays watcher, notification server and tray host
	w := &watcher{reg: make(chan string, 4)}
	srv := &server{}
	for _, o := range []struct {
		v     any
		path  dbus.ObjectPath
		iface string
	}{
		{w, tray.WatcherPath, tray.WatcherInterface},
		{srv, notify.ServicePath, notify.Interface},
	} {
		if err := peer.Export(o.v, o.path, o.iface); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{tray.WatcherName, notify.ServiceName} {
		if reply, err := peer.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			t.Fatalf("own %s: %v %v", name, reply, err)
		}
	}

	toggled, quit := make(chan struct{}, 1), make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	icon, err := New(ctx, Options{
		Model:    "tiny",
		OnToggle: func() { toggled <- struct{}{} },
		OnQuit:   func() { quit <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer icon.Close()
	name := wait(t, w.reg, "registration")

	item := peer.Object(name, tray.ItemPath)
	menu := peer.Object(name, tray.MenuPath)
	if err := item.CallWithContext(ctx, tray.ItemInterface+".Activate", 0, int32(0), int32(0)).Err; err != nil {
		t.Fatal(err)
	}
	wait(t, toggled, "OnToggle after Activate")
	// Item 4 is Quit in app/tray's menu.
	if err := menu.CallWithContext(ctx, tray.MenuInterface+".Event", 0, int32(4), "clicked", dbus.MakeVariant(""), uint32(0)).Err; err != nil {
		t.Fatal(err)
	}
	wait(t, quit, "OnQuit after the Quit item")

	label := func() string {
		var v dbus.Variant
		if err := menu.CallWithContext(ctx, tray.MenuInterface+".GetProperty", 0, int32(2), "label").Store(&v); err != nil {
			t.Fatal(err)
		}
		s, _ := v.Value().(string)
		return s
	}
	if got := label(); got != "Model: tiny" {
		t.Errorf("model line %q, want the initial model", got)
	}
	if err := icon.SetModel("llama"); err != nil {
		t.Fatal(err)
	}
	if got := label(); got != "Model: llama" {
		t.Errorf("model line %q after SetModel", got)
	}
	if err := icon.SetMenuBarMode(true); err != nil {
		t.Errorf("SetMenuBarMode on Linux: %v, want nil", err)
	}

	if err := icon.Notify(ctx, "Model loaded", "llama is ready"); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	got, ms, urgency := srv.got, srv.ms, srv.hint["urgency"].Value()
	srv.mu.Unlock()
	if len(got) != 1 || got[0] != "Model loaded|llama is ready" || ms != 5000 || urgency != byte(notify.Normal) {
		t.Errorf("server got %q, timeout %d ms, urgency %v", got, ms, urgency)
	}

	if err := icon.Close(); err != nil {
		t.Fatal(err)
	}
	if err := icon.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var owned bool
	if err := peer.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned); err != nil {
		t.Fatal(err)
	}
	if owned {
		t.Errorf("%s still owned after Close", name)
	}
	if err := icon.SetModel("x"); err == nil {
		t.Error("SetModel after Close returned nil")
	}
}

func TestNewWithoutSessionBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+t.TempDir()+"/no-bus")
	if _, err := New(context.Background(), Options{}); err == nil {
		t.Fatal("New without a session bus returned nil")
	}
	// No address at all (a terminal without a session): ErrNoSessionBus,
	// and dbus-launch is never run (it printed warnings there).
	if _, err := os.Stat(fmt.Sprintf("/run/user/%d/bus", os.Getuid())); err == nil {
		t.Skip("this machine has a session bus in /run/user")
	}
	bin, mark := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(bin, "dbus-launch"), []byte("#!/bin/sh\ntouch "+mark+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if _, err := New(context.Background(), Options{}); !errors.Is(err, ErrNoSessionBus) {
		t.Fatalf("New with no bus address: %v, want ErrNoSessionBus", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("New ran dbus-launch")
	}
}
