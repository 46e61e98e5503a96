package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/ipc"
)

// Limits of the loopback TCP listener. The Unix socket has none of them:
// only its owner can reach it.
const (
	// MaxUnauthConns is how many TCP connections may be open without
	// having sent a request with the token. An idle one costs a goroutine
	// and a file descriptor, and lives at most TCPHeaderTimeout; past the
	// cap the oldest is closed to make room, so a process that opens
	// connections and sends nothing cannot lock the owner out by
	// exhausting file descriptors.
	MaxUnauthConns = 2048
	// TCPHeaderTimeout bounds the time to send a request's headers.
	TCPHeaderTimeout = 5 * time.Second
	// TCPReadTimeout bounds the time to send a whole request, body included.
	TCPReadTimeout = 5 * time.Minute
	// TCPIdleTimeout closes a kept-alive TCP connection with no request.
	TCPIdleTimeout = 30 * time.Second
	// TCPWriteIdleTimeout cuts a TCP connection whose peer stops reading:
	// each write must complete within it. A stream that keeps streaming is
	// never cut, however long it runs.
	TCPWriteIdleTimeout = 60 * time.Second
	// UnixWriteIdleTimeout does the same on the Unix socket: a local app
	// that stops reading a stream (hung, or never reading) held its slot
	// while the reply's tokens queued in memory without end.
	UnixWriteIdleTimeout = 60 * time.Second
)

// listen opens the Unix socket (or takes the ones systemd or launchd
// passed) and the optional TCP listener. On any failure it closes what it
// opened and removes the socket file it created.
func (s *Server) listen() (unixLns []net.Listener, tcp *tcpListener, err error) {
	activated, manager, err := activationListeners()
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.manager = manager
	s.mu.Unlock()
	createdSocket := false
	defer func() {
		if err == nil {
			return
		}
		for _, ln := range unixLns {
			ln.Close()
		}
		if createdSocket {
			os.Remove(s.cfg.SocketPath)
		}
	}()
	if len(activated) > 0 {
		for _, ln := range activated {
			unixLns = append(unixLns, &peerListener{Listener: ln, uid: uint32(os.Getuid()), log: s.log, writeIdle: s.unixWriteIdle()})
		}
	} else {
		ln, err := s.listenUnix()
		if err != nil {
			return nil, nil, err
		}
		createdSocket = true
		unixLns = append(unixLns, ln)
	}
	if s.cfg.TCPAddr != "" {
		if err := CheckTCPAddr(s.cfg.TCPAddr); err != nil {
			return unixLns, nil, err
		}
		ln, err := net.Listen("tcp", s.cfg.TCPAddr)
		if err != nil {
			return unixLns, nil, fmt.Errorf("listen %s: %w", s.cfg.TCPAddr, err)
		}
		tcp = newTCPListener(ln, MaxUnauthConns)
		tcp.trustSameUser = !s.cfg.RequireToken
	}
	return unixLns, tcp, nil
}

// CheckTCPAddr refuses a --listen address the daemon will not listen
// on: one that is not HOST:PORT, a port that is no TCP port, or a host
// that is not loopback.
func CheckTCPAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %s: only loopback addresses are allowed", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	return nil
}

func (s *Server) listenUnix() (net.Listener, error) {
	path := s.cfg.SocketPath
	if path == "" {
		return nil, errors.New("no socket path configured")
	}
	if err := ipc.CheckSocketPath(path); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := prepareSocketDir(dir, s.cfg.dirMode); err != nil {
		return nil, err
	}
	unlock, err := lockSocketPath(path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := clearStaleSocket(path, s.cfg.beforeStaleRemove); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	// Closing the listener (the shutdown's first step) unlinked whatever
	// was at path by then: another daemon's socket, when ours had been
	// removed (a /tmp cleaner) and that one started in its place, which
	// then ran unreachable. Run's end removes the file only if it is
	// still ours (removeOwnSocket).
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	// Chmod through the path would follow a symlink swapped in after
	// Listen; the directory is ours alone (checked above), so the path
	// still names our socket.
	if err := os.Chmod(path, s.cfg.socketMode); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	if s.socket, err = os.Lstat(path); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &peerListener{Listener: ln, uid: uint32(os.Getuid()), log: s.log, writeIdle: s.unixWriteIdle()}, nil
}

// prepareSocketDir creates the socket's directory (mode) when it is
// missing and refuses one another user could tamper with: a symlink, a
// directory owned by another uid, or one group- or world-writable (when
// mode itself is not). It looks at the directory itself (Lstat), never
// at what a symlink points to, as tmux and ssh-agent do.
func prepareSocketDir(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return fmt.Errorf("socket dir %s: %w", dir, err)
		}
		if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("socket dir %s: %w", dir, err)
		}
	}
	return checkSocketDir(dir, mode)
}

