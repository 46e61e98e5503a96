//go:build linux || darwin

package disk

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// CreateTemp is os.CreateTemp with the file locked (flock, exclusive) for
// as long as it stays open, so that RemoveTemp, run by another daemon
// sharing the directory (a models, cache or adapters directory is shared
// by daemons with state directories of their own), leaves it alone. The
// kernel drops the lock however the writer ends, so a kill -9's leftovers
// are removed at the next start.
func CreateTemp(dir, pattern string) (*os.File, error) {
	for {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		// A RemoveTemp between the creation and the lock removed it:
		// a lock on a file no longer in dir keeps nothing, make another.
		held, err := f.Stat()
		named, nerr := os.Lstat(f.Name())
		if err == nil && nerr == nil && os.SameFile(held, named) {
			return f, nil
		}
		f.Close()
	}
}

// inUse reports whether the file at p is locked by a writer that made it
// with CreateTemp and still has it open.
func inUse(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK)
}
