package daemon

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestContentEncodingRefused: a compressed body is refused with a 415
// naming Content-Encoding, in its protocol's error shape, before the
// handler reads it. It was handed over as it came, and every JSON route
// answered "invalid JSON at byte 1".
func TestContentEncodingRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{SocketPath: filepath.Join(dir, "ruvllm.sock"), StateDir: filepath.Join(dir, "state"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.store.Close()
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			http.Error(w, "invalid JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		WriteJSON(w, http.StatusOK, v)
	})
	s.Handle("POST /v1/echo", echo)
	s.Handle("POST /api/echo", echo)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, `{"a":1}`)
	zw.Close()
	h := s.wrap(s.mux)
	for _, tc := range []struct {
		name, path, encoding string
		body                 []byte
		want                 int
	}{
		{"plain", "/v1/echo", "", []byte(`{"a":1}`), http.StatusOK},
		{"identity", "/v1/echo", "identity", []byte(`{"a":1}`), http.StatusOK},
		{"gzip openai", "/v1/echo", "gzip", gz.Bytes(), http.StatusUnsupportedMediaType},
		{"gzip ollama", "/api/echo", "gzip", gz.Bytes(), http.StatusUnsupportedMediaType},
		{"br", "/v1/echo", "br", []byte("x"), http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader(tc.body))
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if tc.want == http.StatusOK {
				return
			}
			var msg string
			if strings.HasPrefix(tc.path, "/api/") {
				var e struct{ Error string }
				json.Unmarshal(rec.Body.Bytes(), &e)
				msg = e.Error
			} else {
				var e struct{ Error struct{ Message string } }
				json.Unmarshal(rec.Body.Bytes(), &e)
				msg = e.Error.Message
			}
			if !strings.Contains(msg, "Content-Encoding") || !strings.Contains(msg, tc.encoding) {
				t.Fatalf("error %s does not name Content-Encoding %q", rec.Body, tc.encoding)
			}
		})
	}
}
