// Package daemon is ruvllmd: it listens on the user's Unix socket (and
// optionally on loopback TCP with a token), checks that every peer is the
// same user, serves the OpenAI, Ollama and native APIs over HTTP/1.1, and
// owns the models, the prefix caches and the state store.
package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

	stopping atomic.Bool // the grace period of a shutdown is over
	// draining is closed when a shutdown begins: event streams, which
	// never end on their own, end then instead of holding the shutdown
	// for its whole grace period.
	draining chan struct{}

	mu         sync.Mutex
	bodyLimits map[string]int64 // by URL path, overriding MaxBodyBytes
	// prefixLimits are body limits by URL path prefix.
	prefixLimits map[string]int64
	shutdown     []func(context.Context) error
	health       func() []ipc.LoadedModel
	tcp          *tcpListener
	// manager is the service manager that passed the socket ("" for none).
	manager string
	// socket is the socket file listenUnix created (nil for sockets a
	// service manager passed); the end of Run removes it, and only it.
	socket os.FileInfo
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
	// The adapters folder is the adapter pool's to create: one it cannot
	// create costs adapter installs, not the daemon.
	for _, d := range []string{cfg.StateDir, cfg.ModelsDir, cfg.CacheDir} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	db, err := openStore(filepath.Join(cfg.StateDir, "state.db"), cfg.Logger)
	if err != nil {
		return nil, err
	}
	db.SetLogger(cfg.Logger)
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), events: newEvents(), store: db,
		metrics: prometheus.NewRegistry(), started: time.Now(), draining: make(chan struct{})}
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.httpReqs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ruvllm_http_requests_total", Help: "HTTP requests by route and status."}, []string{"route", "code"})
	s.httpDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ruvllm_http_request_duration_seconds", Help: "HTTP request duration by route.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"route"})
	s.metrics.MustRegister(s.httpReqs, s.httpDur)
	if cfg.TCPAddr != "" {
		if s.token, err = loadToken(filepath.Join(cfg.StateDir, "token"), s.log); err != nil {
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

// SetBodyLimitPrefix allows request bodies of up to n bytes on every URL
// path under prefix.
func (s *Server) SetBodyLimitPrefix(prefix string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prefixLimits == nil {
		s.prefixLimits = map[string]int64{}
	}
	s.prefixLimits[prefix] = n
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

// StreamEndGrace is how long, once the grace period is over and in-flight
// requests are cancelled, their handlers get to send each open stream its
// closing error event before the connections are cut.
const StreamEndGrace = 2 * time.Second

// ErrShuttingDown is the error a request cut off by shutdown ends with.
var ErrShuttingDown = errors.New("ruvllmd is shutting down")

// ShuttingDown reports whether the grace period of a shutdown is over and
// in-flight requests are being cancelled: a handler whose request context
// ends then should tell its client ErrShuttingDown (a stream: an error
// event in its protocol) rather than treat it as a client that left.
func (s *Server) ShuttingDown() bool { return s.stopping.Load() }

// Run listens and serves until ctx is cancelled, then shuts down
// gracefully: it stops accepting, lets in-flight requests finish for up to
// grace, cancels the rest (giving streams StreamEndGrace to send their
// final error event), runs the shutdown hooks and closes the store.
func (s *Server) Run(ctx context.Context, grace time.Duration) error {
	unixLns, tcp, err := s.listen()
	if err != nil {
		s.store.Close()
		return err
	}
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	handler := s.wrap(s.mux)
	base := func(net.Listener) context.Context { return reqCtx }
	connCtx := func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey, c) }
	errLog := log.New(serverErrors{s.log}, "", 0)
	// The Unix socket only admits the owner: its connections may idle.
	local := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute,
		BaseContext: base, ConnContext: connCtx, ErrorLog: errLog}
	servers := []*http.Server{local}
	errc := make(chan error, len(unixLns)+1)
	if tcp != nil {
		// Known before the socket serves: a client's first /v1/health
		// there could come before it and find no TCP address or token.
		s.mu.Lock()
		s.tcp = tcp
		s.mu.Unlock()
	}
	for _, ln := range unixLns {
		go func() { errc <- local.Serve(ln) }()
	}
	if tcp != nil {
		remote := &http.Server{Handler: handler, ReadHeaderTimeout: TCPHeaderTimeout, ReadTimeout: TCPReadTimeout,
			IdleTimeout: TCPIdleTimeout, BaseContext: base, ConnContext: connCtx, ErrorLog: errLog}
		servers = append(servers, remote)
		go func() { errc <- remote.Serve(tcp) }()
	}
	s.log.Info("ruvllmd listening", "socket", s.cfg.SocketPath, "tcp", s.cfg.TCPAddr, "pid", os.Getpid())
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	s.log.Info("shutting down", "grace", grace)
	close(s.draining)
	hardCtx, hardCancel := context.WithTimeout(context.Background(), grace+StreamEndGrace)
	defer hardCancel()
	drained := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, srv := range servers {
			wg.Go(func() { srv.Shutdown(hardCtx) })
		}
		wg.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(grace):
		s.log.Warn("grace period over: cancelling in-flight requests")
		s.stopping.Store(true)
		cancelReqs()
		<-drained
		if hardCtx.Err() != nil {
			s.log.Warn("closing connections whose handlers did not end")
			for _, srv := range servers {
				srv.Close()
			}
		}
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
	if s.cfg.SocketPath != "" && len(unixLns) > 0 && os.Getenv("LISTEN_FDS") == "" {
		if _, isPeer := unixLns[0].(*peerListener); isPeer {
			removeOwnSocket(s.cfg.SocketPath, s.socket)
		}
	}
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

// serverErrors is the http.Servers' error log. Its lines go to the
// daemon's log at debug (a client that hung up, a bad request line),
// except a handler's panic, which net/http recovers, logs with its stack
// and answers by closing the connection: that is a bug of ours, and at
// debug no one saw it.
type serverErrors struct{ log *slog.Logger }

func (e serverErrors) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelDebug
	if strings.HasPrefix(msg, "http: panic serving") {
		level = slog.LevelError
	}
	e.log.Log(context.Background(), level, msg)
	return len(p), nil
}

