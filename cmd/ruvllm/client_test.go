package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

// runCLI runs one subcommand in process and returns its stdout and stderr.
func runCLI(t *testing.T, cmd *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	return runCLIIn(t, strings.NewReader(""), cmd, args...)
}

// runCLIIn is runCLI with in as standard input.
func runCLIIn(t *testing.T, in io.Reader, cmd *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	root := &cobra.Command{Use: "ruvllm", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(cmd)
	var out, errw bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errw)
	root.SetIn(in)
	root.SetArgs(append([]string{cmd.Name()}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), errw.String(), err
}

// startDaemon serves o in process on a socket in dir (state, models and
// cache under dir too), points the CLI at it and stops it when t ends.
func startDaemon(t *testing.T, dir string, o serve.Options) {
	t.Helper()
	sock := filepath.Join(dir, "s.sock")
	t.Setenv(ipc.EnvSocket, sock)
	o.Config = daemon.Config{SocketPath: sock, StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"),
		CacheDir: filepath.Join(dir, "cache"), Threads: 1, Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Run(ctx, o) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err := ipc.Dial(context.Background()); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientCommandsAgainstDaemon drives pull, models, run --remote, ps
// and rm against an in-process daemon with a real synthetic model served
// by a fake registry.
func TestClientCommandsAgainstDaemon(t *testing.T) {
	dir, err := os.MkdirTemp("", "rvcli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // after the daemon stops
	src := filepath.Join(dir, "src.gguf")
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
	if err := testmodel.Write(context.Background(), o, src); err != nil {
		t.Fatal(err)
	}
	model, _ := os.ReadFile(src)
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/Org/Tiny-GGUF/resolve/main/Tiny-Qwen2-F32.gguf" {
			http.NotFound(w, r)
			return
		}
		w.Write(model)
	}))
	defer reg.Close()

	startDaemon(t, dir, serve.Options{KeepAlive: time.Minute, MaxLoaded: 1})

	out, errOut, err := runCLI(t, newPullCmd(), "--registry", reg.URL, "Org/Tiny-GGUF/Tiny-Qwen2-F32.gguf")
	if err != nil || strings.TrimSpace(out) != "tiny-qwen2-f32" || !strings.Contains(errOut, "success") {
		t.Fatalf("pull: %v\nstdout %q\nstderr %q", err, out, errOut)
	}
	if out, _, err := runCLI(t, newModelsCmd()); err != nil || strings.TrimSpace(out) != "tiny-qwen2-f32" {
		t.Fatalf("models: %q %v", out, err)
	}
	out, _, err = runCLI(t, newRunCmd(), "--remote", "-m", "tiny-qwen2-f32", "-p", "hello there", "-n", "4", "--temp", "0", "--json")
	if err != nil {
		t.Fatalf("run --remote: %v", err)
	}
	// The in-process run's object: text and timings (and the usage).
	var res struct {
		Text    *string    `json:"text"`
		Timings runTimings `json:"timings"`
		Usage   ipc.Usage  `json:"usage"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Text == nil || res.Usage.PromptTokens == 0 ||
		res.Timings.PromptTokens != res.Usage.PromptTokens || res.Timings.GenTokens != res.Usage.CompletionTokens ||
		(res.Timings.FinishReason != "length" && res.Timings.FinishReason != "stop") || res.Usage.CompletionTokens > 4 {
		t.Fatalf("run --remote output %q (%v)", out, err)
	}
	if out, _, err := runCLI(t, newPsCmd()); err != nil || !strings.Contains(out, "tiny-qwen2-f32") {
		t.Fatalf("ps: %q %v", out, err)
	}
	if out, _, err := runCLI(t, newRmCmd(), "tiny-qwen2-f32"); err != nil || !strings.Contains(out, "deleted tiny-qwen2-f32") {
		t.Fatalf("rm: %q %v", out, err)
	}
	if out, _, err := runCLI(t, newModelsCmd()); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("models after rm: %q %v", out, err)
	}
	if _, _, err := runCLI(t, newRmCmd(), "tiny-qwen2-f32"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("rm of a missing model: %v", err)
	}

	// --local needs no daemon.
	local := filepath.Join(dir, "local-models")
	out, _, err = runCLI(t, newPullCmd(), "--local", "--models-dir", local, "--registry", reg.URL, "Org/Tiny-GGUF/Tiny-Qwen2-F32.gguf")
	if err != nil || !strings.HasPrefix(out, "tiny-qwen2-f32\t") {
		t.Fatalf("pull --local: %q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(local, "Tiny-Qwen2-F32.gguf")); !bytes.Equal(b, model) {
		t.Fatal("pull --local: file differs")
	}
}

// serveDaemon answers the CLI's requests to the daemon with h, on a Unix
// socket of the test's own (ipc.EnvSocket).
func serveDaemon(t *testing.T, h http.HandlerFunc) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv(ipc.EnvSocket, sock)
}
