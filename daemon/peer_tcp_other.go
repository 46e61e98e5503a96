//go:build !linux

package daemon

import "net"

// tcpPeerUID cannot tell a TCP peer's user on this platform: TCP clients
// always need the token here.
func tcpPeerUID(c net.Conn) (uint32, bool, error) { return 0, false, nil }

// tcpPeerUIDSupported: TCP peers' users are unknown here.
const tcpPeerUIDSupported = false
