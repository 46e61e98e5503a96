package ipc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientEnv(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     Health
		token string
		want  string
		err   error
	}{
		{"ipv4", Health{TCPAddress: "127.0.0.1:11434"}, "abc",
			"OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_API_KEY=abc OLLAMA_HOST=http://127.0.0.1:11434 ANTHROPIC_BASE_URL=http://127.0.0.1:11434 ANTHROPIC_API_KEY=abc", nil},
		{"ipv6", Health{TCPAddress: "[::1]:8080"}, "t",
			"OPENAI_BASE_URL=http://[::1]:8080/v1 OPENAI_API_KEY=t OLLAMA_HOST=http://[::1]:8080 ANTHROPIC_BASE_URL=http://[::1]:8080 ANTHROPIC_API_KEY=t", nil},
		{"no tcp", Health{Socket: "/run/s.sock"}, "abc", "", ErrNoTCP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars, err := ClientEnv(tc.h, tc.token)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			var got []string
			for _, v := range vars {
				got = append(got, v.Name+"="+v.Value)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
	if _, err := ClientEnv(Health{TCPAddress: "127.0.0.1:1"}, ""); err == nil {
		t.Fatal("empty token: no error")
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	if _, err := ReadToken(p); err == nil || strings.Count(err.Error(), p) != 1 {
		t.Fatalf("missing token file: %v", err)
	}
	os.WriteFile(p, []byte("\n"), 0o600)
	if _, err := ReadToken(p); err == nil {
		t.Fatal("empty token file: no error")
	}
	os.WriteFile(p, []byte("c0ffee\n"), 0o600)
	if tok, err := ReadToken(p); err != nil || tok != "c0ffee" {
		t.Fatalf("token %q %v", tok, err)
	}
}
