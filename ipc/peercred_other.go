//go:build !linux && !darwin

package ipc

import (
	"errors"
	"net"
)

// PeerUID is not available on this platform; the daemon refuses to serve
// a Unix socket it cannot authenticate.
func PeerUID(c net.Conn) (uint32, error) {
	return 0, errors.New("peer uid: not supported on this platform")
}
