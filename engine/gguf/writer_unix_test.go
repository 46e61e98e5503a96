//go:build unix

package gguf

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteFileKeepsSpecialFiles: WriteFile onto a named pipe (standing in
// for /dev/null, which `ruvllm quantize IN /dev/null TYPE` replaced with the
// model when run as root) or a directory fails and leaves the path as it was,
// with no temporary file behind.
func TestWriteFileKeepsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "null")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sub := filepath.Join(dir, "sub.gguf")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	w := NewWriter()
	if err := w.AddKV("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "named pipe"},
		{sub, "directory"},
	} {
		err := w.WriteFile(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteFile(%s) = %v, want an error naming a %s", tc.path, err, tc.want)
		}
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the named pipe was replaced: %v %v", st.Mode(), err)
	}
	if st, err := os.Lstat(sub); err != nil || !st.IsDir() {
		t.Errorf("the directory was replaced: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("left behind: %v", ents)
	}
}
