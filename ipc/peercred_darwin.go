package ipc

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerUID returns the user id of the process at the other end of a Unix
// socket connection (LOCAL_PEERCRED, as getpeereid does).
func PeerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("peer uid: %T is not a unix socket", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("peer uid: %w", err)
	}
	var cred *unix.Xucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("peer uid: %w", err)
	}
	if serr != nil {
		return 0, fmt.Errorf("peer uid: LOCAL_PEERCRED: %w", serr)
	}
	return cred.Uid, nil
}
