// Package daemon is ruvllmd: it listens on the user's Unix socket (and
// optionally on loopback TCP with a token), checks that every peer is the
// same user, serves the OpenAI, Ollama and native APIs over HTTP/1.1, and
// owns the models, the prefix caches and the state store.
package daemon

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ruvllm/ruvllm/daemon/store"
	"github.com/ruvllm/ruvllm/ipc"
)

// Server is one ruvllmd instance.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	events  *Events
	store   *store.DB
	metrics *prometheus.Registry
	token   string
	started time.Time

	httpReqs *prometheus.CounterVec
	httpDur  *prometheus.HistogramVec

	mu         sync.Mutex
	bodyLimits map[string]int64 // by URL path, overriding MaxBodyBytes
	shutdown   []func(context.Context) error
	health     func() []ipc.LoadedModel
	listeners  []net.Listener
}

// New prepares a server: directories, state store, token and metrics. It
// does not listen yet.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.socketMode == 0 {
		cfg.socketMode, cfg.dirMode = 0o600, 0o700
	}
	for _, d := range []string{cfg.StateDir, cfg.ModelsDir, cfg.AdaptersDir, cfg.CacheDir} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	db, err := store.Open(filepath.Join(cfg.StateDir, "state.db"))
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), events: newEvents(), store: db,
		metrics: prometheus.NewRegistry(), started: time.Now()}
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.httpReqs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ruvllm_http_requests_total", Help: "HTTP requests by route and status."}, []string{"route", "code"})
	s.httpDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ruvllm_http_request_duration_seconds", Help: "HTTP request duration by route.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"route"})
	s.metrics.MustRegister(s.httpReqs, s.httpDur)
	if cfg.TCPAddr != "" {
		if s.token, err = loadToken(filepath.Join(cfg.StateDir, "token")); err != nil {
			db.Close()
			return nil, err
		}
	}
	s.mux.HandleFunc("GET /v1/health", s.handleHealth)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("GET /v1/events", s.handleEvents)
	s.mux.HandleFunc("GET /v1/requests", s.handleRequests)
	return s, nil
}

// Config returns the server's configuration.
func (s *Server) Config() Config { return s.cfg }

// Logger returns the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Handle mounts a handler on a Go 1.22 ServeMux pattern ("POST /v1/x").
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// SetBodyLimit allows request bodies of up to n bytes on the URL path
// (instead of MaxBodyBytes), for uploads such as adapter files.
func (s *Server) SetBodyLimit(path string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bodyLimits == nil {
		s.bodyLimits = map[string]int64{}
	}
	s.bodyLimits[path] = n
}

// Events is the server's event bus.
func (s *Server) Events() *Events { return s.events }

// Store is the state database.
func (s *Server) Store() *store.DB { return s.store }

// Metrics is the Prometheus registry served at /metrics.
func (s *Server) Metrics() *prometheus.Registry { return s.metrics }

// Token is the bearer token of the TCP listener ("" when it is off).
func (s *Server) Token() string { return s.token }

// OnShutdown registers fn to run during graceful shutdown, before the
// store closes.
func (s *Server) OnShutdown(fn func(context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown = append(s.shutdown, fn)
}

// SetHealth installs the function that lists loaded models for /v1/health.
func (s *Server) SetHealth(fn func() []ipc.LoadedModel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health = fn
}

func loadToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	tok := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	return tok, nil
}

// Run listens and serves until ctx is cancelled, then shuts down
// gracefully: it stops accepting, lets in-flight requests finish for up to
// grace, cancels the rest, runs the shutdown hooks and closes the store.
func (s *Server) Run(ctx context.Context, grace time.Duration) error {
	lns, err := s.listen()
	if err != nil {
		s.store.Close()
		return err
	}
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	srv := &http.Server{
		Handler:           s.wrap(s.mux),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey, c) },
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- srv.Serve(ln) }()
	}
	s.log.Info("ruvllmd listening", "socket", s.cfg.SocketPath, "tcp", s.cfg.TCPAddr, "pid", os.Getpid())
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	s.log.Info("shutting down", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("in-flight requests cancelled at the deadline", "err", err)
		cancelReqs()
		srv.Close()
	}
	s.mu.Lock()
	hooks := s.shutdown
	s.mu.Unlock()
	hctx, hcancel := context.WithTimeout(context.Background(), grace)
	defer hcancel()
	for _, h := range hooks {
		if err := h(hctx); err != nil {
			s.log.Error("shutdown hook", "err", err)
		}
	}
	if err := s.store.Close(); err != nil {
		s.log.Error("close store", "err", err)
	}
	if s.cfg.SocketPath != "" && os.Getenv("LISTEN_FDS") == "" {
		os.Remove(s.cfg.SocketPath)
	}
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

