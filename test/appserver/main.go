// Command appserver serves the desktop app's frontend to a browser, with
// the methods of package app over HTTP instead of Wails bindings, against
// a real ruvllmd running the synthetic test model. The frontend's browser
// tests (frontend/test/browser) drive it with chromium.
//
//	POST /api/call/{Method}  body: JSON array of arguments → {"result": …} or {"error": "…"}
//	GET  /api/events         server-sent events {"name": …, "data": …}
//	POST /api/drop           body: {"paths": [...]}: what a Wails file drop does
//	POST /api/fixture/{kind} kind adapter or junk: writes a file to drop, answers {"path": …}
//
// It prints "appserver daemon socket PATH" and then "appserver listening on
// http://ADDR" once ready; the desktop end-to-end test points the real
// Wails binary at that socket.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/ruvllm/ruvllm/app"
	"github.com/ruvllm/ruvllm/internal/testdaemon"
)

// hidden are App methods the frontend never calls.
var hidden = map[string]bool{"Start": true, "Close": true, "WaitReady": true, "HandleFileDrop": true}

type event struct {
	Name string `json:"name"`
	Data any    `json:"data"`
}

// hub fans events out to the connected event streams.
type hub struct {
	mu   sync.Mutex
	subs map[chan event]bool
}

func (h *hub) emit(name string, data any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- event{name, data}:
		default: // a stuck browser loses events rather than blocking the app
		}
	}
}

func (h *hub) subscribe() (chan event, func()) {
	c := make(chan event, 1024)
	h.mu.Lock()
	h.subs[c] = true
	h.mu.Unlock()
	return c, func() {
		h.mu.Lock()
		delete(h.subs, c)
		h.mu.Unlock()
	}
}

func main() {
	addr := pflag.String("addr", "127.0.0.1:0", "listen address")
	dist := pflag.String("dist", "frontend/dist", "built frontend to serve")
	dir := pflag.String("dir", "", "daemon directory (default: a temporary one, removed on exit)")
	pflag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*addr, *dist, *dir, log); err != nil {
		fmt.Fprintln(os.Stderr, "appserver:", err)
		os.Exit(1)
	}
}

func run(addr, dist, dir string, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if dir == "" {
		d, err := os.MkdirTemp("", "appserver")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	d, err := testdaemon.Start(ctx, testdaemon.Options{Dir: dir})
	if err != nil {
		return err
	}
	defer d.Stop()
	h := &hub{subs: map[chan event]bool{}}
	a := app.New(app.Config{Socket: d.Socket, Model: testdaemon.ModelName, Logger: log}, h.emit)
	a.Start(ctx)
	defer a.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/call/{method}", func(w http.ResponseWriter, r *http.Request) {
		var args []json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "arguments: " + err.Error()})
			return
		}
		res, err := call(a, r.PathValue("method"), args)
		if err != nil {
			writeJSON(w, http.StatusOK, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"result": res})
	})
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		c, unsub := h.subscribe()
		defer unsub()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		fl := w.(http.Flusher)
		// The current status first, so a late page does not miss "ready".
		writeEvent(w, event{app.EventStatus, a.Status()})
		fl.Flush()
		for {
			select {
			case e := <-c:
				writeEvent(w, e)
				fl.Flush()
				// Wails hands each event to the page as its own call. Over
				// HTTP, events written back to back can reach chromium in
				// one read and be dispatched in one task, so a fast model's
				// whole reply would render at once: a millisecond between
				// tokens keeps them separate, as in the real app.
				if e.Name == app.EventChatToken {
					time.Sleep(time.Millisecond)
				}
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /api/drop", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Paths []string `json:"paths"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		a.HandleFileDrop(body.Paths)
		writeJSON(w, http.StatusOK, map[string]any{"result": len(body.Paths)})
	})
	mux.HandleFunc("POST /api/fixture/{kind}", func(w http.ResponseWriter, r *http.Request) {
		files := filepath.Join(dir, "fixtures")
		os.MkdirAll(files, 0o700)
		var path string
		var err error
		switch r.PathValue("kind") {
		case "adapter":
			path = filepath.Join(files, fmt.Sprintf("style-%d.gguf", time.Now().UnixNano()%100000))
			err = testdaemon.WriteAdapter(d.ModelPath, path, uint64(time.Now().UnixNano()))
		case "junk":
			path = filepath.Join(files, "notes.gguf")
			err = os.WriteFile(path, []byte("this is not an adapter"), 0o600)
		default:
			err = errors.New("unknown fixture")
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"path": path})
	})
	mux.Handle("/", http.FileServer(http.Dir(dist)))

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Printf("appserver daemon socket %s\n", d.Socket)
	fmt.Printf("appserver listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// call invokes the exported App method name with JSON arguments, the way
// Wails' bindings do: results are (value, error), (error), (value) or none.
func call(a *app.App, name string, args []json.RawMessage) (any, error) {
	if hidden[name] {
		return nil, fmt.Errorf("method %s is not callable", name)
	}
	m := reflect.ValueOf(a).MethodByName(name)
	if !m.IsValid() {
		return nil, fmt.Errorf("no method %s", name)
	}
	t := m.Type()
	if len(args) != t.NumIn() {
		return nil, fmt.Errorf("%s takes %d arguments, got %d", name, t.NumIn(), len(args))
	}
	in := make([]reflect.Value, len(args))
	for i, raw := range args {
		v := reflect.New(t.In(i))
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			return nil, fmt.Errorf("%s argument %d: %w", name, i, err)
		}
		in[i] = v.Elem()
	}
	out := m.Call(in)
	errType := reflect.TypeFor[error]()
	var res any
	for _, o := range out {
		if o.Type() == errType {
			if !o.IsNil() {
				return nil, o.Interface().(error)
			}
			continue
		}
		res = o.Interface()
	}
	return res, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeEvent(w http.ResponseWriter, e event) {
	b, _ := json.Marshal(e)
	fmt.Fprintf(w, "data: %s\n\n", b)
}