// checkSocketDir refuses a socket directory another user could tamper
// with (see prepareSocketDir).
func checkSocketDir(dir string, mode os.FileMode) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("socket dir %s is a symlink: refusing it (remove it, or set --socket elsewhere)", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("socket dir %s is not a directory", dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("socket dir %s is owned by uid %d, not us (uid %d): refusing it", dir, sys.Uid, os.Getuid())
	}
	if st.Mode().Perm()&0o022 != 0 && mode&0o022 == 0 {
		return fmt.Errorf("socket dir %s is group- or world-writable (%v): refusing it", dir, st.Mode().Perm())
	}
	return nil
}

// lockSocketPath takes the exclusive lock (flock) on path+".lock", the
// socket's lock file in its own directory, without waiting, and returns
// its release. Held from the stale socket's check to the new socket's
// listen, it keeps two daemons starting at once on a stale socket apart:
// both found nothing answering and removed it, and the second's removal
// took the first's new socket, which then served no one while it ran.
// The file is left in place (a lock on a removed file keeps nothing
// apart); the kernel releases the lock however the process ends.
func lockSocketPath(path string) (unlock func(), err error) {
	lp := path + ".lock"
	f, err := os.OpenFile(lp, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("socket lock %s: %w", lp, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another ruvllmd is starting on %s (it holds %s)", path, lp)
		}
		return nil, fmt.Errorf("socket lock %s: %w", lp, err)
	}
	return func() { f.Close() }, nil
}

// clearStaleSocket makes path free for a new socket: nothing there is
// fine; a socket nothing answers on is left over from a crash and is
// removed; a socket that answers is another daemon; anything else (a
// regular file, a directory, a symlink) is refused, never deleted.
// beforeRemove, when set, runs between the check and the removal (tests).
func clearStaleSocket(path string, beforeRemove func()) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if st.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("socket path %s exists and is %s, not a socket: refusing to replace it", path, gguf.FileKind(st.Mode()))
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("another ruvllmd is running on %s", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("socket %s: cannot tell whether a daemon answers there: %w", path, err)
	}
	if beforeRemove != nil {
		beforeRemove()
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// activationListeners returns sockets passed by systemd (LISTEN_FDS) or
// launchd, and which of the two passed them ("" for none).
func activationListeners() ([]net.Listener, string, error) {
	if pid, _ := strconv.Atoi(os.Getenv("LISTEN_PID")); pid == os.Getpid() {
		n, _ := strconv.Atoi(os.Getenv("LISTEN_FDS"))
		if n < 0 || n > 16 {
			return nil, "", fmt.Errorf("socket activation: LISTEN_FDS=%d is out of range", n)
		}
		var lns []net.Listener
		for fd := 3; fd < 3+n; fd++ {
			f := os.NewFile(uintptr(fd), "systemd-socket")
			ln, err := net.FileListener(f)
			f.Close()
			if err != nil {
				return nil, "", fmt.Errorf("socket activation fd %d: %w", fd, err)
			}
			lns = append(lns, ln)
		}
		os.Unsetenv("LISTEN_PID")
		os.Unsetenv("LISTEN_FDS")
		os.Unsetenv("LISTEN_FDNAMES")
		return lns, "systemd", nil
	}
	lns, err := launchdListeners()
	if err != nil || len(lns) == 0 {
		return nil, "", err
	}
	return lns, "launchd", nil
}

// peerListener closes connections from any user other than uid, and
// cuts those whose peer stops reading for writeIdle.
type peerListener struct {
	net.Listener
	uid       uint32
	log       *slog.Logger
	writeIdle time.Duration
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		// The daemon's side of the check names the peer, a client: the
		// ipc.CheckPeer error a client gets speaks of "the server", and
		// the log said the server on the socket ran as the refused uid.
		uid, err := ipc.PeerUID(c)
		switch {
		case err != nil:
			l.log.Warn("refused connection: its peer's uid is unknown", "err", err)
		case uid != l.uid:
			l.log.Warn("refused connection from another user", "peer_uid", uid, "uid", l.uid)
		default:
			return &writeIdleConn{Conn: c, idle: l.writeIdle}, nil
		}
		c.Close()
	}
}

