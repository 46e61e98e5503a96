package ipc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
)

// ErrForeignServer is returned by DialSocket when the process listening on
// the socket runs as another user. Talking to it would hand that user the
// prompts, conversations and files a client sends, so no byte is written.
var ErrForeignServer = errors.New("the server on the socket runs as another user")

// DialSocket connects to the Unix socket at path and checks, before the
// caller writes anything, that the process listening there runs as the
// same user as this one (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS).
// Every Go client of the daemon dials through it: a socket path under
// /tmp can be created first by another local user, and the check is what
// keeps requests from reaching an impostor.
func DialSocket(ctx context.Context, path string) (net.Conn, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if err := CheckPeer(c, uint32(os.Getuid())); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// CheckPeer returns ErrForeignServer (wrapped with the peer's uid) unless
// the process at the other end of the Unix connection c runs as uid.
func CheckPeer(c net.Conn, uid uint32) error {
	got, err := PeerUID(c)
	if err != nil {
		return err
	}
	if got != uid {
		return fmt.Errorf("%w (uid %d, we are uid %d): refusing to talk to it", ErrForeignServer, got, uid)
	}
	return nil
}
