package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/pull"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestPullSendsRegistry: `ruvllm pull` through the daemon sends the
// registry the CLI was given, by --registry or by $RUVLLM_REGISTRY in the
// CLI's own environment (the daemon's environment is not the shell's, so
// leaving the variable to the daemon pulled from huggingface.co).
func TestPullSendsRegistry(t *testing.T) {
	got := make(chan string, 1)
	serveDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/health":
			w.Write([]byte("{}"))
		case "/api/pull":
			var req ipc.PullRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got <- req.Registry
			w.Write([]byte(`{"status":"success","model":"tiny"}` + "\n"))
		default:
			http.NotFound(w, r)
		}
	})

	for _, tc := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{name: "flag", args: []string{"--registry", "http://flag.example"}, want: "http://flag.example"},
		{name: "env", env: "http://env.example", want: "http://env.example"},
		{name: "flag over env", env: "http://env.example", args: []string{"--registry", "http://flag.example"}, want: "http://flag.example"},
		{name: "neither", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(pull.RegistryEnv, tc.env)
			out, errOut, err := runCLI(t, newPullCmd(), append(tc.args, "Org/Repo/tiny.gguf")...)
			if err != nil || strings.TrimSpace(out) != "tiny" {
				t.Fatalf("pull: %v\nstdout %q\nstderr %q", err, out, errOut)
			}
			if r := <-got; r != tc.want {
				t.Fatalf("registry sent to the daemon: %q, want %q", r, tc.want)
			}
		})
	}
}