// unixWriteIdle is how long a Unix-socket peer may stop reading.
func (s *Server) unixWriteIdle() time.Duration {
	if s.cfg.UnixWriteIdle > 0 {
		return s.cfg.UnixWriteIdle
	}
	return UnixWriteIdleTimeout
}

// writeIdleConn is a connection each write of which must complete within
// idle (none when 0): a peer that stops reading is cut, a stream that
// keeps flowing never is.
type writeIdleConn struct {
	net.Conn
	idle time.Duration
}

func (c *writeIdleConn) Write(b []byte) (int, error) {
	if c.idle > 0 {
		c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	}
	return c.Conn.Write(b)
}

// tcpListener hands out *tcpConn, which the handler must authenticate
// with the token, and bounds how many connections may stay open without
// having done so (MaxUnauthConns, oldest closed first).
type tcpListener struct {
	net.Listener
	max int
	// trustSameUser lets loopback clients of the daemon's own uid in
	// without the token where the platform tells (tcpPeerUID).
	trustSameUser bool
	// peerUID looks up a connection's user: tcpPeerUID, or a test's.
	peerUID func(net.Conn) (uint32, bool, error)

	mu     sync.Mutex
	unauth []*tcpConn // oldest first
}

func newTCPListener(ln net.Listener, max int) *tcpListener {
	return &tcpListener{Listener: ln, max: max, peerUID: tcpPeerUID}
}

func (l *tcpListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &tcpConn{Conn: c, ln: l}
	// A loopback peer of our own uid (readable from the kernel on Linux)
	// is the owner: no token needed, as on the Unix socket.
	if l.trustSameUser {
		uid, ok, err := l.peerUID(c)
		if ok && uid == uint32(os.Getuid()) {
			tc.sameUser, tc.authed = true, true
			return tc, nil
		}
		tc.peerErr = err
	}
	l.mu.Lock()
	var evict *tcpConn
	if len(l.unauth) >= l.max {
		evict = l.unauth[0]
		l.unauth = l.unauth[1:]
	}
	l.unauth = append(l.unauth, tc)
	l.mu.Unlock()
	if evict != nil {
		evict.Conn.Close()
	}
	return tc, nil
}

// Unauthenticated is the number of open TCP connections that have not
// sent the token yet.
func (l *tcpListener) Unauthenticated() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.unauth)
}

func (l *tcpListener) forget(c *tcpConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, u := range l.unauth {
		if u == c {
			l.unauth = append(l.unauth[:i], l.unauth[i+1:]...)
			return
		}
	}
}

// tcpConn is one loopback TCP connection. Each write must finish within
// TCPWriteIdleTimeout (a reader that stopped reading is cut off; a stream
// that keeps flowing is not).
type tcpConn struct {
	net.Conn
	ln *tcpListener
	// sameUser: the peer runs as the daemon's uid (tcpPeerUID).
	sameUser bool
	// peerErr: the peer's user could not be looked up (the daemon out of
	// file descriptors), so it may be the owner, who needs no token.
	peerErr error
	mu      sync.Mutex
	authed  bool
	closed  bool
}

// authenticated marks the connection as having presented the token.
func (c *tcpConn) authenticated() {
	c.mu.Lock()
	first := !c.authed
	c.authed = true
	c.mu.Unlock()
	if first {
		c.ln.forget(c)
	}
}

func (c *tcpConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(TCPWriteIdleTimeout))
	return c.Conn.Write(b)
}

func (c *tcpConn) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	if !already {
		c.ln.forget(c)
	}
	return c.Conn.Close()
}
