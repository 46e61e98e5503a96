// Package ipc is how local apps reach ruvllmd: where its socket lives, who
// may connect, the wire types of its API and a Go client. It imports only
// the standard library and golang.org/x/sys, so any app can embed it.
package ipc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// EnvSocket overrides the socket path.
const EnvSocket = "RUVLLM_SOCKET"

// ErrSocketPathTooLong is returned for a socket path longer than a Unix
// socket's address holds. The kernel's own answer, "bind: invalid
// argument" to the daemon and "connect: invalid argument" to a client,
// which reported the daemon as not running, named nothing of the cause.
var ErrSocketPathTooLong = errors.New("socket path too long")

// MaxSocketPath is the longest path a Unix socket may have: its address
// (sun_path) holds 108 bytes on Linux and 104 on macOS and the BSDs, the
// path's terminating NUL included.
func MaxSocketPath() int {
	if runtime.GOOS == "linux" {
		return 107
	}
	return 103
}

// CheckSocketPath returns ErrSocketPathTooLong, saying what to do, for a
// path longer than MaxSocketPath.
func CheckSocketPath(path string) error {
	if n := len(path); n > MaxSocketPath() {
		return fmt.Errorf("%w: %s is %d bytes long, and a Unix socket's path holds at most %d: choose a shorter one (--socket or $%s)",
			ErrSocketPathTooLong, path, n, MaxSocketPath(), EnvSocket)
	}
	return nil
}

// SocketPath returns where ruvllmd listens: $RUVLLM_SOCKET, else
// $XDG_RUNTIME_DIR/ruvllm/ruvllm.sock on Linux (/tmp/ruvllm-<uid>/ when
// unset) and ~/Library/Application Support/ruvllm/ruvllm.sock on macOS.
func SocketPath() (string, error) {
	if p := os.Getenv(EnvSocket); p != "" {
		return p, nil
	}
	if runtime.GOOS == "darwin" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("socket path: %w", err)
		}
		return filepath.Join(home, "Library", "Application Support", "ruvllm", "ruvllm.sock"), nil
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, "ruvllm", "ruvllm.sock"), nil
	}
	if os.Getuid() < 0 {
		return "", errors.New("socket path: no XDG_RUNTIME_DIR and no uid")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("ruvllm-%d", os.Getuid()), "ruvllm.sock"), nil
}
