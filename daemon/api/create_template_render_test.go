package api

import (
	"strings"
	"testing"
)

// TestCreateRefusesTemplateThatCannotRender: /api/create renders a
// TEMPLATE once, so one that fails on any conversation (a field the
// template data has not) is a 400 naming template; it was created, and
// every request to the model then failed ("model its template failed").
func TestCreateRefusesTemplateThatCannotRender(t *testing.T) {
	ta := startAPI(t)
	for _, c := range []struct{ body, want string }{
		{`{"model":"t1","from":"fake","template":"{{ .Nope }}{{ .Prompt }}","stream":false}`, "Nope"},
		{`{"model":"t2","from":"fake","modelfile":"FROM fake\nTEMPLATE {{ range .Messages }}{{ .Nope }}{{ end }}","stream":false}`, "Nope"},
	} {
		resp, b := ta.post(t, "/api/create", c.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "template") || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want 400 about the template's %s", c.body, resp.StatusCode, b, c.want)
		}
	}
	// Templates that render are still taken, and used.
	ta.postOK(t, "/api/create", `{"model":"t3","from":"fake","template":"{{ if .System }}[{{ .System }}]{{ end }}{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}","stream":false}`)
	ta.postOK(t, "/api/chat", `{"model":"t3","stream":false,"messages":[{"role":"user","content":"Hi"}]}`)
	ta.postOK(t, "/api/create", `{"model":"t4","from":"fake","modelfile":"FROM fake\nTEMPLATE {{ range .Tools }}{{ . }}{{ end }}{{ .Prompt }}","stream":false}`)
}

// TestCreateRefusesMessageImages: a created model's MESSAGE with images is
// refused at create; it was stored, and every request to the model then
// failed on images it never sent.
func TestCreateRefusesMessageImages(t *testing.T) {
	ta := startAPI(t)
	resp, b := ta.post(t, "/api/create", `{"model":"pics","from":"fake","messages":[{"role":"user","content":"see","images":["aGk="]}],"stream":false}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "messages[0].images") {
		t.Fatalf("create with an image message: %d %s", resp.StatusCode, b)
	}
}
