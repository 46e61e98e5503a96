package daemon

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestRequestsLimit checks GET /v1/requests?limit: a limit it cannot
// honour is a 400 naming the field, never an answer of another length.
func TestRequestsLimit(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{SocketPath: filepath.Join(dir, "ruvllm.sock"), StateDir: filepath.Join(dir, "state"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.store.Close()
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"", http.StatusOK},
		{"?limit=1", http.StatusOK},
		{"?limit=1000", http.StatusOK},
		{"?limit=0", http.StatusBadRequest},
		{"?limit=-1", http.StatusBadRequest},
		{"?limit=1001", http.StatusBadRequest},
		{"?limit=abc", http.StatusBadRequest},
		{"?limit=1e3", http.StatusBadRequest},
	} {
		t.Run(tc.query, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.handleRequests(rec, httptest.NewRequest(http.MethodGet, "/v1/requests"+tc.query, nil))
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if tc.want == http.StatusOK {
				return
			}
			var e ipc.OpenAIError
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Param == nil || *e.Error.Param != "limit" ||
				!strings.Contains(e.Error.Message, "from 1 to 1000") {
				t.Fatalf("error %s (%v), want one naming limit", rec.Body, err)
			}
		})
	}
}
