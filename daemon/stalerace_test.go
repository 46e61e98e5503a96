package daemon

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestStaleSocketRaceOneDaemonListens: two daemons (state dirs of their
// own) starting at once on a stale socket. The second finds it stale and,
// before removing it, the first removes it too and listens. The second
// then removed the first's new socket and listened in its place: both
// ran, and the first served no one. Now the first is refused while the
// second clears the path, and the socket there is the second's.
func TestStaleSocketRaceOneDaemonListens(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "s.sock")
	first, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "a"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Store().Close()
	var firstLn net.Listener
	var firstErr error
	second, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "b"), Logger: quietLogger(),
		beforeStaleRemove: func() { firstLn, firstErr = first.listenUnix() }})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Store().Close()
	if err := prepareSocketDir(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	secondLn, secondErr := second.listenUnix()
	if firstLn != nil {
		defer firstLn.Close()
	}
	if secondErr != nil {
		t.Fatalf("the second daemon: %v", secondErr)
	}
	defer secondLn.Close()
	if firstErr == nil {
		t.Fatal("both daemons listen on one socket path: the first is unreachable")
	}
	if !strings.Contains(firstErr.Error(), "another ruvllmd is starting on "+sock) {
		t.Errorf("the first daemon's refusal: %v", firstErr)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial the socket: %v", err)
	}
	c.Close()
}
