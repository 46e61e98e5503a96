package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	free, ok := Free(dir)
	if !ok {
		t.Skip("free space unknown on this platform")
	}
	if free <= 0 {
		t.Fatalf("free space %d", free)
	}
	if err := Check(dir, 1); err != nil && free > Margin+1 {
		t.Fatalf("1 byte: %v (free %d)", err, free)
	}
	if err := Check(dir, free); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("all free bytes: %v, want ErrNoSpace", err)
	}
	if err := Check(dir+"/missing", 1<<62); err != nil {
		t.Fatalf("unreadable dir: %v, want nil", err)
	}
}

func TestIsFull(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, true},
		{fmt.Errorf("copy: %w", syscall.EDQUOT), true},
		{fmt.Errorf("x: %w", ErrNoSpace), true},
		{os.ErrPermission, false},
		{nil, false},
	} {
		if got := IsFull(c.err); got != c.want {
			t.Errorf("IsFull(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestRemoveTemp: the temporary files of uploads a crash cut off are
// removed; other files, and names that merely contain the prefix, stay.
func TestRemoveTemp(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".upload-123", 100)
	write(".stage-9", 10)
	write("model.gguf", 5)
	write("x.upload-1", 5)
	if err := os.MkdirAll(filepath.Join(dir, ".stage-dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(".stage-dir/adapter_config.json", 3)
	if freed := RemoveTemp(dir, ".upload-", ".stage-"); freed < 110 {
		t.Fatalf("freed %d bytes, want at least 110", freed)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if len(left) != 2 || left[0] != "model.gguf" || left[1] != "x.upload-1" {
		t.Fatalf("left %v", left)
	}
	if RemoveTemp(filepath.Join(dir, "missing")) != 0 {
		t.Fatal("a missing directory frees nothing")
	}
}
