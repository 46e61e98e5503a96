package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/serve"
	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/internal/dbustest"
	"github.com/ruvllm/ruvllm/ipc"
)

// helperDaemon is a ruvllmd running as a child process (this test binary
// re-run as TestHelperDaemon), so that `ruvllm stop` has a process of its
// own to end.
type helperDaemon struct {
	cmd    *exec.Cmd
	sock   string
	exited chan error
}

// startHelperDaemon runs TestHelperDaemon in a child process with a tiny
// model, its socket in dir; listen is its --listen address ("" for none);
// activation, when not nil, is passed as a systemd socket (fd 3, with
// LISTEN_FDS), so the daemon believes systemd started it.
func startHelperDaemon(t *testing.T, dir, listen string, activation *os.File) *helperDaemon {
	t.Helper()
	model := filepath.Join(dir, "tiny.gguf")
	if _, err := os.Stat(model); err != nil {
		o := testmodel.DefaultOptions()
		o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
		if err := testmodel.Write(context.Background(), o, model); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "run", "s.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDaemon$")
	cmd.Env = append(os.Environ(), "RUVLLM_HELPER_DAEMON="+dir, "RUVLLM_HELPER_LISTEN="+listen, "RUVLLM_HELPER_MODEL="+model, ipc.EnvSocket+"="+sock)
	if activation != nil {
		cmd.ExtraFiles = []*os.File{activation}
		cmd.Env = append(cmd.Env, "LISTEN_FDS=1", "RUVLLM_HELPER_ACTIVATED=1")
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &helperDaemon{cmd: cmd, sock: sock, exited: make(chan error, 1)}
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-d.exited
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := ipc.Dial(context.Background(), ipc.WithSocket(sock))
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-d.exited:
			t.Fatalf("helper daemon exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("helper daemon did not answer")
		}
	}
	t.Setenv(ipc.EnvSocket, sock)
	return d
}

