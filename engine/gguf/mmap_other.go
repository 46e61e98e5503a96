//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gguf

import "os"

// mapFile reads the file into memory where mmap is unavailable.
func mapFile(fh *os.File, size int) ([]byte, func() error, error) {
	return readFile(fh, size)
}

// dropPages does nothing where files are not mapped.
func dropPages([]byte) error { return nil }
