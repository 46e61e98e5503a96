package daemon

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWriteJSON(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		v      any
		want   int
		body   string
	}{
		{"value", http.StatusOK, map[string]int{"a": 1}, http.StatusOK, `{"a":1}`},
		{"status kept", http.StatusTeapot, []int{}, http.StatusTeapot, `[]`},
		{"NaN is a 500 that says so", http.StatusOK, map[string]float64{"x": math.NaN()}, http.StatusInternalServerError, "could not encode"},
		{"-Inf too", http.StatusOK, []float32{float32(math.Inf(-1))}, http.StatusInternalServerError, "could not encode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteJSON(rec, c.status, c.v)
			body := rec.Body.String()
			if rec.Code != c.want || rec.Header().Get("Content-Type") != "application/json" || !strings.Contains(body, c.body) || !json.Valid([]byte(body)) {
				t.Fatalf("%d %q (%s), want %d with %q", rec.Code, body, rec.Header().Get("Content-Type"), c.want, c.body)
			}
		})
	}
}