// listen opens the Unix socket (or takes the ones systemd or launchd
// passed) and the optional TCP listener.
func (s *Server) listen() ([]net.Listener, error) {
	var lns []net.Listener
	activated, err := activationListeners()
	if err != nil {
		return nil, err
	}
	if len(activated) > 0 {
		for _, ln := range activated {
			lns = append(lns, &peerListener{Listener: ln, uid: uint32(os.Getuid()), log: s.log})
		}
	} else {
		ln, err := s.listenUnix()
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
	}
	if s.cfg.TCPAddr != "" {
		host, _, err := net.SplitHostPort(s.cfg.TCPAddr)
		if err != nil {
			return nil, fmt.Errorf("--listen %s: %w", s.cfg.TCPAddr, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("--listen %s: only loopback addresses are allowed", s.cfg.TCPAddr)
		}
		ln, err := net.Listen("tcp", s.cfg.TCPAddr)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", s.cfg.TCPAddr, err)
		}
		lns = append(lns, &tcpListener{ln})
	}
	return lns, nil
}

func (s *Server) listenUnix() (net.Listener, error) {
	path := s.cfg.SocketPath
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, s.cfg.dirMode); err != nil {
		return nil, fmt.Errorf("socket dir %s: %w", dir, err)
	}
	if err := checkSocketDir(dir, s.cfg.dirMode); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another ruvllmd is running on %s", path)
		}
		os.Remove(path) // stale: nothing answers
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if err := os.Chmod(path, s.cfg.socketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return &peerListener{Listener: ln, uid: uint32(os.Getuid()), log: s.log}, nil
}

// checkSocketDir refuses a socket directory another user could tamper
// with.
func checkSocketDir(dir string, mode os.FileMode) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("socket dir %s is owned by uid %d, not us", dir, sys.Uid)
	}
	if st.Mode().Perm()&0o022 != 0 && mode&0o022 == 0 {
		return fmt.Errorf("socket dir %s is group- or world-writable (%v)", dir, st.Mode().Perm())
	}
	return nil
}

// activationListeners returns sockets passed by systemd (LISTEN_FDS) or
// launchd.
func activationListeners() ([]net.Listener, error) {
	if pid, _ := strconv.Atoi(os.Getenv("LISTEN_PID")); pid == os.Getpid() {
		n, _ := strconv.Atoi(os.Getenv("LISTEN_FDS"))
		var lns []net.Listener
		for fd := 3; fd < 3+n; fd++ {
			f := os.NewFile(uintptr(fd), "systemd-socket")
			ln, err := net.FileListener(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("socket activation fd %d: %w", fd, err)
			}
			lns = append(lns, ln)
		}
		os.Unsetenv("LISTEN_PID")
		os.Unsetenv("LISTEN_FDS")
		os.Unsetenv("LISTEN_FDNAMES")
		return lns, nil
	}
	return launchdListeners()
}

// peerListener closes connections from any user other than uid.
type peerListener struct {
	net.Listener
	uid uint32
	log *slog.Logger
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := ipc.PeerUID(c)
		if err != nil || uid != l.uid {
			l.log.Warn("refused connection from another user", "peer_uid", uid, "err", err)
			c.Close()
			continue
		}
		return c, nil
	}
}

// tcpListener marks TCP connections so the handler demands the token.
type tcpListener struct{ net.Listener }

type tcpConn struct{ net.Conn }

func (l *tcpListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tcpConn{c}, nil
}

type ctxKey int

const connKey ctxKey = 0

// wrap adds body limits, token checks on TCP, metrics and panic safety.
func (s *Server) wrap(h http.Handler) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, isTCP := r.Context().Value(connKey).(tcpConn); isTCP {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"error":{"message":"missing or wrong bearer token","type":"authentication_error"}}` + "\n"))
				return
			}
		}
		limit := s.cfg.MaxBodyBytes
		s.mu.Lock()
		if l, ok := s.bodyLimits[r.URL.Path]; ok {
			limit = l
		}
		s.mu.Unlock()
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: 200}
		h.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		s.httpReqs.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		s.httpDur.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
	return inner
}

// statusRecorder remembers the status code and keeps Flush working.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) { r.code = code; r.ResponseWriter.WriteHeader(code) }
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	hf := s.health
	s.mu.Unlock()
	h := ipc.Health{Status: "ok", Version: s.cfg.Version, PID: os.Getpid(), UptimeSeconds: time.Since(s.started).Seconds()}
	if hf != nil {
		h.Loaded = hf()
	}
	WriteJSON(w, http.StatusOK, h)
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	// Subscribe before answering, so a client that has the response
	// headers misses no event published after them.
	ch := s.events.Subscribe(r.Context())
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
			fl.Flush()
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) handleRequests(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	recs, err := s.store.RecentRequests(r.Context(), limit)
	if err != nil {
		WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	if recs == nil {
		recs = []ipc.RequestRecord{}
	}
	WriteJSON(w, http.StatusOK, recs)
}

// WriteJSON writes v as a JSON response with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
