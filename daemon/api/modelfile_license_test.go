package api

import (
	"strings"
	"testing"
)

// TestCreatedModelLicenseShown: a created model's LICENSE (or "license")
// is shown by /api/show, in "license" as Ollama answers it and in the
// Modelfile, so the Modelfile creates the model again with it; it was
// stored and never shown, and a model re-created from /api/show's
// Modelfile lost it.
func TestCreatedModelLicenseShown(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	ta.postOK(t, "/api/create", `{"model":"licensed","stream":false,"modelfile":`+quote("FROM "+base+"\nLICENSE \"\"\"MIT License\nCopyright A\"\"\"\nLICENSE Apache-2.0\n")+`}`)
	show := ta.postOK(t, "/api/show", `{"model":"licensed"}`)
	if got, want := show["license"], "MIT License\nCopyright A\nApache-2.0"; got != want {
		t.Fatalf("license %q, want %q", got, want)
	}
	mf, _ := show["modelfile"].(string)
	if !strings.Contains(mf, "LICENSE \"\"\"MIT License\nCopyright A\"\"\"\n") || !strings.Contains(mf, "LICENSE \"\"\"Apache-2.0\"\"\"\n") {
		t.Fatalf("modelfile lacks the licenses:\n%s", mf)
	}
	ta.postOK(t, "/api/create", `{"model":"again","stream":false,"modelfile":`+quote(mf)+`}`)
	if got := ta.postOK(t, "/api/show", `{"model":"again"}`)["license"]; got != show["license"] {
		t.Fatalf("re-created from the Modelfile: license %q, want %q", got, show["license"])
	}
	// The JSON form too.
	ta.postOK(t, "/api/create", `{"model":"json","from":"`+base+`","license":"BSD","stream":false}`)
	if got := ta.postOK(t, "/api/show", `{"model":"json"}`)["license"]; got != "BSD" {
		t.Fatalf("json license %q", got)
	}
}
