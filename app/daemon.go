package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// AppName is how the app names itself in the daemon's request log.
const AppName = "ruvllm-app"

// connect dials the daemon, starts one when none answers, waits for the
// default model and picks the conversation store.
func (a *App) connect(ctx context.Context) error {
	sock := a.cfg.Socket
	if sock == "" {
		p, err := ipc.SocketPath()
		if err != nil {
			return err
		}
		sock = p
	}
	a.setStatus(func(s *Status) { s.Socket = sock })
	dial := func(ctx context.Context) (*ipc.Client, error) {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return ipc.Dial(dctx, ipc.WithSocket(sock), ipc.WithApp(AppName))
	}
	c, err := dial(ctx)
	if errors.Is(err, ipc.ErrNotRunning) {
		c, err = a.startDaemon(ctx, sock, dial)
	}
	if err != nil {
		return err
	}
	store, notice, err := pickStore(ctx, c)
	if err != nil {
		c.Close()
		return err
	}
	a.mu.Lock()
	a.client, a.store = c, store
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.watchEvents(ctx, c)
	}()
	return a.waitModel(ctx, c, notice)
}

// pickStore uses the daemon's conversations API, or keeps conversations
// in memory when the daemon predates it (404).
func pickStore(ctx context.Context, c *ipc.Client) (convStore, string, error) {
	_, err := c.Conversations(ctx)
	var apiErr *ipc.APIError
	switch {
	case err == nil:
		return daemonStore{c}, "", nil
	case errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed):
		return newMemStore(), "This ruvllmd does not store conversations; they last until the app closes.", nil
	default:
		return nil, "", fmt.Errorf("list conversations: %w", err)
	}
}

// waitModel reports the daemon ready once the default model of a daemon
// the app started is loaded, or at once when there is none (models then
// load on first use). It asks the daemon to load the model (Ollama's
// empty /api/generate), which answers when the load ends: a model the
// daemon refuses is named in the status's notice at once. Polling the
// loaded models instead waited StartTimeout for a model that had failed,
// showing "Loading…", and then reported ready without a word.
func (a *App) waitModel(ctx context.Context, c *ipc.Client, notice string) error {
	a.mu.Lock()
	started := a.daemon != nil
	a.mu.Unlock()
	h, err := c.Health(ctx)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	if started && a.cfg.Model != "" && len(h.Loaded) == 0 {
		a.setStatus(func(s *Status) {
			s.State, s.Message, s.Version = StateLoading, "Loading "+a.cfg.Model+"…", h.Version
		})
		lctx, cancel := context.WithTimeout(ctx, a.cfg.StartTimeout)
		err := c.Do(lctx, http.MethodPost, "/api/generate", map[string]any{"model": a.cfg.Model, "prompt": "", "stream": false}, nil)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			notice = strings.TrimSpace(notice + " " + fmt.Sprintf("The model %s could not be loaded: %v", a.cfg.Model, err))
		}
		if h, err = c.Health(ctx); err != nil {
			return fmt.Errorf("health: %w", err)
		}
	}
	a.setStatus(func(s *Status) {
		s.State, s.Message, s.Notice, s.Version, s.Loaded, s.Started = StateReady, "Connected", notice, h.Version, h.Loaded, started
	})
	return nil
}

// watchEvents forwards the daemon's events to the UI and keeps the loaded
// models in the status current.
func (a *App) watchEvents(ctx context.Context, c *ipc.Client) {
	for ctx.Err() == nil {
		err := c.Events(ctx, func(e ipc.Event) error {
			a.emit(EventDaemon, e)
			if strings.HasPrefix(e.Type, "model.") {
				if h, err := c.Health(ctx); err == nil {
					a.setStatus(func(s *Status) { s.Loaded = h.Loaded })
				}
			}
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("daemon events", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// daemonCommand finds how to run the daemon: cfg.Daemon, ruvllmd next to
// the executable or in PATH, else `ruvllm daemon`.
func (a *App) daemonCommand() (string, []string, error) {
	if a.cfg.Daemon != "" {
		return a.cfg.Daemon, nil, nil
	}
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	for _, name := range []string{"ruvllmd", "ruvllm"} {
		var args []string
		if name == "ruvllm" {
			args = []string{"daemon"}
		}
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, args, nil
			}
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, args, nil
		}
	}
	return "", nil, errors.New("ruvllmd not found next to the app or in PATH; install ruvllm or run `ruvllm service install`")
}

// startDaemon launches ruvllmd on sock and dials it until it answers.
func (a *App) startDaemon(ctx context.Context, sock string, dial func(context.Context) (*ipc.Client, error)) (*ipc.Client, error) {
	bin, args, err := a.daemonCommand()
	if err != nil {
		return nil, err
	}
	args = append(args, "--socket", sock)
	if a.cfg.Model != "" {
		args = append(args, "--model", a.cfg.Model)
	}
	args = append(args, a.cfg.DaemonArgs...)
	a.setStatus(func(s *Status) { s.State, s.Message = StateStarting, "Starting ruvllmd…" })
	a.log.Info("starting daemon", "bin", bin, "args", args)
	// Not tied to ctx: the daemon outlives the app unless StopDaemon.
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), ipc.EnvSocket+"="+sock)
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Wait returns once the daemon exits, even if a child it left holds
	// its output open.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	a.mu.Lock()
	a.daemon = cmd
	a.mu.Unlock()
	deadline := time.Now().Add(a.cfg.StartTimeout)
	for {
		c, err := dial(ctx)
		if err == nil {
			return c, nil
		}
		select {
		case werr := <-exited:
			return nil, fmt.Errorf("ruvllmd exited (%v): %s", werr, out.String())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			// A daemon of ours that never answered is stopped: it was
			// left running after the app gave up, and every retry of
			// the app started one more beside it.
			a.mu.Lock()
			a.daemon = nil
			a.mu.Unlock()
			endGroup(cmd, exited, 5*time.Second)
			return nil, fmt.Errorf("ruvllmd did not answer within %s (stopped it): %v", a.cfg.StartTimeout, err)
		}
	}
}

// endGroup ends the process group of cmd (started with Setpgid, so its
// pid is the group's id), whose Wait reports on exited: SIGTERM, then
// SIGKILL after grace. It returns once cmd has exited.
func endGroup(cmd *exec.Cmd, exited <-chan error, grace time.Duration) {
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
}

// stopProcess sends SIGTERM and, after grace, SIGKILL.
func stopProcess(cmd *exec.Cmd, grace time.Duration) {
	if cmd.Process == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for cmd.ProcessState == nil {
			if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		cmd.Process.Kill()
	}
}

// tailBuffer keeps the last 4 KiB written, for error messages.
type tailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if t.b.Len() > 4096 {
		keep := append([]byte(nil), t.b.Bytes()[t.b.Len()-4096:]...)
		t.b.Reset()
		t.b.Write(keep)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(t.b.String())
}
