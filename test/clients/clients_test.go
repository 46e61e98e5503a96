// Package clients checks ruvllmd against the clients apps use: the
// official openai, ollama and @anthropic-ai/sdk npm clients, the AI SDK and
// LangChain (pinned in package.json), run by node from clients.mjs and
// agents.mjs against a daemon on loopback TCP; curl over the Unix socket;
// and the README's shell examples as written.
package clients

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/internal/testpath"
	"github.com/ruvllm/ruvllm/ipc"
)

// thinkerModel is the thinking model every test daemon also serves, and
// thinkerTemplate its chat template (the prompt opens <think>, as
// DeepSeek-R1's distills do; the </think> a reply would close it with is
// in the comment).
const (
	thinkerModel    = "tiny-thinker"
	thinkerTemplate = `{# </think> ends the reasoning #}{%- for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}{%- if add_generation_prompt %}assistant: <think>
{% endif %}`
)

// testDaemon is a daemon started for a test: its socket, its loopback TCP
// address and bearer token, the model it serves and its health.
type testDaemon struct {
	sock, addr, token, model, modelPath string
	health                              ipc.Health
}

// startDaemon runs ruvllmd in-process until the test ends; requireToken
// starts it with --require-token. The daemon serves the shared model
// named want when ../shared has it, else a synthetic model of that name
// (synthetic: the same architecture, untrained).
func startDaemon(t *testing.T, want string, requireToken bool) testDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "rvnpm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	models := filepath.Join(dir, "models")
	os.MkdirAll(models, 0o700)
	model := want
	real := filepath.Join(testpath.Root(t), "..", "shared", "models", model+".gguf")
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	if _, err := os.Stat(real); err == nil {
		if err := os.Symlink(real, filepath.Join(models, model+".gguf")); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("%s not found: the clients run against a synthetic model of that name", real)
		o := testmodel.DefaultOptions()
		o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
		if strings.Contains(model, "llama") {
			o.Arch = "llama"
		}
		if err := testmodel.Write(context.Background(), o, filepath.Join(models, model+".gguf")); err != nil {
			t.Fatal(err)
		}
	}
	// A thinking model beside it: DeepSeek-R1's way, the prompt opens the
	// reasoning block, so an untrained model's whole reply is reasoning.
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
	o.ChatTemplate = thinkerTemplate
	if err := testmodel.Write(context.Background(), o, filepath.Join(models, thinkerModel+".gguf")); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	cfg := daemon.Config{SocketPath: sock, TCPAddr: "127.0.0.1:0", RequireToken: requireToken, StateDir: filepath.Join(dir, "state"), ModelsDir: models,
		CacheDir: filepath.Join(dir, "cache"), Threads: 1, Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Model: model, KeepAlive: time.Minute, MaxLoaded: 2})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var c *ipc.Client
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err = ipc.Dial(context.Background(), ipc.WithSocket(sock)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer c.Close()
	h, err := c.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	token, err := ipc.ReadToken(h.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	return testDaemon{sock: sock, addr: h.TCPAddress, token: token, model: model, modelPath: filepath.Join(models, model+".gguf"), health: h}
}

// inCI reports whether the tests run in CI (CI=true), where a client
// test that cannot run is a failure rather than a skip.
func inCI() bool { return os.Getenv("CI") == "true" }

// cannotRun fails the test in CI and skips it elsewhere.
func cannotRun(t *testing.T, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("CI=true and "+format, args...)
	}
	t.Skipf(format, args...)
}

// npmDeps makes sure node_modules holds exactly the versions package.json
// pins, running `npm ci` when it does not; it returns node's path.
func npmDeps(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		cannotRun(t, "node is not installed (apt-get install nodejs npm, or node >= 20.19 from nodesource): the npm client tests cannot run")
	}
	if stale := staleDeps(t); len(stale) > 0 {
		npm, err := exec.LookPath("npm")
		if err != nil {
			cannotRun(t, "node_modules lacks %v and npm is not installed (apt-get install npm)", stale)
		}
		t.Logf("node_modules lacks %v: running npm ci", stale)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error").CombinedOutput()
		if err != nil {
			cannotRun(t, "npm ci in test/clients failed (offline?): %v\n%s", err, out)
		}
		if stale := staleDeps(t); len(stale) > 0 {
			t.Fatalf("after npm ci node_modules still lacks %v", stale)
		}
	}
	return node
}

// staleDeps lists the dependencies of package.json that node_modules does
// not hold at the pinned version.
func staleDeps(t *testing.T) []string {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	var stale []string
	for name, version := range pkg.Dependencies {
		var installed struct{ Version string }
		b, err := os.ReadFile(filepath.Join("node_modules", name, "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &installed)
		}
		if err != nil || installed.Version != version {
			stale = append(stale, name+"@"+version)
		}
	}
	sort.Strings(stale)
	return stale
}

// TestNPMClients runs clients.mjs: the openai and ollama npm clients, the
// AI SDK and LangChain, configured as `ruvllm env` configures apps, against
// a daemon, plus the token checks against a second daemon started with
// --require-token.
func TestNPMClients(t *testing.T) {
	runScript(t, "clients.mjs")
}

// TestNPMAgentAPIs runs agents.mjs: structured output, tool calling, the
// Responses API, the Anthropic Messages API and n > 1 through the official
// openai, ollama and @anthropic-ai/sdk clients (issues 17 and 22).
// Its seeds are chosen for the shared 13M model (which of them make the
// model call a tool, say), so it needs that model rather than a synthetic
// one.
func TestNPMAgentAPIs(t *testing.T) {
	model := filepath.Join(testpath.Root(t), "..", "shared", "models", "ruvllm-test-qwen2-13m-q8_0.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("agents.mjs needs the shared model %s: %v", model, err)
	}
	runScript(t, "agents.mjs")
}

// runScript runs a node script of this folder against a daemon (and a
// second one started with --require-token), with the environment `ruvllm
// env` prints and the variables the scripts' headers describe; the script
// must print {"ok":true,...}.
func runScript(t *testing.T, script string) {
	t.Helper()
	node := npmDeps(t)
	// Read here so that go test's cache knows the test depends on it.
	if b, err := os.ReadFile(script); err != nil || len(b) == 0 {
		t.Fatalf("%s: %v", script, err)
	}
	d := startDaemon(t, "ruvllm-test-qwen2-13m-q8_0", false)
	strict := startDaemon(t, "ruvllm-test-qwen2-13m-q8_0", true)
	vars, err := ipc.ClientEnv(d.health, d.token)
	if err != nil {
		t.Fatal(err)
	}
	env := os.Environ()
	for _, v := range vars {
		env = append(env, v.Name+"="+v.Value)
	}
	sameUser := "0"
	if d.health.TCPSameUserNoToken {
		sameUser = "1"
	}
	env = append(env, "RUVLLM_MODEL="+d.model, "RUVLLM_MODEL_PATH="+d.modelPath, "RUVLLM_SAME_USER="+sameUser, "RUVLLM_THINKER="+thinkerModel,
		"RUVLLM_STRICT_URL=http://"+strict.addr, "RUVLLM_STRICT_TOKEN="+strict.token)
	runCtx, stop := context.WithTimeout(context.Background(), 3*time.Minute)
	defer stop()
	cmd := exec.CommandContext(runCtx, node, script)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	if !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("%s output: %s", script, out)
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
	d := startDaemon(t, "ruvllm-test-qwen2-13m-q8_0", false)
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
