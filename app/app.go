// Package app holds the desktop app's Go side: the methods the Wails
// frontend calls and the events it streams back. It talks to ruvllmd only
// through ipc, starting the daemon when none answers. The Wails wiring is
// in the root main.go; tests and the browser dev server drive an App
// directly with their own Emitter.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// Emitter delivers an event to the frontend (Wails' runtime.EventsEmit in
// the desktop app).
type Emitter func(event string, data any)

// Event names sent to the frontend.
const (
	EventStatus      = "daemon:status"   // Status
	EventDaemon      = "daemon:event"    // ipc.Event, forwarded from /v1/events
	EventChatStart   = "chat:start"      // ChatStart
	EventChatToken   = "chat:token"      // ChatToken
	EventChatDone    = "chat:done"       // ChatDone
	EventChatError   = "chat:error"      // ChatError
	EventAdapterDrop = "adapter:install" // AdapterInstall
)

// Config says where the daemon is and how to start it.
type Config struct {
	// Socket is the daemon's socket ("" for ipc.SocketPath()).
	Socket string
	// Daemon is the ruvllmd binary to start when none answers ("": next
	// to the app's executable, else in PATH, else `ruvllm daemon`).
	Daemon string
	// DaemonArgs are extra arguments for a started daemon.
	DaemonArgs []string
	// Model is the model new conversations use ("" for the daemon's
	// default, else the first model it lists): a name, or a .gguf path,
	// which a daemon the app starts preloads and which conversations then
	// name as the daemon lists it (ipc.ModelNameFromPath).
	Model string
	// StartTimeout bounds starting the daemon (default 60s).
	StartTimeout time.Duration
	// StopDaemon stops a daemon the app started when the app closes; off,
	// it keeps serving other apps as a per-user daemon does.
	StopDaemon bool
	// TracePath, when set, receives one JSON line per finished reply (for
	// end-to-end tests and debugging).
	TracePath string
	Logger    *slog.Logger
	// Window runs the window's lifecycle: hiding it (the status icon or a
	// second launch brings it back) and quitting. The desktop binary sets
	// it; without it HideWindow and Quit do nothing.
	Window WindowControl
}

// WindowControl hides the window and quits the app (main.go's shell).
type WindowControl interface {
	Hide()
	Quit()
}

// State is the app's connection state.
type State string

// Connection states, in the order the app passes through them.
const (
	StateConnecting State = "connecting"
	StateStarting   State = "starting" // launching ruvllmd
	StateLoading    State = "loading"  // the daemon answers, the model loads
	StateReady      State = "ready"
	StateFailed     State = "failed"
)

// Status is what the UI shows about the daemon.
type Status struct {
	State   State  `json:"state"`
	Message string `json:"message"`
	// Notice is a lasting remark (e.g. conversations kept in memory).
	Notice  string            `json:"notice,omitempty"`
	Version string            `json:"version,omitempty"`
	Started bool              `json:"started"` // the app started the daemon
	Loaded  []ipc.LoadedModel `json:"loaded,omitempty"`
	Socket  string            `json:"socket"`
}

// App is the bound Wails object. Its exported methods are the frontend's
// API; each returns an error the frontend sees as a rejected promise.
type App struct {
	cfg  Config
	emit Emitter
	log  *slog.Logger

	ctx    context.Context // the app's lifetime
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	status  Status
	client  *ipc.Client
	store   convStore
	daemon  *exec.Cmd
	runs    map[string]*run // conversation id → reply in progress
	replies []ReplyStat     // last replies, newest last
	trace   *tracer
	ready   chan struct{} // closed when connected (or failed)
}

// ErrNotConnected is returned by methods called before the daemon answers.
var ErrNotConnected = errors.New("not connected to ruvllmd")

// New returns an App; call Start to connect.
func New(cfg Config, emit Emitter) *App {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if emit == nil {
		emit = func(string, any) {}
	}
	return &App{cfg: cfg, emit: emit, log: cfg.Logger, runs: map[string]*run{},
		status: Status{State: StateConnecting, Message: "Connecting to ruvllmd…"}, ready: make(chan struct{})}
}

// Start connects to the daemon in the background, starting it if needed,
// and reports progress as daemon:status events. ctx bounds the app's life.
func (a *App) Start(ctx context.Context) {
	a.ctx, a.cancel = context.WithCancel(ctx)
	if a.cfg.TracePath != "" {
		t, err := openTracer(a.cfg.TracePath)
		if err != nil {
			a.log.Error("trace file", "err", err)
		}
		a.trace = t
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(a.ready)
		if err := a.connect(a.ctx); err != nil {
			a.log.Error("connect", "err", err)
			a.setStatus(func(s *Status) { s.State, s.Message = StateFailed, err.Error() })
		}
	}()
}

// Close cancels replies in progress, stops background work and, when
// configured, the daemon the app started.
func (a *App) Close() {
	if a.cancel == nil {
		return
	}
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	cmd, c := a.daemon, a.client
	a.mu.Unlock()
	if c != nil {
		c.Close()
	}
	if cmd != nil && a.cfg.StopDaemon {
		stopProcess(cmd, 10*time.Second)
	}
	if a.trace != nil {
		a.trace.Close()
	}
}

// WaitReady blocks until the app connected or failed, or ctx ends.
func (a *App) WaitReady(ctx context.Context) error {
	select {
	case <-a.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if st := a.Status(); st.State == StateFailed {
		return fmt.Errorf("%w: %s", ErrNotConnected, st.Message)
	}
	return nil
}

// Status returns the connection state.
func (a *App) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

func (a *App) setStatus(f func(*Status)) {
	a.mu.Lock()
	prev := a.status.State
	f(&a.status)
	s := a.status
	a.mu.Unlock()
	if a.trace != nil && s.State != prev {
		a.trace.State(s.State)
	}
	a.emit(EventStatus, s)
}

// conn returns the client and store, or ErrNotConnected.
func (a *App) conn() (*ipc.Client, convStore, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil || a.store == nil {
		return nil, nil, ErrNotConnected
	}
	return a.client, a.store, nil
}

// callCtx bounds a frontend call.
func (a *App) callCtx() (context.Context, context.CancelFunc) {
	base := a.ctx
	if base == nil {
		base = context.Background()
	}
	return context.WithTimeout(base, 30*time.Second)
}

// modelName is the name new conversations use for cfg.Model: a .gguf path
// becomes the name the daemon lists the file under.
func (c Config) modelName() string {
	if strings.EqualFold(filepath.Ext(c.Model), ".gguf") {
		return ipc.ModelNameFromPath(c.Model)
	}
	return c.Model
}
