//go:build unix

package pull

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fileLock is an exclusive advisory lock (flock) on a file, held by the
// open descriptor: the kernel releases it when the process ends, however
// it ends.
type fileLock struct {
	f    *os.File
	path string
}

// tryLock takes the lock on path (created when missing) without waiting;
// busy reports that another process (or download) holds it.
func tryLock(path string) (l *fileLock, busy bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("pull: lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("pull: lock %s: %w", path, err)
	}
	// The holder before us may have removed the file as it let go: a lock
	// on a file no longer at path keeps nothing apart, so try again.
	held, err := f.Stat()
	named, nerr := os.Stat(path)
	if err != nil || nerr != nil || !os.SameFile(held, named) {
		f.Close()
		return nil, true, nil
	}
	return &fileLock{f: f, path: path}, false, nil
}

// unlock removes the lock file and releases the lock.
func (l *fileLock) unlock() {
	os.Remove(l.path)
	l.f.Close()
}
