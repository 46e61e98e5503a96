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
