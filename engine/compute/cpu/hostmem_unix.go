//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cpu

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// allocWeights returns n bytes of anonymous memory outside the Go heap for
// weights the backend repacks: on the heap, hundreds of MiB of long-lived
// weights would raise the garbage collector's target by as much, and the
// daemon's garbage could then grow that far before a collection.
// freeWeights returns it.
func allocWeights(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes for repacked weights: %w", n, err)
	}
	return b, nil
}

func freeWeights(b []byte) { _ = unix.Munmap(b) }
