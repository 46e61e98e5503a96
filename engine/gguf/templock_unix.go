//go:build unix

package gguf

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockTemp marks f as a temporary file being written: an exclusive flock
// on its descriptor, which the kernel releases when the writer ends,
// however it ends (kill -9 too).
func lockTemp(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// abandoned reports whether no writer holds the temporary file at path
// (lockTemp's lock can be taken): its writer was cut off.
func abandoned(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close() // releases the lock taken here
	// Where locks are unsupported (ENOLCK on some network file systems)
	// nothing counts as abandoned: a live writer's file is never removed.
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}
