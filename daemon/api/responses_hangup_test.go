package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hangUpWriter is a ResponseWriter whose client hangs up (its request's
// context is cancelled) once a write contains mark.
type hangUpWriter struct {
	*httptest.ResponseRecorder
	mark   string
	cancel context.CancelFunc
}

func (w *hangUpWriter) Write(b []byte) (int, error) {
	if strings.Contains(string(b), w.mark) {
		w.cancel()
	}
	return w.ResponseRecorder.Write(b)
}

// TestResponseStoredWhenClientLeavesAtTheEnd: a response whose reply was
// generated whole is stored even when its client hung up before the last
// events (it has the id from response.created, and continues from it with
// previous_response_id). It was stored with the request's context, so a
// hang-up in that moment lost it ("response not stored ... context
// canceled" in the log) and the follow-up was a 404.
func TestResponseStoredWhenClientLeavesAtTheEnd(t *testing.T) {
	ta := startAPI(t)
	for _, tc := range []struct {
		name, body, mark string
	}{
		// max_output_tokens 1: the first delta carries the last token.
		{"stream", `{"model":"fake","input":"hi","max_output_tokens":1,"stream":true}`, "response.output_text.delta"},
		{"stream with instructions", `{"model":"fake","instructions":"be brief","input":"hi","max_output_tokens":1,"stream":true}`, "response.output_text.delta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, "POST", "/v1/responses", strings.NewReader(tc.body))
			w := &hangUpWriter{ResponseRecorder: httptest.NewRecorder(), mark: tc.mark, cancel: cancel}
			ta.api.createResponse(w, req)
			if ctx.Err() == nil {
				t.Fatalf("the client never hung up: %s", w.Body)
			}
			_, data := sseNamed(t, w.Body.Bytes())
			if len(data) == 0 {
				t.Fatalf("no events: %s", w.Body)
			}
			id, _ := data[0]["response"].(map[string]any)["id"].(string)
			if id == "" {
				t.Fatalf("no response id in %v", data[0])
			}
			if code, b := ta.get(t, "/v1/responses/"+id); code != http.StatusOK {
				t.Fatalf("GET the finished response after the hang-up: %d %s", code, b)
			}
			resp, b := ta.post(t, "/v1/responses", `{"model":"fake","input":"more","previous_response_id":"`+id+`"}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("continuing it: %d %s", resp.StatusCode, b)
			}
		})
	}
}
