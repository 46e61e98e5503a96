package ipc

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDialPermissionDeniedIsNotNotRunning: a socket this user may not
// reach (another user's path, e.g. a $XDG_RUNTIME_DIR that `su` kept) is
// ErrSocketDenied, not ErrNotRunning: `ruvllm status` said "nothing
// answers", `ruvllm stop` said there was nothing to stop, and `ruvllm
// chat` started a daemon of its own, which failed to make its socket.
func TestDialPermissionDeniedIsNotNotRunning(t *testing.T) {
	dialErr := func(errno syscall.Errno) error {
		return &url.Error{Op: "Get", URL: "http://ruvllm/v1/health", Err: &net.OpError{Op: "dial", Net: "unix",
			Err: os.NewSyscallError("connect", errno)}}
	}
	for _, tc := range []struct {
		name       string
		err        error
		notRunning bool
		denied     bool
	}{
		{"no socket", dialErr(syscall.ENOENT), true, false},
		{"stale socket", dialErr(syscall.ECONNREFUSED), true, false},
		{"permission denied", dialErr(syscall.EACCES), false, true},
		{"not permitted", dialErr(syscall.EPERM), false, true},
		{"another user's server", ErrForeignServer, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := dialFailure(tc.err)
			if errors.Is(got, ErrNotRunning) != tc.notRunning || errors.Is(got, ErrSocketDenied) != tc.denied {
				t.Errorf("dialFailure: %v; want not running %v, denied %v", got, tc.notRunning, tc.denied)
			}
		})
	}

	// The real thing, where permissions apply (not to root).
	if os.Geteuid() == 0 {
		return
	}
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o700)
	ln, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(dir, 0)
	defer os.Chmod(dir, 0o700)
	if _, err := Dial(context.Background(), WithSocket(filepath.Join(dir, "s.sock"))); !errors.Is(err, ErrSocketDenied) {
		t.Errorf("Dial a socket in a directory we may not enter: %v, want ErrSocketDenied", err)
	}
}
