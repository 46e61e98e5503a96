package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/learning"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestLearningUnknownModel: the learning endpoints answer a model the
// daemon has none of (a typo) with a 404 naming the field, as the README
// says. GET /v1/learning answered 200 with no models (which `ruvllm learn
// status -m typo` printed as "No model is loaded") and the actions and the
// export a 409 "the model is not loaded".
func TestLearningUnknownModel(t *testing.T) {
	d := startLearning(t, t.TempDir(), learning.Options{Config: learningTestConfig()})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/learning?model=nope", ""},
		{"GET", "/v1/learning/export?model=nope", ""},
		{"POST", "/v1/learning/reset", `{"model":"nope"}`},
		{"POST", "/v1/learning/pause?model=nope", ""},
	} {
		status, _, b := d.call(t, c.method, c.path, c.body, nil)
		var e ipc.OpenAIError
		json.Unmarshal(b, &e)
		if status != 404 || e.Error.Param == nil || *e.Error.Param != "model" {
			t.Errorf("%s %s %s: %d %s, want 404 naming model", c.method, c.path, c.body, status, b)
		}
	}
	// A name that reaches the daemon's model is not refused.
	for _, path := range []string{"/v1/learning?model=tiny-qwen2", "/v1/learning?model=tiny-qwen2.gguf"} {
		if status, _, b := d.call(t, "GET", path, "", nil); status != 200 {
			t.Errorf("GET %s: %d %s", path, status, b)
		}
	}
}

// TestAppScopeNeedsPerApp: without --learning-per-app an app's scope is a
// 404 naming the flag, to read or to act on; pausing one created a scope
// no request uses, and reading one answered an empty 200.
func TestAppScopeNeedsPerApp(t *testing.T) {
	d := startLearning(t, t.TempDir(), learning.Options{Disabled: true})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/learning?scope=app:never", ""},
		{"POST", "/v1/learning/pause", `{"scope":"app:zzz"}`},
	} {
		status, _, b := d.call(t, c.method, c.path, c.body, nil)
		if status != 404 || !strings.Contains(string(b), "--learning-per-app") {
			t.Errorf("%s %s: %d %s", c.method, c.path, status, b)
		}
	}
	if status, _, b := d.call(t, "GET", "/v1/learning?scope=user", "", nil); status != 200 {
		t.Fatalf("the user scope: %d %s", status, b)
	}
}
