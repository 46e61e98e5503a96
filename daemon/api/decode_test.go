package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

func decodeString(body string, v any) error {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 4096)
	return decode(r, v)
}

func TestDecodeMessages(t *testing.T) {
	for _, tc := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"model":"m","messages":[]}`, 0, ""},
		{`{"model":"m","messages":[],"extra":{"deep":[1,2]}}`, 0, ""},
		{``, 400, "empty request body"},
		{`{"model":`, 400, "ends in the middle"},
		{`{"model" "m"}`, 400, "invalid JSON at byte"},
		{`{"model":"m"} {"again":1}`, 400, "data after the JSON object"},
		{`{"model":5}`, 400, `field "model" must be a string, not number`},
		{`{"model":"m","stream":"yes"}`, 400, `field "stream" must be a boolean`},
		{`{"model":"m","max_tokens":1.5}`, 400, `field "max_tokens" must be a number`},
		{`{"model":"m","stream_options":[]}`, 400, `field "stream_options" must be an object`},
		{`{"model":"m","stop":7}`, 400, "stop must be a string or an array"},
		{`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "exceeds 4096 bytes"},
	} {
		var v ipc.ChatCompletionRequest
		err := decodeString(tc.body, &v)
		if tc.status == 0 {
			if err != nil {
				t.Errorf("%q: %v", tc.body, err)
			}
			continue
		}
		var re *requestError
		if !errors.As(err, &re) || re.status != tc.status || !strings.Contains(re.msg, tc.want) {
			t.Errorf("%.60q: got %v, want %d containing %q", tc.body, err, tc.status, tc.want)
		}
	}
}

// FuzzDecodeRequests feeds arbitrary bodies to every request type: decode
// must return nil or a client error (4xx), never panic.
func FuzzDecodeRequests(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stop":["a"],"logit_bias":{"1":2}}`,
		`{"model":"m","prompt":"x","options":{"num_predict":3,"stop":["\n"]},"keep_alive":"5m"}`,
		`{"model":"m","input":["a","b"]}`, `{"keep_alive":-1}`, `[]`, `null`, `{"stop":null}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, v := range []any{&ipc.ChatCompletionRequest{}, &ipc.CompletionRequest{}, &ipc.EmbeddingRequest{},
			&ipc.OllamaChatRequest{}, &ipc.OllamaGenerateRequest{}, &ipc.PullRequest{}} {
			err := decodeString(body, v)
			var re *requestError
			if err != nil && (!errors.As(err, &re) || re.status < 400 || re.status > 499) {
				t.Fatalf("%q into %T: %v", body, v, err)
			}
		}
	})
}
