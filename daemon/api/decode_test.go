package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
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
		{"\ufeff{\"model\":\"m\",\"messages\":[]}", 0, ""}, // a UTF-8 byte order mark first
		{"\ufeff", 400, "empty request body"},
		{`{"model":5}`, 400, `field "model" must be a string, not number`},
		{`{"model":"m","stream":"yes"}`, 400, `field "stream" must be a boolean`},
		{`{"model":"m","max_tokens":1.5}`, 400, `field "max_tokens" must be an integer from -9223372036854775808 to 9223372036854775807, not number 1.5`},
		{`{"model":"m","stream_options":[]}`, 400, `field "stream_options" must be an object`},
		{`{"model":"m","stop":7}`, 400, `field "stop" must be a string or an array`},
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
		`{"prompt":["a",[1,"b"],{"prompt_string":[2,"c"]}],"logit_bias":[[1,false]],"samplers":["top_k"]}`,
		`{"prompt":[1,2,3],"input_prefix":"x","input_suffix":"y","input_extra":[{"text":"z"}]}`,
		`{"content":"x","with_pieces":true}`, `{"tokens":[1,-2]}`, `{"prompt":"p","context":[1,2]}`,
		`{"prediction":{"type":"content","content":[{"type":"text","text":"x"}]}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, v := range []any{&ipc.ChatCompletionRequest{}, &ipc.CompletionRequest{}, &ipc.EmbeddingRequest{},
			&ipc.OllamaChatRequest{}, &ipc.OllamaGenerateRequest{}, &ipc.PullRequest{},
			&ipc.LlamaCompletionRequest{}, &ipc.LlamaInfillRequest{}, &ipc.LlamaTokenizeRequest{}, &ipc.LlamaDetokenizeRequest{}} {
			err := decodeString(body, v)
			var re *requestError
			if err != nil && (!errors.As(err, &re) || re.status < 400 || re.status > 499) {
				t.Fatalf("%q into %T: %v", body, v, err)
			}
		}
	})
}

// TestJSONKind names what a field takes, with an integer's range when the
// client sent a number it cannot hold.
func TestJSONKind(t *testing.T) {
	for _, tc := range []struct {
		t     reflect.Type
		value string
		want  string
	}{
		{reflect.TypeFor[int64](), "number 1.5", "an integer from -9223372036854775808 to 9223372036854775807"},
		{reflect.TypeFor[int32](), "number 1e10", "an integer from -2147483648 to 2147483647"},
		{reflect.TypeFor[int](), "string", "an integer"},
		{reflect.TypeFor[uint64](), "number -1", "an integer from 0 to 18446744073709551615"},
		{reflect.TypeFor[uint8](), "number 300", "an integer from 0 to 255"},
		{reflect.TypeFor[uint](), "bool", "a non-negative integer"},
		{reflect.TypeFor[float32](), "string", "a number"},
		{reflect.TypeFor[string](), "number 5", "a string"},
		{reflect.TypeFor[bool](), "string", "a boolean"},
		{reflect.TypeFor[[]int](), "object", "an array"},
		{reflect.TypeFor[map[string]int](), "array", "an object"},
	} {
		if got := jsonKind(tc.t, tc.value); got != tc.want {
			t.Errorf("jsonKind(%v, %q) = %q, want %q", tc.t, tc.value, got, tc.want)
		}
	}
}

// TestDecodeContentNamesTheField: a message content, Anthropic system or
// content, or Responses input of the wrong shape is a 400 naming that
// field and what it takes, not "body" or the decoder's embedded Go type.
func TestDecodeContentNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		body  string
		into  func() any
		param string
		want  string
	}{
		{`{"messages":[{"role":"user","content":["a"]}]}`, func() any { return &ipc.ChatCompletionRequest{} },
			"messages.content[0]", `must be a content part {"type": "text", "text": ...}, not string`},
		{`{"messages":[{"role":"user","content":[{"type":"text"}]}]}`, func() any { return &ipc.ChatCompletionRequest{} },
			"messages.content[0]", `not a part of type "text" without text`},
		{`{"messages":[{"role":"user","content":[{"text":5}]}]}`, func() any { return &ipc.ChatCompletionRequest{} },
			"messages.content[0].text", "must be a string, not number"},
		{`{"messages":[{"role":"user","content":[{}]}]}`, func() any { return &ipc.ChatCompletionRequest{} },
			"messages.content[0]", "not a part without a type"},
		{`{"messages":[{"role":"user","content":5}]}`, func() any { return &ipc.ChatCompletionRequest{} },
			"messages.content", "must be a string, null or an array of content parts, not number"},
		{`{"messages":[{"role":5,"content":"x"}]}`, func() any { return &ipc.ChatCompletionRequest{} },
			"messages.role", "must be a string, not number"},
		{`{"messages":[{"role":"user","content":"x","images":"a"}]}`, func() any { return &ipc.OllamaChatRequest{} },
			"messages.images", "must be an array, not string"},
		{`{"messages":[{"role":"user","content":[5]}]}`, func() any { return &ipc.OllamaChatRequest{} },
			"messages.content[0]", "not number"},
		{`{"max_tokens":1,"system":5,"messages":[]}`, func() any { return &ipc.AnthropicRequest{} },
			"system", "must be a string or an array of content blocks, not number"},
		{`{"max_tokens":1,"system":["x"],"messages":[]}`, func() any { return &ipc.AnthropicRequest{} },
			"system", "not array of string"},
		{`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`, func() any { return &ipc.AnthropicRequest{} },
			"messages.content.text", "must be a string, not number"},
		{`{"input":5}`, func() any { return &ipc.ResponseRequest{} },
			"input", "must be a string or an array of input items, not number"},
		{`{"input":["a"]}`, func() any { return &ipc.ResponseRequest{} },
			"input", "not array of string"},
	} {
		err := decodeString(tc.body, tc.into())
		var re *requestError
		if !errors.As(err, &re) || re.status != 400 || re.param != tc.param ||
			!strings.Contains(re.msg, tc.want) || !strings.Contains(re.msg, `"`+tc.param+`"`) {
			t.Errorf("%s: got %v (param %q), want 400 naming %q, containing %q", tc.body, err, paramOf(re), tc.param, tc.want)
		}
	}
}

func paramOf(re *requestError) string {
	if re == nil {
		return ""
	}
	return re.param
}
