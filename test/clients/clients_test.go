// Package clients checks ruvllmd against the official openai and ollama
// npm clients (pinned in package.json): the test starts a daemon with a
// synthetic model on loopback TCP and runs clients.mjs with node.
package clients

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/internal/testpath"
	"github.com/ruvllm/ruvllm/ipc"
)

func TestNPMClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	for _, pkg := range []string{"openai", "ollama"} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			t.Skipf("node_modules/%s missing: run `npm ci` in test/clients", pkg)
		}
	}
	dir, err := os.MkdirTemp("", "rvnpm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	models := filepath.Join(dir, "models")
	os.MkdirAll(models, 0o700)
	// The clients talk to the real trained qwen2 model of ../shared when it
	// is there, else to a tiny synthetic one.
	model := "ruvllm-test-qwen2-13m-q8_0"
	real := filepath.Join(testpath.Root(t), "..", "shared", "models", model+".gguf")
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	if _, err := os.Stat(real); err == nil {
		if err := os.Symlink(real, filepath.Join(models, model+".gguf")); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("%s not found: the clients run against a synthetic model", real)
		model = "tiny-qwen2"
		o := testmodel.DefaultOptions()
		o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
		if err := testmodel.Write(context.Background(), o, filepath.Join(models, model+".gguf")); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sock := filepath.Join(dir, "s.sock")
	cfg := daemon.Config{SocketPath: sock, TCPAddr: addr, StateDir: filepath.Join(dir, "state"), ModelsDir: models,
		CacheDir: filepath.Join(dir, "cache"), Threads: 1, Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Model: model, KeepAlive: time.Minute, MaxLoaded: 1})
	}()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err := ipc.Dial(context.Background(), ipc.WithSocket(sock)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	token, err := os.ReadFile(filepath.Join(dir, "state", "token"))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	cmd := exec.CommandContext(runCtx, node, "clients.mjs")
	cmd.Env = append(os.Environ(), "RUVLLM_URL=http://"+addr, "RUVLLM_TOKEN="+strings.TrimSpace(string(token)), "RUVLLM_MODEL="+model)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("clients.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("clients.mjs output: %s", out)
	}
	t.Logf("%s", out)
}
