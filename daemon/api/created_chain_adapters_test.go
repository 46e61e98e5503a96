package api

import (
	"context"
	"strings"
	"testing"
)

// TestCreatedModelChainAdapterBounds: a created model is refused when the
// adapters of its whole chain (its own and those of the model it is made
// from) break a request's bounds, more than four or one of them twice.
// Such a model was created, then every request to it was a 400 about
// adapters the request had not named ("adapters may name at most 4
// adapters, not 5", "adapters[1].name names adapter ... a second time").
func TestCreatedModelChainAdapterBounds(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		if _, err := pool.Install(context.Background(), randomAdapter(t, base, dir, name, uint64(i+1), 0), name, false); err != nil {
			t.Fatal(err)
		}
	}
	create := func(name, modelfile string) (int, string) {
		t.Helper()
		resp, b := ta.post(t, "/api/create", `{"model":"`+name+`","stream":false,"modelfile":`+quote(modelfile)+`}`)
		return resp.StatusCode, string(b)
	}
	if code, b := create("four", "FROM "+base+"\nADAPTER a\nADAPTER b\nADAPTER c\nADAPTER d"); code != 200 {
		t.Fatalf("four adapters: %d %s", code, b)
	}
	if code, b := create("three", "FROM "+base+"\nADAPTER a\nADAPTER b\nADAPTER c"); code != 200 {
		t.Fatalf("three adapters: %d %s", code, b)
	}
	for _, c := range []struct{ name, modelfile, want string }{
		{"five", "FROM four\nADAPTER e", "at most 4"},
		{"twice", "FROM three\nADAPTER a", "twice"},
		{"twice-here", "FROM " + base + "\nADAPTER e\nADAPTER e", "twice"},
	} {
		code, b := create(c.name, c.modelfile)
		if code != 400 || !strings.Contains(b, c.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.name, code, b, c.want)
		}
		if _, ok := ta.api.manifest(c.name); ok {
			t.Errorf("%s was created", c.name)
		}
	}
	// Within the bounds a chain is fine, and the request runs.
	if code, b := create("three-plus", "FROM three\nADAPTER e"); code != 200 {
		t.Fatalf("three and one more: %d %s", code, b)
	}
	resp, b := ta.post(t, "/v1/completions", `{"model":"three-plus","prompt":"hi","max_tokens":2}`)
	if resp.StatusCode != 200 {
		t.Fatalf("request to three-plus: %d %s", resp.StatusCode, b)
	}
}
