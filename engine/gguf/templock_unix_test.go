//go:build unix

package gguf

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteFileRemovesAbandonedTemp: the temporary file a WriteFile killed
// mid-write (`ruvllm quantize` killed with kill -9) left beside its output
// is removed by the next WriteFile of that output; it stayed for good. A
// temporary file a live writer holds, and files not WriteFile's own for
// that path, are left.
func TestWriteFileRemovesAbandonedTemp(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.gguf")
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("GGUF partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A writer still at work holds its file's lock.
	live := write(".out.gguf.tmp222")
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Skipf("flock: %v", err)
	}
	for _, tc := range []struct {
		name string
		kept bool
	}{
		{".out.gguf.tmp111", false},       // a killed writer's: no lock held
		{".out.gguf.tmp-notes", true},     // not os.CreateTemp's name
		{".out.gguf.tmp", true},           // nor is this
		{".other.gguf.tmp333", true},      // another output's
		{"out.gguf.tmp444", true},         // not hidden: not WriteFile's
		{".out.gguf.tmp555.backup", true}, // not WriteFile's
	} {
		write(tc.name)
		defer func() {
			_, err := os.Stat(filepath.Join(dir, tc.name))
			if kept := err == nil; kept != tc.kept {
				t.Errorf("%s kept = %v, want %v", tc.name, kept, tc.kept)
			}
		}()
	}
	w := NewWriter()
	if err := w.AddKV("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live writer's temporary file was removed: %v", err)
	}
	g, err := Open(out)
	if err != nil {
		t.Fatalf("the output: %v", err)
	}
	g.Close()
}
