package api

import (
	"context"
	"testing"
)

// TestCopyFineTunedModel: POST /api/copy takes a fine-tuning job's model
// (ft:<model>:<suffix>:<id>) as its source, as /api/create's from does;
// it answered 400 "is not a model name", though the name serves every
// endpoint. The copy runs the base with the job's adapter.
func TestCopyFineTunedModel(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	src := randomAdapter(t, base, dir, "job", 1, 0)
	const name = "ft:tiny-real::abc123"
	if _, err := pool.InstallFineTuned(context.Background(), src, name, base, "tiny-real", nil); err != nil {
		t.Fatal(err)
	}
	if resp, b := ta.post(t, "/api/copy", `{"source":"`+name+`","destination":"mine"}`); resp.StatusCode != 200 {
		t.Fatalf("copy: %d %s", resp.StatusCode, b)
	}
	man, ok := ta.api.manifest("mine")
	if !ok || len(man.Adapters) != 1 || man.Adapters[0].Name != name || man.From != "tiny-real" {
		t.Fatalf("the copy is %+v (found %v), want the base with the job's adapter", man, ok)
	}
	// A bad destination is still refused, and an unknown source is a 404.
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"source":"` + name + `","destination":"ft:x::y"}`, 400},
		{`{"source":"ft:tiny-real::nope","destination":"other"}`, 404},
		{`{"source":"","destination":"other"}`, 400},
	} {
		if resp, b := ta.post(t, "/api/copy", c.body); resp.StatusCode != c.code {
			t.Errorf("%s: %d %s, want %d", c.body, resp.StatusCode, b, c.code)
		}
	}
}
