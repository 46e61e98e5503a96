// Package sessionbus connects to the user's D-Bus session bus without ever
// starting one: godbus's ConnectSessionBus runs dbus-launch when no bus
// address is known, which in a terminal without a session prints
// dbus-launch's complaints (or, under X11, leaves a stray bus daemon
// behind). Here "no session bus" is a plain error callers can recognise.
package sessionbus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/godbus/dbus/v5"
)

// ErrNoSessionBus says that no session bus address is known:
// DBUS_SESSION_BUS_ADDRESS is unset and the runtime directory holds no
// bus socket.
var ErrNoSessionBus = errors.New("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset and there is no $XDG_RUNTIME_DIR/bus)")

// Connect returns a private, authenticated connection to the session bus
// (DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus or
// /run/user/UID/bus), or ErrNoSessionBus. It never runs dbus-launch.
func Connect(opts ...dbus.ConnOption) (*dbus.Conn, error) {
	addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if addr == "autolaunch:" {
		// The address that means "run dbus-launch": treat it as none.
		addr = ""
		os.Unsetenv("DBUS_SESSION_BUS_ADDRESS")
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); addr == "" && dir != "" {
		if st, err := os.Stat(filepath.Join(dir, "bus")); err == nil && st.Mode()&os.ModeSocket != 0 {
			os.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+dbus.EscapeBusAddressValue(filepath.Join(dir, "bus")))
		}
	}
	conn, err := dbus.SessionBusPrivateNoAutoStartup(opts...)
	if err != nil {
		// godbus sets DBUS_SESSION_BUS_ADDRESS when it finds a bus in the
		// runtime directory, so an unset one means it found none.
		if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
			return nil, ErrNoSessionBus
		}
		return nil, fmt.Errorf("session bus: %w", err)
	}
	if err := conn.Auth(nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("session bus: authenticate: %w", err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("session bus: hello: %w", err)
	}
	return conn, nil
}
