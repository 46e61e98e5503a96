// Package dbustest starts a private D-Bus message bus for tests of code that
// talks to session-bus services (the tray icon, desktop notifications).
//
// The bus is a real dbus-daemon (Debian package dbus) with a minimal
// configuration: it listens on a socket in the test's temporary directory,
// allows everything, and has no service directories, so nothing installed on
// the machine can be auto-started behind a test's back. Tests that need it
// are skipped, with the reason, when dbus-daemon is not installed.
package dbustest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// config is a session-like bus configuration without service activation.
const config = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=%DIR%</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// Start runs a private dbus-daemon for the duration of the test and returns
// its address. The daemon is killed in t.Cleanup.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("dbus-daemon not installed (Debian package dbus): private session bus unavailable")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(config, "%DIR%", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+cfg, "--nofork", "--nopidfile", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// dbus-daemon complains on stderr about things that do not matter to a
	// test (it cannot raise its fd limit without privileges); show its
	// output only when the test fails.
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("dbus-daemon stderr:\n%s", stderr.String())
		}
	})
	addrc := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addrc <- strings.TrimSpace(line)
		io.Copy(io.Discard, out)
	}()
	select {
	case a := <-addrc:
		if a == "" {
			t.Fatal("dbus-daemon printed no address")
		}
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon did not print its address within 10s")
	}
	return ""
}

// syncBuffer collects the daemon's stderr, written by os/exec's copier.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Connect opens a new client connection to the bus at addr, closed in
// t.Cleanup. Each call is a separate peer with its own unique name.
func Connect(t testing.TB, addr string) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to private bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
