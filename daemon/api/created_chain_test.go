package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/daemon/adapters"
)

// deleteModel sends DELETE /api/delete for name and returns the status and body.
func (ta *testAPI) deleteModel(t *testing.T, name string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, "http://ruvllm/api/delete", strings.NewReader(`{"model":"`+name+`"}`))
	resp, err := ta.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCreatedFromCreatedIsWhole: a model made FROM a created (or
// fine-tuned) model copies its settings and adapters and is made from its
// base, as Ollama copies layers: deleting or re-creating the first leaves
// it as made. It was stored by name, so deleting the first made every
// request to the second fail. What created models still use cannot be
// deleted: their adapters, their base file (409, naming them).
func TestCreatedFromCreatedIsWhole(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	if _, err := pool.Install(context.Background(), randomAdapter(t, base, dir, "style", 1, 0), "", false); err != nil {
		t.Fatal(err)
	}
	ta.postOK(t, "/api/create", `{"model":"styled","stream":false,"modelfile":"FROM `+base+`\nADAPTER style\nSYSTEM be brief\nPARAMETER temperature 0.3"}`)
	ta.postOK(t, "/api/create", `{"model":"child","stream":false,"modelfile":"FROM styled\nSYSTEM child system\nPARAMETER top_k 7"}`)
	want := []string{"FROM " + base, "ADAPTER style", "temperature 0.3", "top_k 7", `SYSTEM """child system"""`}
	check := func(when string) {
		t.Helper()
		mf := ta.postOK(t, "/api/show", `{"model":"child"}`)["modelfile"].(string)
		for _, w := range want {
			if !strings.Contains(mf, w) {
				t.Fatalf("%s: the child's Modelfile lacks %q:\n%s", when, w, mf)
			}
		}
		if strings.Contains(mf, "be brief") {
			t.Fatalf("%s: the child's own system prompt did not win:\n%s", when, mf)
		}
		ta.postOK(t, "/api/generate", `{"model":"child","prompt":"hi","stream":false,"options":{"num_predict":2}}`)
	}
	check("made")
	// Re-creating the first from itself (an edit, as Ollama allows) and
	// then deleting it leave the child as it was made.
	ta.postOK(t, "/api/create", `{"model":"styled","stream":false,"modelfile":"FROM styled\nSYSTEM changed"}`)
	if sys := ta.postOK(t, "/api/show", `{"model":"styled"}`)["system"]; sys != "changed" {
		t.Fatalf("re-created from itself: system %v", sys)
	}
	if code, b := ta.deleteModel(t, "styled"); code != 200 {
		t.Fatalf("delete styled: %d %s", code, b)
	}
	check("after its first was deleted")

	// The adapter the child carries stays while the child does.
	if err := pool.Remove("style"); !errors.Is(err, adapters.ErrInUse) || !strings.Contains(err.Error(), `"child"`) {
		t.Fatalf("removing an adapter a created model uses: %v", err)
	}
	if _, ok := pool.Get("style"); !ok {
		t.Fatal("the refused removal removed the adapter")
	}
	// So does its base file.
	if code, b := ta.deleteModel(t, base); code != 409 || !strings.Contains(b, `child`) {
		t.Fatalf("deleting the base of a created model: %d %s", code, b)
	}

	// A fine-tuned model: a model made from it keeps its adapter, which
	// deleting the fine-tuned model would remove.
	const ft = "ft:tiny-real::abc123"
	if _, err := pool.InstallFineTuned(context.Background(), randomAdapter(t, base, dir, "job", 1, 0), ft, base, "tiny-real", nil); err != nil {
		t.Fatal(err)
	}
	ta.postOK(t, "/api/create", `{"model":"tuned-child","stream":false,"from":"`+ft+`"}`)
	if code, b := ta.deleteModel(t, ft); code != 409 || !strings.Contains(b, "tuned-child") {
		t.Fatalf("deleting a fine-tuned model a created one carries: %d %s", code, b)
	}
	ta.postOK(t, "/api/generate", `{"model":"tuned-child","prompt":"hi","stream":false,"options":{"num_predict":2}}`)

	// Once the models using them are gone, both go.
	for _, name := range []string{"child", "tuned-child", ft} {
		if code, b := ta.deleteModel(t, name); code != 200 {
			t.Fatalf("delete %s: %d %s", name, code, b)
		}
	}
	if err := pool.Remove("style"); err != nil {
		t.Fatalf("removing the adapter once unused: %v", err)
	}
}

// TestDeletePrunesOwnAdapters: deleting a created model removes the
// adapters /api/create installed for it (its ADAPTER files) unless another
// model is made with them, as Ollama prunes layers; adapters installed on
// their own stay. They were left behind for ever.
func TestDeletePrunesOwnAdapters(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	if _, err := pool.Install(context.Background(), randomAdapter(t, base, dir, "shared", 1, 0), "", false); err != nil {
		t.Fatal(err)
	}
	own := randomAdapter(t, base, dir, "own", 2, 0)
	ta.postOK(t, "/api/create", `{"model":"m2","stream":false,"modelfile":"FROM `+base+`\nADAPTER `+own+`\nADAPTER shared"}`)
	ta.postOK(t, "/api/create", `{"model":"m3","stream":false,"modelfile":"FROM `+base+`\nADAPTER `+own+`"}`)
	ta.postOK(t, "/api/create", `{"model":"copy","stream":false,"from":"m3"}`) // made with m3-adapter-1
	for _, c := range []struct {
		model string
		gone  []string
		kept  []string
	}{
		{"m2", []string{"m2-adapter-1"}, []string{"shared", "m3-adapter-1"}},
		{"m3", nil, []string{"m3-adapter-1"}}, // the copy is made with it
		{"copy", []string{"m3-adapter-1"}, []string{"shared"}},
	} {
		if code, b := ta.deleteModel(t, c.model); code != 200 {
			t.Fatalf("delete %s: %d %s", c.model, code, b)
		}
		for _, n := range c.gone {
			if _, ok := pool.Get(n); ok {
				t.Errorf("after deleting %s, %s is still installed", c.model, n)
			}
		}
		for _, n := range c.kept {
			if _, ok := pool.Get(n); !ok {
				t.Errorf("after deleting %s, %s is gone", c.model, n)
			}
		}
	}
}

// TestPruneBlobs: uploaded blobs older than the age that no model is made
// from are removed (they stayed for ever); used or younger ones stay.
func TestPruneBlobs(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := filepath.Join(ta.srv.Config().ModelsDir, "blobs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	write := func(name string, mod time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("blob"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mod, mod)
		return p
	}
	unused := write("sha256-"+strings.Repeat("a", 64), old)
	young := write("sha256-"+strings.Repeat("b", 64), time.Now())
	used, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	usedPath := filepath.Join(dir, "sha256-"+strings.Repeat("c", 64))
	if err := os.WriteFile(usedPath, used, 0o600); err != nil {
		t.Fatal(err)
	}
	ta.postOK(t, "/api/create", `{"model":"fromblob","stream":false,"from":"`+usedPath+`"}`)
	os.Chtimes(usedPath, old, old)
	if freed := ta.api.PruneBlobs(24 * time.Hour); freed != 4 {
		t.Fatalf("freed %d bytes, want the unused blob's 4", freed)
	}
	for p, want := range map[string]bool{unused: false, young: true, usedPath: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s present: %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
