package ipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSocketPathTooLong: a path longer than a Unix socket's address holds
// is refused by name, not dialled to "connect: invalid argument", which
// Dial reported as a daemon not running (the app then started one, which
// failed the same way); a path of the longest length is dialled.
func TestSocketPathTooLong(t *testing.T) {
	dir := t.TempDir()
	pad := func(n int) string {
		// dir/aaa...a of n bytes in all.
		return filepath.Join(dir, strings.Repeat("a", n-len(dir)-1))
	}
	for _, tc := range []struct {
		name     string
		path     string
		tooLong  bool
		notFound bool
	}{
		{"longest", pad(MaxSocketPath()), false, true},
		{"one byte more", pad(MaxSocketPath() + 1), true, false},
		{"far longer", pad(4096), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := Dial(ctx, WithSocket(tc.path))
			if got := errors.Is(err, ErrSocketPathTooLong); got != tc.tooLong {
				t.Fatalf("Dial = %v; too long: %v, want %v", err, got, tc.tooLong)
			}
			if tc.tooLong && (errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "at most")) {
				t.Fatalf("Dial = %v, want the limit named and not ErrNotRunning", err)
			}
			if got := errors.Is(err, ErrNotRunning); got != tc.notFound {
				t.Fatalf("Dial = %v; not running: %v, want %v", err, got, tc.notFound)
			}
		})
	}
}

func TestDialSocketSameUser(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
	}()
	c, err := DialSocket(context.Background(), sock)
	if err != nil {
		t.Fatalf("a server of our own uid was refused: %v", err)
	}
	c.Close()
}

// TestClientRefusesForeignServer runs a server as user nobody on a socket
// path the client would use: the client must refuse it before sending a
// byte, and say why.
func TestClientRefusesForeignServer(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a server as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	dir, _ := os.MkdirTemp("/tmp", "ruvllm-foreign-")
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	sock := filepath.Join(dir, "ruvllm.sock")
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", os.Args[0], "-test.run=^TestHelperForeignServer$")
	cmd.Env = append(os.Environ(), "FOREIGN_SOCKET="+sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "LISTENING" {
		t.Fatalf("helper: %q", lines.Text())
	}
	// The Go client dials through DialSocket...
	_, err = Dial(context.Background(), WithSocket(sock))
	if !errors.Is(err, ErrForeignServer) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("Dial to a foreign server: %v, want ErrForeignServer naming uid 65534", err)
	}
	// ...and so does an http.Client built on it.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return DialSocket(ctx, sock)
	}}}
	if _, err := hc.Post("http://x/v1/chat/completions", "application/json", strings.NewReader(`{"secret":"prompt"}`)); !errors.Is(err, ErrForeignServer) {
		t.Fatalf("POST through DialSocket: %v", err)
	}
	// The server saw connections but not one byte (each is reported once
	// its 300 ms read ends).
	time.Sleep(700 * time.Millisecond)
	cmd.Process.Kill()
	reads := 0
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "READ ") {
			reads++
		}
		if l := lines.Text(); strings.HasPrefix(l, "READ ") && l != "READ 0" {
			t.Fatalf("the foreign server received data: %s", l)
		}
	}
	if reads == 0 {
		t.Fatal("the foreign server saw no connection: the test proves nothing")
	}
}

func TestHelperForeignServer(t *testing.T) {
	sock := os.Getenv("FOREIGN_SOCKET")
	if sock == "" {
		t.Skip("helper process only")
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	os.Chmod(sock, 0o777)
	fmt.Println("LISTENING")
	deadline := time.Now().Add(5 * time.Second)
	ln.(*net.UnixListener).SetDeadline(deadline)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, _ := io.Copy(io.Discard, c)
		fmt.Println("READ", n)
		c.Close()
	}
}

// TestDialDaemonThatDoesNotAnswer: a process that accepts on the socket
// but never answers (a daemon stopped with SIGSTOP, or wedged) makes Dial
// fail after dialHealthTimeout with ErrNoAnswer, not hang (ruvllm status
// and ruvllm stop waited forever), and not ErrNotRunning (which would
// start another daemon), also when the caller's deadline comes first (the
// app dials with 2 s).
func TestDialDaemonThatDoesNotAnswer(t *testing.T) {
	old := dialHealthTimeout
	t.Cleanup(func() { dialHealthTimeout = old })
	for _, tc := range []struct {
		name                   string
		healthTimeout, callers time.Duration // 0: none
	}{
		{"health check's timeout", 200 * time.Millisecond, 0},
		{"caller's deadline", time.Minute, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dialHealthTimeout = tc.healthTimeout
			sock := filepath.Join(t.TempDir(), "s.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			held := make(chan net.Conn, 16)
			defer func() {
				ln.Close()
				for len(held) > 0 {
					(<-held).Close()
				}
			}()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					held <- c // read nothing, answer nothing
				}
			}()
			ctx := context.Background()
			if tc.callers > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.callers)
				defer cancel()
			}
			done := make(chan error, 1)
			go func() {
				_, err := Dial(ctx, WithSocket(sock))
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), sock) {
					t.Errorf("Dial = %v, want ErrNoAnswer naming the socket", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Dial hangs on a server that does not answer")
			}
		})
	}
}