// TestHelperDaemon is the daemon process of startHelperDaemon.
func TestHelperDaemon(t *testing.T) {
	dir := os.Getenv("RUVLLM_HELPER_DAEMON")
	if dir == "" {
		t.Skip("runs only as the helper process of the stop tests")
	}
	if os.Getenv("RUVLLM_HELPER_ACTIVATED") == "1" {
		// systemd sets LISTEN_PID to the pid it started; this process is it.
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	}
	cfg := daemon.Config{SocketPath: os.Getenv(ipc.EnvSocket), TCPAddr: os.Getenv("RUVLLM_HELPER_LISTEN"),
		StateDir: filepath.Join(dir, "state"), ModelsDir: filepath.Join(dir, "models"), CacheDir: filepath.Join(dir, "cache"),
		Threads: 1, Version: "test", Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	ctx, stop := daemon.SignalContext(context.Background())
	defer stop()
	if err := serve.Run(ctx, serve.Options{Config: cfg, Model: os.Getenv("RUVLLM_HELPER_MODEL"), Preload: true, KeepAlive: time.Minute, MaxLoaded: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestStatusEnvStop drives status, socket, env and stop against a daemon
// in its own process: status names the socket, the TCP address and the
// pid; env's exports reach the daemon; stop ends the process and waits
// for it; then status says no daemon runs.
func TestStatusEnvStop(t *testing.T) {
	dir := t.TempDir()
	d := startHelperDaemon(t, dir, "127.0.0.1:0", nil)
	pid := d.cmd.Process.Pid

	out, _, err := runCLI(t, newSocketCmd())
	if err != nil || out != d.sock+"\n" {
		t.Fatalf("socket: %q %v", out, err)
	}
	out, _, err = runCLI(t, newStatusCmd(), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st statusReport
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	h := st.Health
	if h.PID != pid || h.Socket != d.sock || h.TCPAddress == "" || strings.HasSuffix(h.TCPAddress, ":0") {
		t.Fatalf("status --json health %+v (pid %d, socket %s)", h, pid, d.sock)
	}
	// The preloaded model shows once loaded.
	for deadline := time.Now().Add(10 * time.Second); len(h.Loaded) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out, _, _ = runCLI(t, newStatusCmd(), "--json")
		st = statusReport{}
		json.Unmarshal([]byte(out), &st)
		h = st.Health
	}
	out, _, err = runCLI(t, newStatusCmd())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`^ruvllmd +running, pid ` + strconv.Itoa(pid) + `, `, `^socket +` + regexp.QuoteMeta(d.sock) + `$`,
		`^tcp +` + regexp.QuoteMeta(h.TCPAddress) + ` \(bearer token in `, `^models +tiny \(qwen2 `, `^prefix cache +tiny: `} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(out) {
			t.Errorf("status lacks %s:\n%s", want, out)
		}
	}

	out, _, err = runCLI(t, newEnvCmd())
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || !strings.HasPrefix(line, "export ") || !strings.HasPrefix(v, "'") || !strings.HasSuffix(v, "'") {
			t.Fatalf("env line %q", line)
		}
		env[k] = strings.Trim(v, "'")
	}
	tok, _ := os.ReadFile(filepath.Join(dir, "state", "token"))
	if env["OPENAI_BASE_URL"] != "http://"+h.TCPAddress+"/v1" || env["OLLAMA_HOST"] != "http://"+h.TCPAddress ||
		env["OPENAI_API_KEY"] != strings.TrimSpace(string(tok)) || env["ANTHROPIC_BASE_URL"] != env["OLLAMA_HOST"] ||
		env["ANTHROPIC_API_KEY"] != env["OPENAI_API_KEY"] || len(env) != 5 {
		t.Fatalf("env %v (tcp %s)", env, h.TCPAddress)
	}
	req, _ := http.NewRequest("GET", env["OPENAI_BASE_URL"]+"/models", nil)
	req.Header.Set("Authorization", "Bearer "+env["OPENAI_API_KEY"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET $OPENAI_BASE_URL/models: %d", resp.StatusCode)
	}

	_, errOut, err := runCLI(t, newStopCmd())
	if err != nil || !strings.Contains(errOut, "stopped ruvllmd (pid "+strconv.Itoa(pid)+", through SIGTERM)") {
		t.Fatalf("stop: %v\n%s", err, errOut)
	}
	select {
	case err := <-d.exited:
		d.exited <- err // for the cleanup
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("daemon exit: %v", err)
		}
		if ee != nil && !ee.Success() {
			t.Fatalf("daemon exited with %v after stop", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stop returned, the daemon process is still there")
	}
	if _, _, err := runCLI(t, newStatusCmd()); err == nil || !strings.Contains(err.Error(), "ruvllmd is not running") {
		t.Fatalf("status after stop: %v", err)
	}
	if _, errOut, err := runCLI(t, newStopCmd()); err != nil || !strings.Contains(errOut, "not running") {
		t.Fatalf("stop without a daemon: %v %q", err, errOut)
	}
	if _, _, err := runCLI(t, newEnvCmd()); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("env without a daemon: %v", err)
	}
}

// TestEnvWithoutTCP: a daemon started without --listen has nothing SDK
// apps can reach: env fails and says how to start one with --listen.
func TestEnvWithoutTCP(t *testing.T) {
	dir := t.TempDir()
	startDaemon(t, dir, serve.Options{KeepAlive: time.Minute, MaxLoaded: 1})
	out, _, err := runCLI(t, newEnvCmd())
	if err == nil || out != "" || !strings.Contains(err.Error(), "no TCP listener") || !strings.Contains(err.Error(), "--listen 127.0.0.1:11434") {
		t.Fatalf("env without TCP: %q %v", out, err)
	}
	out, _, err = runCLI(t, newStatusCmd())
	if err != nil || !regexp.MustCompile(`(?m)^tcp +off \(`).MatchString(out) {
		t.Fatalf("status without TCP: %q %v", out, err)
	}
}

// fakeSystemdStop is the part of systemd's manager `ruvllm stop` uses:
// StopUnit, which here ends the daemon's process as systemd would.
type fakeSystemdStop struct {
	pid   int
	units chan string
}

func (f *fakeSystemdStop) StopUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	f.units <- name + " " + mode
	syscall.Kill(f.pid, syscall.SIGTERM)
	return "/org/freedesktop/systemd1/job/1", nil
}

// TestStopThroughSystemd: a daemon that systemd started (socket
// activation) is stopped through systemd's manager on the session bus,
// which stops ruvllmd.service and leaves the socket unit alone.
func TestStopThroughSystemd(t *testing.T) {
	bus := dbustest.Start(t)
	d := startActivatedDaemon(t, t.TempDir())

	conn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fake := &fakeSystemdStop{pid: d.cmd.Process.Pid, units: make(chan string, 4)}
	if err := conn.Export(fake, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.freedesktop.systemd1", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request name: %v %v", reply, err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)

	_, errOut, err := runCLI(t, newStopCmd())
	if err != nil || !strings.Contains(errOut, "through systemd") || !strings.Contains(errOut, "its socket stays") {
		t.Fatalf("stop: %v\n%s", err, errOut)
	}
	select {
	case u := <-fake.units:
		if u != "ruvllmd.service replace" {
			t.Fatalf("StopUnit %s", u)
		}
	default:
		t.Fatal("stop did not call systemd's StopUnit")
	}
	if len(fake.units) != 0 {
		t.Fatalf("more StopUnit calls: %s", <-fake.units)
	}
	if !processGone(d.cmd.Process.Pid) {
		t.Fatal("stop returned, the daemon process is still there")
	}
}

// TestModelPathErrors: a model file that is not there is an error naming
// it once by its absolute path, never "open: open"; chat says so before
// any daemon is started for it.
func TestModelPathErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	sock := filepath.Join(dir, "run", "s.sock")
	t.Setenv(ipc.EnvSocket, sock)
	abs := filepath.Join(dir, "nope.gguf")
	for _, tc := range []struct {
		cmd  func() *cobra.Command
		args []string
	}{
		{newChatCmd, []string{"-m", "nope.gguf"}},
		{newRunCmd, []string{"-m", "nope.gguf", "-p", "hi"}},
		{newInspectCmd, []string{"nope.gguf"}},
		{newBenchCmd, []string{"-m", "nope.gguf"}},
		{newTokenizeCmd, []string{"-m", "nope.gguf", "hi"}},
	} {
		c := tc.cmd()
		_, errOut, err := runCLI(t, c, tc.args...)
		if err == nil {
			t.Fatalf("%s %v: no error", c.Name(), tc.args)
		}
		msg := err.Error()
		if strings.Contains(msg, "open: open") || strings.Count(msg, "nope.gguf") != 1 {
			t.Errorf("%s %v: %q: want the file named once", c.Name(), tc.args, msg)
		}
		if c.Name() == "chat" {
			if !strings.Contains(msg, abs) || strings.Contains(errOut, "started ruvllmd") {
				t.Errorf("chat -m nope.gguf: %q (stderr %q): want %s named, no daemon started", msg, errOut, abs)
			}
			if _, err := os.Stat(sock); err == nil {
				t.Error("chat -m nope.gguf left a daemon socket")
			}
		}
	}
	if _, _, err := runCLI(t, newInspectCmd()); err == nil || !strings.Contains(err.Error(), "missing the model file (usage: ruvllm inspect FILE.gguf") {
		t.Errorf("inspect without an argument: %v", err)
	}
}

