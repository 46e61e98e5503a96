package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestTCPRefusesWebPages: the user's browser passes the same-user check
// on the TCP listener, so a request it makes for a web page (a cross-site
// simple POST, or a DNS name rebound to 127.0.0.1) must be refused with a
// 403 saying why, while ordinary clients, loopback pages, requests with
// the token and the Unix socket are served. They were all served: any
// page the user opened could generate, rate, reset learning or read
// the conversations.
func TestTCPRefusesWebPages(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: every TCP client needs the token on this platform")
	}
	s, addr, _, _ := startServer(t, func(c *Config) { c.RequireToken = false })
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		name    string
		path    string
		host    string
		headers map[string]string
		token   bool
		want    int
	}{
		{name: "plain", want: 200},
		{name: "localhost", host: "localhost:" + port, want: 200},
		{name: "sub.localhost", host: "app.localhost:" + port, want: 200},
		{name: "ipv6 literal", host: "[::1]:" + port, want: 200},
		{name: "no port", host: "127.0.0.1", want: 200},
		{name: "rebound name", host: "evil.example:" + port, want: 403},
		{name: "rebound name ollama", path: "/api/x", host: "attacker.test", want: 403},
		{name: "localhost lookalike", host: "localhost.evil.example:" + port, want: 403},
		{name: "cross-site origin", headers: map[string]string{"Origin": "http://evil.example"}, want: 403},
		{name: "null origin", headers: map[string]string{"Origin": "null"}, want: 403},
		{name: "file origin", headers: map[string]string{"Origin": "file://"}, want: 403},
		{name: "loopback page", headers: map[string]string{"Origin": "http://localhost:3000"}, want: 200},
		{name: "loopback ip page", headers: map[string]string{"Origin": "http://127.0.0.1:8080"}, want: 200},
		{name: "cross-site fetch metadata", headers: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
		{name: "same-site fetch metadata", headers: map[string]string{"Sec-Fetch-Site": "same-site"}, want: 200},
		{name: "token, rebound name", host: "evil.example:" + port, token: true, want: 200},
		{name: "token, cross-site origin", headers: map[string]string{"Origin": "http://evil.example"}, token: true, want: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/v1/health"
			}
			req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if tc.token {
				req.Header.Set("Authorization", "Bearer "+s.Token())
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.want == 200 && tc.path != "" {
				tc.want = 404 // served: an unknown route of a bare server
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if resp.StatusCode != 403 {
				return
			}
			var msg string
			if strings.HasPrefix(path, "/api/") {
				var e struct{ Error string }
				json.Unmarshal(b, &e)
				msg = e.Error
			} else {
				var e struct{ Error struct{ Message string } }
				json.Unmarshal(b, &e)
				msg = e.Error.Message
			}
			if !strings.Contains(msg, "Host") && !strings.Contains(msg, "web pages") {
				t.Fatalf("403 without a reason in its protocol's shape: %s", b)
			}
		})
	}
	// The Unix socket is out of a browser's reach: its Host is anything.
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.Config().SocketPath)
	}}}
	resp, err := c.Get("http://evil.example/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("unix socket with a DNS-name Host: %d", resp.StatusCode)
	}
}

func TestLoopbackHostAndOrigin(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"", true}, {"127.0.0.1:11434", true}, {"[::1]:1", true}, {"::1", true}, {"LOCALHOST", true},
		{"localhost.", true}, {"a.b.localhost:9", true}, {"10.0.0.1", true},
		{"example.com", false}, {"localhost.example.com:11434", false}, {"127.0.0.1.nip.io", false}, {"xlocalhost", false},
	} {
		if got := loopbackHost(tc.host); got != tc.want {
			t.Errorf("loopbackHost(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	for _, tc := range []struct {
		origin string
		want   bool
	}{
		{"http://localhost", true}, {"https://localhost:8443", true}, {"http://127.0.0.1:3000", true}, {"http://[::1]:80", true},
		{"http://app.localhost", true}, {"http://evil.example", false}, {"null", false}, {"file://", false},
		{"chrome-extension://abc", false}, {"http://10.0.0.1", false}, {"http://localhost.evil.example", false}, {"%%", false},
	} {
		if got := loopbackOrigin(tc.origin); got != tc.want {
			t.Errorf("loopbackOrigin(%q) = %v, want %v", tc.origin, got, tc.want)
		}
	}
}
