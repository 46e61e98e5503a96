package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestClearStaleSocketNamesKind: the refusal says what is in the way (its
// mode's type bits alone printed a regular file as "----------").
func TestClearStaleSocketNamesKind(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	link := filepath.Join(dir, "link")
	os.Symlink(file, link)
	for _, tc := range []struct{ path, want string }{
		{file, "is a regular file, not a socket"},
		{sub, "is a directory, not a socket"},
		{link, "is a symlink, not a socket"},
	} {
		if err := clearStaleSocket(tc.path, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}

func TestClearStaleSocket(t *testing.T) {
	dir := t.TempDir()
	// A regular file is refused and left alone.
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("precious"), 0o600)
	if err := clearStaleSocket(file, nil); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("regular file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "precious" {
		t.Fatal("the regular file was touched")
	}
	// So is a directory, and a symlink to a socket.
	if err := clearStaleSocket(dir, nil); err == nil {
		t.Fatal("a directory was accepted")
	}
	// A socket that answers belongs to another daemon.
	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := clearStaleSocket(live, nil); err == nil || !strings.Contains(err.Error(), "another ruvllmd") {
		t.Fatalf("live socket: %v", err)
	}
	link := filepath.Join(dir, "link.sock")
	os.Symlink(live, link)
	if err := clearStaleSocket(link, nil); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("symlink to a socket: %v", err)
	}
	// A socket nothing answers on is stale and removed.
	stale := filepath.Join(dir, "stale.sock")
	l2, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l2.(*net.UnixListener).SetUnlinkOnClose(false)
	l2.Close()
	if err := clearStaleSocket(stale, nil); err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Fatal("the stale socket is still there")
	}
	if err := clearStaleSocket(filepath.Join(dir, "none"), nil); err != nil {
		t.Fatalf("nothing there: %v", err)
	}
}

// TestSocketPathTooLong: the daemon refuses a socket path longer than a
// Unix socket's address holds with the limit named, not the kernel's
// "bind: invalid argument".
func TestSocketPathTooLong(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, strings.Repeat("s", ipc.MaxSocketPath()+1-len(dir)-1))
	s, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run(context.Background(), time.Second)
	if !errors.Is(err, ipc.ErrSocketPathTooLong) || !strings.Contains(err.Error(), "--socket") {
		t.Fatalf("Run = %v, want ErrSocketPathTooLong saying what to do", err)
	}
}

func TestSocketDirRefused(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	os.Mkdir(target, 0o700)
	link := filepath.Join(base, "link")
	os.Symlink(target, link)
	wide := filepath.Join(base, "wide")
	os.Mkdir(wide, 0o700)
	os.Chmod(wide, 0o777)
	cases := map[string]string{link: "symlink", wide: "writable"}
	if os.Getuid() == 0 {
		foreign := filepath.Join(base, "foreign")
		os.Mkdir(foreign, 0o700)
		os.Chown(foreign, 65534, 65534)
		cases[foreign] = "owned by uid 65534"
	}
	for dir, want := range cases {
		err := prepareSocketDir(dir, 0o700)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", dir, err, want)
		}
	}
	fresh := filepath.Join(base, "fresh", "ruvllm")
	if err := prepareSocketDir(fresh, 0o700); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(fresh); st.Mode().Perm() != 0o700 {
		t.Fatalf("created with mode %v", st.Mode().Perm())
	}
}

