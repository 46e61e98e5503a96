package ipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// ErrNotRunning is returned by Dial when nothing answers on the socket.
var ErrNotRunning = errors.New("ruvllmd is not running")

// ErrNoAnswer is returned by Dial when a process accepts connections on
// the socket but does not answer the health check in time: a daemon that
// is stopped (SIGSTOP, a debugger) or wedged. It is not ErrNotRunning:
// starting another daemon would not help.
var ErrNoAnswer = errors.New("ruvllmd accepts connections but does not answer")

// dialHealthTimeout bounds Dial's health check: every CLI command (status
// and stop included) waited forever on a daemon that did not answer.
var dialHealthTimeout = 10 * time.Second

// Client talks to ruvllmd over its Unix socket (or the optional loopback
// TCP listener with a bearer token). It is safe for concurrent use.
type Client struct {
	http  *http.Client
	base  string
	token string
	app   string
}

type options struct {
	socket, tcp, token, app string
}

// Option configures Dial.
type Option func(*options)

// WithSocket connects to the Unix socket at path instead of SocketPath().
func WithSocket(path string) Option { return func(o *options) { o.socket = path } }

// WithTCP connects to the loopback TCP listener with a bearer token.
func WithTCP(addr, token string) Option { return func(o *options) { o.tcp, o.token = addr, token } }

// WithApp names the calling app in the daemon's request log.
func WithApp(name string) Option { return func(o *options) { o.app = name } }

// Dial connects to the daemon and checks it answers.
func Dial(ctx context.Context, opts ...Option) (*Client, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	c := &Client{token: o.token, app: o.app}
	tr := &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second}
	// connected records that something accepted a connection: a health
	// check that then runs out of time (ours or the caller's deadline)
	// met a server that does not answer, not a missing one.
	var connected atomic.Bool
	if o.tcp != "" {
		c.base = "http://" + o.tcp
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			connected.Store(err == nil)
			return conn, err
		}
	} else {
		path := o.socket
		if path == "" {
			p, err := SocketPath()
			if err != nil {
				return nil, err
			}
			path = p
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := DialSocket(ctx, path)
			connected.Store(err == nil)
			return conn, err
		}
		c.base = "http://ruvllm"
	}
	c.http = &http.Client{Transport: tr}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, dialHealthTimeout)
	defer cancel()
	if _, err := c.Health(hctx); err != nil {
		// A caller's deadline shorter than dialHealthTimeout (the app
		// dials with 2 s) counts too: it was reported as ErrNotRunning,
		// and the app started a second daemon beside the stopped one.
		if connected.Load() && errors.Is(hctx.Err(), context.DeadlineExceeded) {
			where := c.base
			if o.tcp == "" {
				where = o.socket
				if where == "" {
					where, _ = SocketPath()
				}
			}
			return nil, fmt.Errorf("%w within %s on %s: it may be stopped (SIGSTOP) or hung; find it with `pgrep -a ruvllmd` and end it",
				ErrNoAnswer, time.Since(start).Round(100*time.Millisecond), where)
		}
		return nil, dialFailure(err)
	}
	return c, nil
}

// ErrSocketDenied is returned by Dial when the socket, or a directory on
// its path, does not let this user in: a socket path of another user,
// such as a $XDG_RUNTIME_DIR that `su` carried over. It is not
// ErrNotRunning: the CLI said "nothing answers" (`ruvllm stop`: nothing
// to stop) where another user's daemon may well run, and started a
// daemon of its own that failed to make the socket there.
var ErrSocketDenied = errors.New("permission denied on ruvllmd's socket")

