// Package clients checks ruvllmd against the official openai and ollama
// npm clients (pinned in package.json): the test starts a daemon with a
// synthetic model on loopback TCP and runs clients.mjs with node.
package clients

import (
	"context"
	"encoding/json"
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

// testDaemon is a daemon started for a test: its socket, its loopback TCP
// address and bearer token, and the model it serves.
type testDaemon struct{ sock, addr, token, model string }

// startDaemon runs ruvllmd in-process until the test ends.
func startDaemon(t *testing.T) testDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "rvnpm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
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
	t.Cleanup(func() { cancel(); <-done })
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
	return testDaemon{sock: sock, addr: addr, token: strings.TrimSpace(string(token)), model: model}
}

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
	d := startDaemon(t)
	runCtx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	cmd := exec.CommandContext(runCtx, node, "clients.mjs")
	cmd.Env = append(os.Environ(), "RUVLLM_URL=http://"+d.addr, "RUVLLM_TOKEN="+d.token, "RUVLLM_MODEL="+d.model)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("clients.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("clients.mjs output: %s", out)
	}
	t.Logf("%s", out)
}

// TestCurl drives the daemon with curl over its Unix socket, the way the
// README shows: a chat completion, the same streamed as SSE, and Ollama's
// NDJSON generate.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	d := startDaemon(t)
	run := func(path, body string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, curl, "-sS", "--fail-with-body", "--unix-socket", d.sock,
			"http://ruvllm"+path, "-H", "Content-Type: application/json", "-d", body).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %s: %v\n%s", path, err, out)
		}
		return string(out)
	}
	var chat struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct{ Role, Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	out := run("/v1/chat/completions", `{"model":"`+d.model+`","messages":[{"role":"user","content":"Say hi"}],"max_tokens":8,"temperature":0}`)
	if err := json.Unmarshal([]byte(out), &chat); err != nil || chat.Object != "chat.completion" || len(chat.Choices) != 1 ||
		chat.Choices[0].Message.Role != "assistant" || chat.Usage.CompletionTokens == 0 {
		t.Fatalf("chat completion: %v\n%s", err, out)
	}

	out = run("/v1/chat/completions", `{"model":"`+d.model+`","messages":[{"role":"user","content":"Say hi"}],"max_tokens":8,"temperature":0,"stream":true}`)
	var streamed strings.Builder
	var sawDone bool
	for _, line := range strings.Split(out, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			sawDone = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("SSE chunk %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			streamed.WriteString(c.Delta.Content)
		}
	}
	if !sawDone || streamed.String() != chat.Choices[0].Message.Content {
		t.Fatalf("stream gave %q (done %v), the same request unstreamed %q", streamed.String(), sawDone, chat.Choices[0].Message.Content)
	}

	out = run("/api/generate", `{"model":"`+d.model+`","prompt":"The kernel","raw":true,"options":{"num_predict":6,"temperature":0}}`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Done      bool `json:"done"`
		EvalCount int  `json:"eval_count"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || !last.Done || last.EvalCount == 0 || len(lines) < 2 {
		t.Fatalf("ollama generate: %v\n%s", err, out)
	}
}
