package ipc

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerUID returns the user id of the process at the other end of a Unix
// socket connection (SO_PEERCRED).
func PeerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("peer uid: %T is not a unix socket", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("peer uid: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("peer uid: %w", err)
	}
	if serr != nil {
		return 0, fmt.Errorf("peer uid: SO_PEERCRED: %w", serr)
	}
	return cred.Uid, nil
}
