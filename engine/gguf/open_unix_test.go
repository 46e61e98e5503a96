//go:build unix

package gguf

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesNonRegular: a FIFO (which would block os.Open until a
// writer comes) and a character device are refused at once, by name.
func TestOpenRefusesNonRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "model.gguf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "named pipe"},
		{"/dev/zero", "character device"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Open(tc.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%s) = %v, want an error naming a %s", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) hangs", tc.path)
		}
	}
}