// TestChatModelPathStoresName: a conversation started with -m PATH
// records the model's name, as the daemon and the app name it, not the
// path.
func TestChatModelPathStoresName(t *testing.T) {
	dir, err := os.MkdirTemp("", "rvchatpath")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // after the daemon stops
	os.MkdirAll(filepath.Join(dir, "elsewhere"), 0o700)
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "qwen2", 1, 32, 2, 1, 64, 512
	if err := testmodel.Write(context.Background(), o, filepath.Join(dir, "elsewhere", "Tiny-Model.gguf")); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, dir, serve.Options{KeepAlive: time.Minute, MaxLoaded: 1})
	t.Chdir(dir)
	_, errOut, err := runCLIIn(t, strings.NewReader("hello\n/bye\n"), newChatCmd(), "-m", "elsewhere/Tiny-Model.gguf", "--temp", "0", "-n", "2")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`saved as conversation (conv-[0-9a-f]+)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("chat stderr %q", errOut)
	}
	c, err := ipc.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conv, err := c.Conversation(context.Background(), m[1])
	if err != nil {
		t.Fatal(err)
	}
	if conv.Model != "tiny-model" {
		t.Fatalf("conversation model %q, want the name tiny-model", conv.Model)
	}
}

// startActivatedDaemon runs a helper daemon in dir that is handed its
// listening socket as systemd's socket activation hands it, and checks that
// it reports systemd as what started it.
func startActivatedDaemon(t *testing.T, dir string) *helperDaemon {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "run"), 0o700)
	ln, err := net.Listen("unix", filepath.Join(dir, "run", "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // at the test's end: closing it removes the socket file
	f, err := ln.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	d := startHelperDaemon(t, dir, "", f)
	c, err := ipc.Dial(context.Background(), ipc.WithSocket(d.sock))
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(context.Background())
	c.Close()
	if err != nil || h.ServiceManager != "systemd" {
		t.Fatalf("health of a socket-activated daemon: %+v %v", h, err)
	}
	return d
}
