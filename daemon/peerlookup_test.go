package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestTCPPeerLookupFailure: when the daemon cannot read the kernel's
// socket table (out of file descriptors), a loopback client sending no
// token may be the owner: it gets 503 naming the cause, to retry, not
// 401 "missing or wrong token". A peer found to be another user, or not
// found, still gets 401; the owner gets in; the token always does.
func TestTCPPeerLookupFailure(t *testing.T) {
	emfile := fmt.Errorf("read the socket table: %w", &os.PathError{Op: "open", Path: "/proc/net/tcp", Err: syscall.EMFILE})
	for _, tc := range []struct {
		name      string
		uid       uint32
		ok        bool
		err       error
		token     bool
		want      int
		wantInMsg string
	}{
		{name: "lookup failed", err: emfile, want: http.StatusServiceUnavailable, wantInMsg: "too many open files"},
		{name: "lookup failed, token sent", err: emfile, token: true, want: http.StatusOK},
		{name: "another user", uid: uint32(os.Getuid()) + 1, ok: true, want: http.StatusUnauthorized, wantInMsg: "missing or wrong token"},
		{name: "not found", want: http.StatusUnauthorized, wantInMsg: "missing or wrong token"},
		{name: "owner", uid: uint32(os.Getuid()), ok: true, want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _, _ := startServer(t, func(c *Config) { c.RequireToken = false })
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := newTCPListener(inner, MaxUnauthConns)
			ln.trustSameUser = true
			ln.peerUID = func(net.Conn) (uint32, bool, error) { return tc.uid, tc.ok, tc.err }
			srv := &http.Server{
				Handler:     s.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })),
				ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey, c) },
			}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			req, _ := http.NewRequest("GET", "http://"+inner.Addr().String()+"/v1/health", nil)
			if tc.token {
				req.Header.Set("Authorization", "Bearer "+s.Token())
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.wantInMsg) {
				t.Fatalf("%d %s; want %d with %q", resp.StatusCode, body, tc.want, tc.wantInMsg)
			}
		})
	}
}
