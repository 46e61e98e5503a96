package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStopActivatedWithoutManager: a daemon handed its socket by a
// launcher that is not the service ruvllm installs (systemd-socket-activate,
// a unit of the user's own) says "started by systemd", but no manager on
// the session bus can stop it. Stop failed ("service stop: ... no D-Bus
// session bus") and left it running; now it says so and sends SIGTERM.
func TestStopActivatedWithoutManager(t *testing.T) {
	dir := t.TempDir()
	d := startActivatedDaemon(t, dir)
	// No session bus answers there.
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "no-bus"))

	_, errOut, err := runCLI(t, newStopCmd())
	if err != nil {
		t.Fatalf("stop: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "sending SIGTERM") || !strings.Contains(errOut, "through SIGTERM") ||
		strings.Contains(errOut, "its socket stays") {
		t.Errorf("stop said:\n%s", errOut)
	}
	if !processGone(d.cmd.Process.Pid) {
		t.Fatal("stop returned, the daemon process is still there")
	}
}
