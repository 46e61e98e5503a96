package disk

import (
	"errors"
	"fmt"
	"os"
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