// removeOwnSocket removes the socket file at path if it is still own, the
// one this daemon created, and nothing else that may have taken its place:
// the listener's close freed the path when the shutdown began, so a daemon
// started during the grace period has its own socket there, which
// removing made unreachable while it ran. The new socket often reuses the
// freed inode, so its creation time tells the two apart.
func removeOwnSocket(path string, own os.FileInfo) {
	st, err := os.Lstat(path)
	if err == nil && own != nil && os.SameFile(st, own) && st.ModTime().Equal(own.ModTime()) {
		os.Remove(path)
	}
}

type ctxKey int

const connKey ctxKey = 0

// wrap adds token checks on TCP, body limits and metrics.
func (s *Server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tc, isTCP := r.Context().Value(connKey).(*tcpConn); isTCP {
			switch {
			case s.tokenOK(r):
				tc.authenticated()
			case !tc.sameUser && tc.peerErr != nil:
				// Not "wrong token": the owner, who sends none, is
				// refused only until descriptors free up.
				s.log.Warn("cannot tell a TCP client's user", "remote", tc.RemoteAddr().String(), "err", tc.peerErr)
				w.Header().Set("Connection", "close")
				w.Header().Set("Retry-After", "1")
				writeError(w, r, http.StatusServiceUnavailable, fmt.Sprintf("server busy: cannot tell whether this connection is the daemon's own user (%v): try again, or send the token", tc.peerErr))
				s.httpReqs.WithLabelValues("unauthorized", "503").Inc()
				return
			case !tc.sameUser:
				s.unauthorized(w, r)
				return
			default:
				// Admitted as the owner without the token: a web page in
				// the user's browser is that too (browserRefusal).
				if why := browserRefusal(r); why != "" {
					writeError(w, r, http.StatusForbidden, why)
					s.httpReqs.WithLabelValues("forbidden", "403").Inc()
					return
				}
			}
		}
		limit := s.cfg.MaxBodyBytes
		s.mu.Lock()
		if l, ok := s.bodyLimits[r.URL.Path]; ok {
			limit = l
		}
		for p, l := range s.prefixLimits {
			if strings.HasPrefix(r.URL.Path, p) {
				limit = l
			}
		}
		s.mu.Unlock()
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: 200}
		if enc := r.Header.Get("Content-Encoding"); enc != "" && r.ContentLength != 0 && !strings.EqualFold(enc, "identity") {
			// Read as it came, a compressed body was "invalid JSON at
			// byte 1", which named neither the header nor the fix.
			rec.Header().Set("Connection", "close")
			writeError(rec, r, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Encoding %q is not supported: send the body uncompressed", enc))
		} else if r.ContentLength > limit {
			// Refused before a byte of the body is read.
			rec.Header().Set("Connection", "close")
			writeError(rec, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit))
		} else {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			h.ServeHTTP(rec, r)
		}
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		s.httpReqs.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		s.httpDur.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// unauthorized answers a TCP request without the right token and closes
// the connection.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	w.Header().Set("WWW-Authenticate", `Bearer realm="ruvllm"`)
	writeError(w, r, http.StatusUnauthorized, "missing or wrong token (send \"Authorization: Bearer <token>\" or \"x-api-key: <token>\" with the token from the daemon's token file)")
	s.httpReqs.WithLabelValues("unauthorized", "401").Inc()
}