// TestPeerListenerLogsRefusedClient checks what the daemon logs when it
// refuses a connection of another uid: the client's uid, and not the
// client's own error text, which says the server runs as another user.
func TestPeerListenerLogsRefusedClient(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf syncBuffer
	// Serving another uid than ours makes this process the foreign peer.
	pl := &peerListener{Listener: ln, uid: uint32(os.Getuid()) + 1, log: slog.New(slog.NewTextHandler(&logBuf, nil))}
	accepted := make(chan error, 1)
	go func() {
		c, err := pl.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// The listener logs before it closes the connection: EOF here means
	// the line is written.
	if n, _ := c.Read(make([]byte, 1)); n != 0 {
		t.Fatal("a refused connection was answered")
	}
	c.Close()
	ln.Close()
	if err := <-accepted; err == nil {
		t.Fatal("Accept returned the refused connection")
	}
	got := logBuf.String()
	want := fmt.Sprintf("peer_uid=%d", os.Getuid())
	if !strings.Contains(got, "refused connection from another user") || !strings.Contains(got, want) || strings.Contains(got, "server") {
		t.Fatalf("log %q, want the refusal naming %s and no server", got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	tok, err := loadToken(path, quietLogger())
	if err != nil || len(tok) != 2*TokenBytes {
		t.Fatalf("created token %q, %v", tok, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", st.Mode().Perm())
	}
	if again, _ := loadToken(path, quietLogger()); again != tok {
		t.Fatal("a good token file was replaced")
	}
	good := strings.Repeat("ab", TokenBytes)
	for name, setup := range map[string]func(){
		"readable by others": func() { os.WriteFile(path, []byte(good), 0o644); os.Chmod(path, 0o644) },
		"short":              func() { os.Remove(path); os.WriteFile(path, []byte("abcd1234"), 0o600) },
		"not hex":            func() { os.Remove(path); os.WriteFile(path, []byte(strings.Repeat("z", 80)), 0o600) },
		"symlink":            func() { os.Remove(path); os.WriteFile(path+".t", []byte(good), 0o600); os.Symlink(path+".t", path) },
	} {
		t.Run(name, func(t *testing.T) {
			setup()
			got, err := loadToken(path, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			if got == good || len(got) != 2*TokenBytes {
				t.Fatalf("untrusted token file kept (%q)", got)
			}
			st, _ := os.Lstat(path)
			if !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
				t.Fatalf("replacement mode %v", st.Mode())
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		header, tok string
		ok          bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"abc", "", false},
		{"Basic abc", "", false},
		{"Bearer ", "", false},
		{"Bearerabc", "", false},
		{"", "", false},
	} {
		h := http.Header{}
		if c.header != "" {
			h.Set("Authorization", c.header)
		}
		tok, ok := bearerToken(h)
		if tok != c.tok || ok != c.ok {
			t.Errorf("%q: got %q %v, want %q %v", c.header, tok, ok, c.tok, c.ok)
		}
	}
}

func TestUnauthenticatedConnectionsCapped(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newTCPListener(inner, 2) // trusts no one without the token
	defer ln.Close()
	var clients []net.Conn
	var served []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		served = append(served, s)
	}
	if n := ln.Unauthenticated(); n != 2 {
		t.Fatalf("%d unauthenticated connections open, cap 2", n)
	}
	// The oldest was closed to make room for the third.
	clients[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := clients[0].Read(make([]byte, 1)); err == nil {
		t.Fatal("the oldest unauthenticated connection is still open")
	}
	// An authenticated connection no longer counts.
	served[2].(*tcpConn).authenticated()
	if n := ln.Unauthenticated(); n != 1 {
		t.Fatalf("%d unauthenticated after one authenticated, want 1", n)
	}
}

// startServer runs a Server with a TCP listener; it returns the server's
// TCP address and the token.
func startServer(t *testing.T, mutate func(*Config)) (*Server, string, chan error, context.CancelFunc) {
	t.Helper()
	dir := t.TempDir()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	cfg := Config{SocketPath: filepath.Join(dir, "run", "s.sock"), StateDir: filepath.Join(dir, "state"), TCPAddr: addr,
		MaxBodyBytes: 1 << 20, Logger: quietLogger(), RequireToken: true}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s, addr, done, cancel
}

func TestTCPUnauthorizedClosesConnection(t *testing.T) {
	s, addr, _, _ := startServer(t, nil)
	for _, auth := range []string{"", s.Token(), "Basic " + s.Token(), "Bearer wrong"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		req := "GET /v1/health HTTP/1.1\r\nHost: x\r\n"
		if auth != "" {
			req += "Authorization: " + auth + "\r\n"
		}
		c.Write([]byte(req + "\r\n"))
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", auth, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !resp.Close {
			t.Fatalf("%q: status %d close %v, want 401 and Connection: close", auth, resp.StatusCode, resp.Close)
		}
		if _, err := br.ReadByte(); err == nil {
			t.Fatalf("%q: the connection stayed open after the 401", auth)
		}
		c.Close()
	}
	// Ollama clients read {"error": "..."} on /api/.
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/tags", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(string(b), `{"error":"missing or wrong token`) {
		t.Fatalf("/api/ 401: %d %s", resp.StatusCode, b)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 401 {
		t.Fatal("the right token was refused")
	}
}

func TestTCPIdleConnectionWithoutRequestIsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the header timeout")
	}
	_, addr, _, _ := startServer(t, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET /v1/health HTTP/1.1\r\n")) // and never the rest
	c.SetReadDeadline(time.Now().Add(TCPHeaderTimeout + 3*time.Second))
	start := time.Now()
	io.Copy(io.Discard, c)
	if el := time.Since(start); el > TCPHeaderTimeout+2*time.Second {
		t.Fatalf("a connection sending half a header stayed open %v", el)
	}
}

func TestBusyListenAddressCleansUp(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "s.sock")
	s, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), TCPAddr: busy.Addr().String(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run(context.Background(), time.Second)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Run on a busy address: %v", err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket file is left behind: %v", err)
	}
	// And the state is not locked: a second start can open it.
	s2, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s2.store.Close()
}

// TestSameUserLoopbackNeedsNoToken: on Linux a loopback client of the
// daemon's own uid is recognised from the kernel's socket table and let in
// without the token; with RequireToken it is not; a client of another uid
// always needs the token.
func TestSameUserLoopbackNeedsNoToken(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: same-user TCP clients need the token on this platform")
	}
	_, addr, _, _ := startServer(t, func(c *Config) { c.RequireToken = false })
	resp, err := http.Get("http://" + addr + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("same-user client without a token: %d", resp.StatusCode)
	}
	// The lookup itself, both ways round.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		c, _ := net.Dial("tcp", ln.Addr().String())
		time.Sleep(500 * time.Millisecond)
		if c != nil {
			c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if uid, ok, err := tcpPeerUID(c); !ok || err != nil || uid != uint32(os.Getuid()) {
		t.Fatalf("tcpPeerUID = %d, %v; want our uid %d", uid, ok, os.Getuid())
	}
	ln6, err := net.Listen("tcp", "[::1]:0")
	if err == nil {
		defer ln6.Close()
		go func() {
			c, _ := net.Dial("tcp", ln6.Addr().String())
			time.Sleep(500 * time.Millisecond)
			if c != nil {
				c.Close()
			}
		}()
		c6, err := ln6.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c6.Close()
		if uid, ok, err := tcpPeerUID(c6); !ok || err != nil || uid != uint32(os.Getuid()) {
			t.Fatalf("tcpPeerUID over IPv6 = %d, %v", uid, ok)
		}
	}
}

// TestOtherUserTCPNeedsToken: a TCP client running as nobody gets a 401
// without the token even though same-user clients need none.
func TestOtherUserTCPNeedsToken(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	_, addr, _, _ := startServer(t, func(c *Config) { c.RequireToken = false })
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", os.Args[0], "-test.run=^TestHelperTCPClient$")
	cmd.Env = append(os.Environ(), "TCP_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "STATUS 401") {
		t.Fatalf("client as nobody: %s", out)
	}
}

func TestHelperTCPClient(t *testing.T) {
	addr := os.Getenv("TCP_ADDR")
	if addr == "" {
		t.Skip("helper process only")
	}
	resp, err := http.Get("http://" + addr + "/v1/health")
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	resp.Body.Close()
	fmt.Println("STATUS", resp.StatusCode)
}

// TestHealthNamesListeners: /v1/health tells clients where the daemon
// listens (socket, the TCP address as bound, the token file) and whether
// its own user needs the token, so `ruvllm env` and `ruvllm status` can
// find them; without --listen the TCP fields are empty.
func TestHealthNamesListeners(t *testing.T) {
	for _, tc := range []struct {
		name    string
		require bool
	}{{"trusting", false}, {"require-token", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr, _, _ := startServer(t, func(c *Config) { c.RequireToken = tc.require })
			req, _ := http.NewRequest("GET", "http://"+addr+"/v1/health", nil)
			req.Header.Set("Authorization", "Bearer "+s.Token())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var h ipc.Health
			if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
				t.Fatal(err)
			}
			cfg := s.Config()
			if h.Socket != cfg.SocketPath || h.TCPAddress != addr || h.TokenFile != filepath.Join(cfg.StateDir, "token") || h.PID != os.Getpid() {
				t.Fatalf("health %+v; want socket %s, tcp %s", h, cfg.SocketPath, addr)
			}
			if want := !tc.require && tcpPeerUIDSupported; h.TCPSameUserNoToken != want {
				t.Fatalf("tcp_same_user_no_token = %v, want %v", h.TCPSameUserNoToken, want)
			}
			if h.ServiceManager != "" {
				t.Fatalf("service manager %q for a daemon started directly", h.ServiceManager)
			}
		})
	}
	t.Run("no-tcp", func(t *testing.T) {
		dir := t.TempDir()
		sock := filepath.Join(dir, "run", "s.sock")
		s, err := New(Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx, time.Second) }()
		defer func() { cancel(); <-done }()
		var c *ipc.Client
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if c, err = ipc.Dial(ctx, ipc.WithSocket(sock)); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		h, err := c.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h.Socket != sock || h.TCPAddress != "" || h.TokenFile != "" || h.TCPSameUserNoToken {
			t.Fatalf("health without --listen: %+v", h)
		}
	})
}
