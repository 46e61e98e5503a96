package api

import (
	"context"
	"strings"
	"testing"
)

// TestModelfileAdapterRoundTrip: /api/show writes a created model's
// adapters as "ADAPTER <installed name>"; that Modelfile creates a model
// again (the ADAPTER refers to the installed adapter), where it was a 400
// "lstat <name>: no such file or directory".
func TestModelfileAdapterRoundTrip(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	path := randomAdapter(t, base, dir, "style", 1, 0)
	if _, err := pool.Install(context.Background(), path, "", false); err != nil {
		t.Fatal(err)
	}
	ta.postOK(t, "/api/create", `{"model":"styled","stream":false,"modelfile":"FROM `+base+`\nADAPTER `+path+`"}`)
	show := ta.postOK(t, "/api/show", `{"model":"styled"}`)
	mf := show["modelfile"].(string)
	if !strings.Contains(mf, "ADAPTER styled-adapter-1") {
		t.Fatalf("modelfile %q", mf)
	}
	ta.postOK(t, "/api/create", `{"model":"again","stream":false,"modelfile":`+quote(mf)+`}`)
	again := ta.postOK(t, "/api/show", `{"model":"again"}`)
	if !strings.Contains(again["modelfile"].(string), "ADAPTER styled-adapter-1") {
		t.Fatalf("recreated modelfile %q", again["modelfile"])
	}
	// An installed adapter by its own name too; a name nothing has is a 400.
	ta.postOK(t, "/api/create", `{"model":"named","stream":false,"modelfile":"FROM `+base+`\nADAPTER style"}`)
	if resp, b := ta.post(t, "/api/create", `{"model":"bad","stream":false,"modelfile":"FROM `+base+`\nADAPTER nothing-here"}`); resp.StatusCode != 400 {
		t.Fatalf("unknown adapter name: %d %s", resp.StatusCode, b)
	}
}
