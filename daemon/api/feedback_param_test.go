package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestFeedbackAndConversationErrorsNameParam: the native endpoints' 400s
// carry the offending field in OpenAI's "param", as the README promises
// for bad input; feedback's rating, request_id, message_id and comment,
// and a conversation's title and messages answered "param": null.
func TestFeedbackAndConversationErrorsNameParam(t *testing.T) {
	ta := startAPI(t)
	for _, c := range []struct{ path, body, param string }{
		{"/v1/feedback", `{"request_id":"chatcmpl-x","rating":2}`, "rating"},
		{"/v1/feedback", `{"rating":1}`, "request_id"},
		{"/v1/feedback", `{"request_id":"chatcmpl-x","rating":1,"message_id":"m"}`, "message_id"},
		{"/v1/feedback", `{"request_id":"chatcmpl-x","rating":1,"comment":"` + strings.Repeat("c", 5000) + `"}`, "comment"},
		{"/v1/conversations", `{"title":"` + strings.Repeat("t", 300) + `"}`, "title"},
		{"/v1/conversations", `{"messages":[{"role":"wizard","content":"hi"}]}`, "messages[0].role"},
	} {
		resp, b := ta.post(t, c.path, c.body)
		var e ipc.OpenAIError
		json.Unmarshal(b, &e)
		if resp.StatusCode != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s %.80s: %d %.200s, want 400 naming %s", c.path, c.body, resp.StatusCode, b, c.param)
		}
	}
}
