//go:build !linux && !darwin

package disk

// Free is unknown on this platform.
func Free(dir string) (int64, bool) { return 0, false }
