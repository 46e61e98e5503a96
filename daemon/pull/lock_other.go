//go:build !unix

package pull

// fileLock is a no-op where flock is missing: downloads of one file by
// two processes are not kept apart there.
type fileLock struct{}

func tryLock(string) (*fileLock, bool, error) { return &fileLock{}, false, nil }

func (l *fileLock) unlock() {}
