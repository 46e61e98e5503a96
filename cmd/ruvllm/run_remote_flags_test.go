package main

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestRunRemoteFlags: run --remote sends --spec as the request's
// speculation field and refuses the flags it cannot send (the engine's
// own, and sampling fields the OpenAI endpoints do not take); they were
// accepted and silently not applied.
func TestRunRemoteFlags(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan ipc.CompletionRequest, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/health":
			w.Write([]byte("{}"))
		case "/v1/completions":
			var req ipc.CompletionRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got <- req
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"index\":0,\"text\":\"ok\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv(ipc.EnvSocket, sock)

	for _, tc := range []struct {
		args     []string
		wantSpec string // the request's speculation field
		wantErr  string // or the error, with no request sent
	}{
		{args: nil, wantSpec: ""},
		{args: []string{"--spec", "off"}, wantSpec: "off"},
		{args: []string{"--spec", "lookup+tree"}, wantSpec: "lookup+tree"},
		{args: []string{"--threads", "1"}, wantErr: "--threads"},
		{args: []string{"--ctx", "16"}, wantErr: "--ctx"},
		{args: []string{"--draft", "self:Q4_0"}, wantErr: "--draft"},
		{args: []string{"--spec-fixed", "3"}, wantErr: "--spec-fixed"},
		{args: []string{"--kv-type", "q4_0"}, wantErr: "--kv-type"},
		{args: []string{"--kv-hot-window", "8"}, wantErr: "--kv-hot-window"},
		{args: []string{"--typical-p", "0.5"}, wantErr: "--typical-p"},
		{args: []string{"--repeat-last-n", "8"}, wantErr: "--repeat-last-n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"--remote", "-m", "m", "-p", "hi", "-n", "1"}, tc.args...)
			out, _, err := runCLI(t, newRunCmd(), args...)
			if tc.wantErr != "" {
				// The handler queues a request before it answers, so one
				// sent is in got by now.
				sent := false
				select {
				case <-got:
					sent = true
				default:
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || sent {
					t.Fatalf("err %v (request sent: %v), want one naming %s and no request", err, sent, tc.wantErr)
				}
				return
			}
			if err != nil || out != "ok\n" && out != "ok" {
				t.Fatalf("run --remote: %q %v", out, err)
			}
			if req := <-got; req.Speculation != tc.wantSpec {
				t.Fatalf("speculation sent: %q, want %q", req.Speculation, tc.wantSpec)
			}
		})
	}
}
