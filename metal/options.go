package metal

import "errors"

// Options configures the Metal backend.
type Options struct {
	// Threads is the number of threads of the CPU backend that runs the
	// operations Metal does not implement; 0 means all cores.
	Threads int
}

// ErrUnavailable is returned by New on systems without Metal.
var ErrUnavailable = errors.New("metal backend is only available on macOS")

// ErrNoDevice is returned by New on a Mac without a Metal device (a
// virtual machine without GPU access, for example).
var ErrNoDevice = errors.New("no Metal device")

// ErrOutOfMemory is returned when the device cannot allocate a buffer.
var ErrOutOfMemory = errors.New("out of device memory")