// dialFailure says why Dial's health check failed: err itself when it is
// an answer, another user's server or a path too long; ErrSocketDenied
// when the path is not this user's to reach; ErrNotRunning otherwise.
func dialFailure(err error) error {
	var apiErr *APIError
	switch {
	case errors.As(err, &apiErr) || errors.Is(err, ErrForeignServer) || errors.Is(err, ErrSocketPathTooLong):
		return err
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%w: %v (is the path another user's? check $%s and $XDG_RUNTIME_DIR)", ErrSocketDenied, err, EnvSocket)
	}
	return fmt.Errorf("%w: %v", ErrNotRunning, err)
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func (c *Client) request(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.app != "" {
		req.Header.Set("X-Ruvllm-Client", c.app)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// decodeError reads an error body in OpenAI's or Ollama's shape.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &APIError{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	var oa OpenAIError
	if json.Unmarshal(b, &oa) == nil && oa.Error.Message != "" {
		e.Message, e.Type = oa.Error.Message, oa.Error.Type
		return e
	}
	var ol struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &ol) == nil && ol.Error != "" {
		e.Message = ol.Error
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// Do sends in as JSON (nil for none) and decodes the answer into out (nil
// to discard). A non-2xx answer is an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.request(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Stream sends in and calls onLine with each payload of the answer: the
// data of each server-sent event (until "[DONE]"), or each NDJSON line.
// Cancelling ctx closes the connection, which cancels the daemon's work.
func (c *Client) Stream(ctx context.Context, method, path string, in any, onLine func([]byte) error) error {
	resp, err := c.request(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if sse {
			data, ok := bytes.CutPrefix(line, []byte("data:"))
			if !ok {
				continue // comments, event names, blank separators
			}
			data = bytes.TrimSpace(data)
			if string(data) == "[DONE]" {
				return nil
			}
			line = data
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := onLine(line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s %s: read stream: %w", method, path, err)
	}
	return nil
}

// Health returns the daemon's status.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.Do(ctx, http.MethodGet, "/v1/health", nil, &h)
	return h, err
}

// Events calls fn for every daemon event until ctx ends or fn fails.
func (c *Client) Events(ctx context.Context, fn func(Event) error) error {
	return c.Stream(ctx, http.MethodGet, "/v1/events", nil, func(b []byte) error {
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("decode event: %w", err)
		}
		return fn(e)
	})
}

// Chat runs a non-streaming chat completion.
func (c *Client) Chat(ctx context.Context, req ChatCompletionRequest) (ChatCompletionResponse, error) {
	req.Stream = false
	var out ChatCompletionResponse
	err := c.Do(ctx, http.MethodPost, "/v1/chat/completions", req, &out)
	return out, err
}

// ChatStream runs a streaming chat completion, calling fn per chunk. The
// last chunk carries usage.
func (c *Client) ChatStream(ctx context.Context, req ChatCompletionRequest, fn func(ChatCompletionChunk) error) error {
	req.Stream = true
	req.StreamOptions = &StreamOptions{IncludeUsage: true}
	return c.Stream(ctx, http.MethodPost, "/v1/chat/completions", req, func(b []byte) error {
		if err := streamError(b); err != nil { // the daemon failed mid-stream
			return err
		}
		var ch ChatCompletionChunk
		if err := json.Unmarshal(b, &ch); err != nil {
			return fmt.Errorf("decode chunk: %w", err)
		}
		return fn(ch)
	})
}

// Models lists the models the daemon can serve.
func (c *Client) Models(ctx context.Context) (ModelList, error) {
	var out ModelList
	err := c.Do(ctx, http.MethodGet, "/v1/models", nil, &out)
	return out, err
}

// Ps lists the loaded models.
func (c *Client) Ps(ctx context.Context) (OllamaTags, error) {
	var out OllamaTags
	err := c.Do(ctx, http.MethodGet, "/api/ps", nil, &out)
	return out, err
}

// Cache returns prefix-cache statistics.
func (c *Client) Cache(ctx context.Context) (CacheStats, error) {
	var out CacheStats
	err := c.Do(ctx, http.MethodGet, "/v1/cache", nil, &out)
	return out, err
}

// Requests returns the most recent entries of the request log.
func (c *Client) Requests(ctx context.Context, limit int) ([]RequestRecord, error) {
	var out []RequestRecord
	err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/requests?limit=%d", limit), nil, &out)
	return out, err
}
