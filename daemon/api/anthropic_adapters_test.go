package api

import (
	"context"
	"strings"
	"testing"
)

// TestAnthropicAdapters: /v1/messages takes ruvllm's adapters as the
// OpenAI and Ollama endpoints do; they were ignored in silence, so a
// request naming an adapter ran without it.
func TestAnthropicAdapters(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	if _, err := pool.Install(context.Background(), randomAdapter(t, base, dir, "style", 1, 0), "", false); err != nil {
		t.Fatal(err)
	}
	msg := func(extra string) (int, string) {
		resp, b := ta.post(t, "/v1/messages", `{"model":`+quote(base)+`,"max_tokens":4,"temperature":0,"messages":[{"role":"user","content":"Hi"}]`+extra+`}`)
		return resp.StatusCode, string(b)
	}
	if code, b := msg(`,"adapters":[{"name":"style"}]`); code != 200 {
		t.Fatalf("a known adapter: %d %s", code, b)
	}
	for _, c := range []struct{ extra, want string }{
		{`,"adapters":[{"name":"nope"}]`, "nope"},
		{`,"adapters":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"},{"name":"e"}]`, "at most"},
	} {
		if code, b := msg(c.extra); code != 400 || !strings.Contains(b, c.want) || !strings.Contains(b, "adapters") {
			t.Errorf("%s: %d %s, want a 400 naming adapters", c.extra, code, b)
		}
	}
}
