package main

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestDaemonStopsGracefullyOnSignals: SIGINT, SIGTERM and SIGHUP (the
// terminal of a foreground daemon closing) each stop the daemon through its
// shutdown: it exits 0 and removes its socket. SIGHUP used to end the
// process at once (exit by signal, the socket left behind, no prefix-cache
// snapshot saved).
func TestDaemonStopsGracefullyOnSignals(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGINT", syscall.SIGINT}, {"SIGTERM", syscall.SIGTERM}, {"SIGHUP", syscall.SIGHUP}} {
		t.Run(tc.name, func(t *testing.T) {
			d := startHelperDaemon(t, t.TempDir(), "", nil)
			if err := d.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-d.exited:
				d.exited <- err // for the cleanup's wait
			case <-time.After(60 * time.Second):
				t.Fatalf("daemon still running a minute after %s", tc.name)
			}
			if err != nil {
				t.Fatalf("daemon after %s: %v; want a clean exit", tc.name, err)
			}
			if _, err := os.Lstat(d.sock); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("socket %s after %s: %v; want it removed", d.sock, tc.name, err)
			}
		})
	}
}
