// Package hostile runs the real ruvllmd binary as a separate process and
// attacks it the way a careless or hostile local client would: absurd
// numbers, malformed bodies, files that are not what they claim, slow and
// idle connections, disconnects mid-stream, a flood of mixed traffic and
// kill -9. Every test asserts that the daemon keeps answering, that each
// client mistake is a 4xx that says what is wrong, and that nothing
// acknowledged is lost.
package hostile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/internal/testpath"
	"github.com/ruvllm/ruvllm/ipc"
)

// ruvllmd is the daemon binary built once for the package.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func daemonBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ruvllmd-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ruvllmd")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/ruvllmd")
		cmd.Dir = testpath.Root(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/ruvllmd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is one running ruvllmd process.
type proc struct {
	dir, sock, addr, token, model string
	modelPath                     string
	cmd                           *exec.Cmd
	log                           *bytes.Buffer
	exited                        chan error
	http                          *http.Client // over the socket
}

// modelOptions is the synthetic model the daemon serves by default: small
// enough that requests are quick on 2 cores, real enough to stream.
func writeModel(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 2, 64, 4, 2, 128, 1024
	if err := testmodel.Write(context.Background(), o, path); err != nil {
		t.Fatal(err)
	}
}

type startOptions struct {
	tcp   bool
	model string // a path to serve instead of the synthetic model
	args  []string
	dir   string // reuse a directory (restart after kill -9)
}

// start runs ruvllmd and waits until it answers on its socket.
func start(t testing.TB, o startOptions) *proc {
	t.Helper()
	p := &proc{dir: o.dir, log: &bytes.Buffer{}, exited: make(chan error, 1)}
	if p.dir == "" {
		dir, err := os.MkdirTemp("", "hostile-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o700)
		t.Cleanup(func() { os.RemoveAll(dir) })
		p.dir = dir
	}
	p.sock = filepath.Join(p.dir, "run", "ruvllm.sock")
	p.modelPath = o.model
	if p.modelPath == "" {
		p.modelPath = filepath.Join(p.dir, "models", "tiny-qwen2.gguf")
		writeModel(t, p.modelPath)
	}
	args := []string{"--socket", p.sock, "--state-dir", filepath.Join(p.dir, "state"), "--models-dir", filepath.Join(p.dir, "models"),
		"--cache-dir", filepath.Join(p.dir, "cache"), "--adapters-dir", filepath.Join(p.dir, "drop"), "--threads", "2",
		"-m", p.modelPath, "--shutdown-grace", "500ms"}
	if o.tcp {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.addr = ln.Addr().String()
		ln.Close()
		args = append(args, "--listen", p.addr)
	}
	args = append(args, o.args...)
	p.cmd = exec.Command(daemonBinary(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(p.dir, "xdg"))
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	p.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ipc.DialSocket(ctx, p.sock) }}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := ipc.Dial(context.Background(), ipc.WithSocket(p.sock)); err == nil {
			h, herr := c.Health(context.Background())
			c.Close()
			if herr == nil && len(h.Loaded) > 0 {
				break
			}
		}
		select {
		case err := <-p.exited:
			t.Fatalf("ruvllmd exited at start: %v\n%s", err, p.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("ruvllmd did not load its model within 20 s\n%s", p.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.model = "tiny-qwen2"
	if o.model != "" {
		p.model = strings.TrimSuffix(strings.ToLower(filepath.Base(o.model)), ".gguf")
	}
	if o.tcp {
		b, err := os.ReadFile(filepath.Join(p.dir, "state", "token"))
		if err != nil {
			t.Fatal(err)
		}
		p.token = strings.TrimSpace(string(b))
	}
	return p
}

// stop sends SIGTERM and waits.
func (p *proc) stop(t testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		t.Errorf("ruvllmd did not stop on SIGTERM\n%s", p.log)
	}
}

// kill9 kills the daemon without warning.
func (p *proc) kill9() {
	p.cmd.Process.Kill()
	<-p.exited
}

// alive fails the test unless the daemon answers /v1/health.
func (p *proc) alive(t testing.TB) {
	t.Helper()
	select {
	case err := <-p.exited:
		t.Fatalf("ruvllmd died: %v\n%s", err, tail(p.log.String(), 3000))
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://ruvllm/v1/health", nil)
	resp, err := p.http.Do(req)
	if err != nil {
		t.Fatalf("ruvllmd does not answer: %v\n%s", err, tail(p.log.String(), 3000))
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health: %d", resp.StatusCode)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// reply is one answer.
type reply struct {
	status  int
	body    []byte
	elapsed time.Duration
}

// do sends a request over the socket.
func (p *proc) do(t testing.TB, method, path, contentType string, body io.Reader) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://ruvllm"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	start := time.Now()
	resp, err := p.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer: %v\n%s", method, path, err, tail(p.log.String(), 2000))
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return reply{status: resp.StatusCode, body: b, elapsed: time.Since(start)}
}

func (p *proc) post(t testing.TB, path, body string) reply {
	t.Helper()
	return p.do(t, "POST", path, "application/json", strings.NewReader(body))
}

// errorText is the message of an error body in OpenAI's or Ollama's shape,
// and OpenAI's param.
func errorText(b []byte) (msg, param string) {
	var oa struct {
		Error struct {
			Message string  `json:"message"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &oa) == nil && oa.Error.Message != "" {
		if oa.Error.Param != nil {
			param = *oa.Error.Param
		}
		return oa.Error.Message, param
	}
	var ol struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &ol) == nil {
		return ol.Error, ""
	}
	return "", ""
}

// want4xx asserts a client mistake: a 4xx whose message names want.
func want4xx(t testing.TB, what string, r reply, want string) {
	t.Helper()
	msg, _ := errorText(r.body)
	if r.status < 400 || r.status >= 500 {
		t.Errorf("%s: status %d (%s), want a 4xx", what, r.status, tail(string(r.body), 300))
		return
	}
	if msg == "" || !strings.Contains(msg, want) {
		t.Errorf("%s: status %d message %q, want it to say %q", what, r.status, msg, want)
	}
}

// runCmd runs ruvllmd with args and returns its exit code and output,
// for starts that must fail.
func runCmd(t *testing.T, timeout time.Duration, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, daemonBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("ruvllmd %v did not exit within %v: %s", args, timeout, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// rss returns the daemon's peak and current resident memory in bytes.
func (p *proc) rss() (peak, now int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && (f[0] == "VmHWM:" || f[0] == "VmRSS:") {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmHWM:" {
				peak = n << 10
			} else {
				now = n << 10
			}
		}
	}
	return peak, now
}
