package sessionbus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/internal/dbustest"
)

// TestNoBusNeverRunsDBusLaunch: without a bus address Connect fails with
// ErrNoSessionBus and never runs dbus-launch (a dbus-launch first on PATH
// would leave a mark); with DBUS_SESSION_BUS_ADDRESS, or a bus socket in
// $XDG_RUNTIME_DIR, it connects.
func TestNoBusNeverRunsDBusLaunch(t *testing.T) {
	bin := t.TempDir()
	mark := filepath.Join(t.TempDir(), "dbus-launch-ran")
	script := "#!/bin/sh\necho ran > " + mark + "\necho 'dbus-launch: warning' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "dbus-launch"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	// godbus also looks in /run/user/UID: a machine with a session bus
	// there has a bus to find.
	if _, err := os.Stat(fmt.Sprintf("/run/user/%d/bus", os.Getuid())); err == nil {
		t.Skip("this machine has a session bus in /run/user: nothing to test without one")
	}
	for _, addr := range []string{"", "autolaunch:"} {
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
		conn, err := Connect()
		if conn != nil {
			conn.Close()
		}
		if !errors.Is(err, ErrNoSessionBus) {
			t.Fatalf("DBUS_SESSION_BUS_ADDRESS=%q: err %v, want ErrNoSessionBus", addr, err)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("DBUS_SESSION_BUS_ADDRESS=%q: dbus-launch ran", addr)
		}
	}

	busAddr := dbustest.Start(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", busAddr)
	conn, err := Connect()
	if err != nil {
		t.Fatalf("with a bus address: %v", err)
	}
	if names := conn.Names(); len(names) == 0 || names[0] == "" {
		t.Fatalf("connected without a unique name: %v", names)
	}
	conn.Close()

	// The bus socket in $XDG_RUNTIME_DIR, without an address.
	path, ok := strings.CutPrefix(busAddr, "unix:path=")
	path, _, _ = strings.Cut(path, ",")
	if ok {
		runtime := t.TempDir()
		if err := os.Symlink(path, filepath.Join(runtime, "bus")); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_RUNTIME_DIR", runtime)
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
		conn, err := Connect()
		if err != nil {
			t.Fatalf("with $XDG_RUNTIME_DIR/bus: %v", err)
		}
		conn.Close()
	}

	// A bus address that names nothing is an error, but not "no bus".
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "nothing"))
	if _, err := Connect(); err == nil || errors.Is(err, ErrNoSessionBus) {
		t.Fatalf("dead bus address: %v", err)
	}
}
