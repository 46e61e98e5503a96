//go:build !linux && !darwin

package disk

import "os"

// CreateTemp is os.CreateTemp: this platform has no lock to mark the file
// as being written.
func CreateTemp(dir, pattern string) (*os.File, error) { return os.CreateTemp(dir, pattern) }

// inUse is unknown on this platform.
func inUse(string) bool { return false }