// writeError answers an error in the shape of the request's protocol:
// Ollama's {"error": "..."} under /api/, OpenAI's error object elsewhere.
func writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		WriteJSON(w, status, map[string]string{"error": msg})
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/messages") { // Anthropic's shape
		typ := "invalid_request_error"
		switch {
		case status == http.StatusUnauthorized:
			typ = "authentication_error"
		case status == http.StatusRequestEntityTooLarge:
			typ = "request_too_large"
		case status >= 500:
			typ = "api_error"
		}
		WriteJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
		return
	}
	var body ipc.OpenAIError
	body.Error.Message = msg
	switch {
	case status == http.StatusUnauthorized:
		body.Error.Type = "authentication_error"
	case status >= 500:
		body.Error.Type = "server_error"
	default:
		body.Error.Type = "invalid_request_error"
	}
	WriteJSON(w, status, body)
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
	h := ipc.Health{Status: "ok", Version: s.cfg.Version, PID: os.Getpid(), UptimeSeconds: time.Since(s.started).Seconds(),
		Socket: s.cfg.SocketPath, CacheDir: s.cfg.CacheDir}
	s.mu.Lock()
	h.ServiceManager = s.manager
	if s.tcp != nil {
		h.TCPAddress = s.tcp.Addr().String()
		h.TokenFile = filepath.Join(s.cfg.StateDir, "token")
		h.TCPSameUserNoToken = s.tcp.trustSameUser && tcpPeerUIDSupported
	}
	s.mu.Unlock()
	if hf != nil {
		h.Loaded = hf()
	}
	WriteJSON(w, http.StatusOK, h)
}

// handleEvents streams the event bus as server-sent events until the
// client leaves or a shutdown begins.
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
		case <-s.draining:
			// A subscriber is no request in flight: with one open (the
			// desktop app always is), every stop waited out the grace
			// period and then logged that it cancelled requests.
			return
		}
	}
}

// MaxListLimit is the most records a listing (GET /v1/requests,
// /v1/feedback, the fine-tuning lists) answers at once.
const MaxListLimit = 1000

// ListLimit reads a listing's ?limit=: def when absent, else an integer
// from 1 to MaxListLimit; the error says what it must be.
func ListLimit(r *http.Request, def int) (int, error) {
	q := r.URL.Query().Get("limit")
	if q == "" {
		return def, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 || n > MaxListLimit {
		return 0, fmt.Errorf("must be an integer from 1 to %d, not %q", MaxListLimit, q)
	}
	return n, nil
}

// handleRequests answers the newest records of the request log: limit
// (default 50) of them. A limit that is not an integer from 1 to
// MaxListLimit is a 400 naming it, as on GET /v1/feedback; it was
// answered with 50 records, so ?limit=5000 looked like a log of 50.
func (s *Server) handleRequests(w http.ResponseWriter, r *http.Request) {
	limit, err := ListLimit(r, 50)
	if err != nil {
		var body ipc.OpenAIError
		param := "limit"
		body.Error.Message = "limit " + err.Error()
		body.Error.Type, body.Error.Param = "invalid_request_error", &param
		WriteJSON(w, http.StatusBadRequest, body)
		return
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

// WriteJSON writes v as a JSON response with the given status. A value
// that cannot be encoded (a NaN, say) is a 500 that says so, never a
// status line with an empty body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		json.NewEncoder(&buf).Encode(map[string]string{"error": "ruvllmd could not encode its response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// openStore opens the state store at path. A corrupt one is renamed aside
// (path.corrupt-UNIXTIME, kept for inspection or recovery) and the daemon
// starts with an empty store, saying so: it would otherwise die at the
// first request that read the bad page, and at every start after.
func openStore(path string, log *slog.Logger) (*store.DB, error) {
	db, err := store.Open(path)
	if !errors.Is(err, store.ErrCorrupt) {
		return db, err
	}
	aside := fmt.Sprintf("%s.corrupt-%d", path, time.Now().Unix())
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, fmt.Errorf("%w (setting it aside: %v)", err, rerr)
	}
	log.Error("state store is corrupt: set aside, starting with an empty one; the old file holds the settings, "+
		"model registry, created models, conversations, feedback and learning state", "path", path, "aside", aside, "err", err)
	return store.Open(path)
}
