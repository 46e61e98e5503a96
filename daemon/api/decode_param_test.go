package api

import (
	"errors"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestDecodeNamesFieldsOfOwnTypes: a field whose type decodes itself
// (stop, adapters, prediction) is named in the 400's param like any other,
// with its path ("prediction.content[0]", "options.stop").
func TestDecodeNamesFieldsOfOwnTypes(t *testing.T) {
	for _, tc := range []struct {
		body  string
		into  func() any
		param string
		want  string
	}{
		{`{"stop":{"a":1}}`, newChatRequest, "stop", `field "stop" must be a string or an array of strings, not object`},
		{`{"stop":7}`, newCompletionRequest, "stop", `field "stop" must be a string or an array of strings, not number`},
		{`{"adapters":5}`, newChatRequest, "adapters", `field "adapters" must be an array of {"name", "scale"}, "auto" or "none", not number`},
		{`{"adapters":"most"}`, newChatRequest, "adapters", `not "most"`},
		// An entry's field is named with its index; the array was told it
		// must be an array ("..., not array").
		{`{"adapters":[{"name":"a"},{"name":"b","scale":"x"}]}`, newChatRequest, "adapters[1].scale", `field "adapters[1].scale" must be a number, not string`},
		// A number past float32's range says the range, not "a number, not number 1e39".
		{`{"temperature":1e39}`, newChatRequest, "temperature", `must be a number from -3.4e+38 to 3.4e+38, not number 1e39`},
		{`{"prediction":"x"}`, newChatRequest, "prediction", `field "prediction" must be an object {"type": "content", "content": ...}, not string`},
		{`{"prediction":{"type":5}}`, newChatRequest, "prediction.type", `field "prediction.type" must be a string, not number`},
		{`{"prediction":{"type":"content","content":5}}`, newChatRequest, "prediction.content", `field "prediction.content" must be a string or an array of text parts, not number`},
		{`{"prediction":{"type":"content","content":[1]}}`, newCompletionRequest, "prediction.content[0]", `field "prediction.content[0]" must be a text part`},
		{`{"prediction":{"type":"content","content":[{"type":"text","text":"a"},{"type":"image_url"}]}}`, newChatRequest, "prediction.content[1]", `not a part of type "image_url"`},
		{`{"prompt":"p","options":{"stop":{"x":1}}}`, newGenerateRequest, "options.stop", `field "options.stop" must be`},
	} {
		err := decodeString(tc.body, tc.into())
		var re *requestError
		if !errors.As(err, &re) || re.status != 400 || re.param != tc.param || !strings.Contains(re.msg, tc.want) {
			t.Errorf("%s: got %#v, want 400 with param %q and a message containing %q", tc.body, err, tc.param, tc.want)
		}
	}
	// What decodes still decodes.
	for _, body := range []string{`{"stop":null}`, `{"stop":"x"}`, `{"stop":["x","y"]}`, `{"adapters":"none"}`,
		`{"adapters":[{"name":"a","scale":0.5}]}`, `{"prediction":{"type":"content","content":"x"}}`,
		`{"prediction":{"type":"content","content":[{"type":"text","text":"x"},{"text":"y"}]}}`, `{"prediction":null}`} {
		var v ipc.ChatCompletionRequest
		if err := decodeString(body, &v); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func newChatRequest() any       { return &ipc.ChatCompletionRequest{} }
func newCompletionRequest() any { return &ipc.CompletionRequest{} }
func newGenerateRequest() any   { return &ipc.OllamaGenerateRequest{} }
