package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/ipc"
)

func registryServer(t *testing.T) *httptest.Server {
	t.Helper()
	w := gguf.NewWriter()
	w.AddKV("general.architecture", "llama")
	w.AddTensor("x", quant.F32, []uint64{64}, make([]byte, 256))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/Org/Repo-GGUF/resolve/main/New-Model-Q4_0.gguf" {
			http.NotFound(rw, r)
			return
		}
		rw.Write(buf.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPullAndDelete(t *testing.T) {
	ta := startAPI(t)
	reg := registryServer(t)
	c, err := ipc.Dial(context.Background(), ipc.WithSocket(ta.sock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var statuses []string
	err = c.Pull(context.Background(), ipc.PullRequest{Model: "Org/Repo-GGUF/New-Model-Q4_0.gguf", Registry: reg.URL}, func(p ipc.PullProgress) error {
		statuses = append(statuses, p.Status)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) < 3 || statuses[0] != "pulling new-model-q4_0" || statuses[len(statuses)-1] != "success" {
		t.Fatalf("statuses %q", statuses)
	}
	list, err := c.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Data {
		names = append(names, m.ID)
	}
	if !strings.Contains(strings.Join(names, ","), "new-model-q4_0") {
		t.Fatalf("pulled model not listed: %v", names)
	}
	var src ipc.ModelSource
	if err := ta.srv.Store().Get(models.RegistryBucket, "new-model-q4_0", &src); err != nil || src.Ref != "Org/Repo-GGUF/New-Model-Q4_0.gguf" || len(src.SHA256) != 64 {
		t.Fatalf("registry entry %+v, %v", src, err)
	}

	// Errors: unknown file (404 mid-stream as an error line), bad reference (400).
	err = c.Pull(context.Background(), ipc.PullRequest{Model: "Org/Repo-GGUF/missing.gguf", Registry: reg.URL}, func(ipc.PullProgress) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing file: %v", err)
	}
	resp, body := ta.post(t, "/api/pull", `{"model":"not-a-ref","stream":false}`)
	if resp.StatusCode != 400 {
		t.Fatalf("bad ref: %d %s", resp.StatusCode, body)
	}
	resp, body = ta.post(t, "/api/pull", `{"model":"Org/Repo-GGUF/missing.gguf","stream":false,"registry":"`+reg.URL+`"}`)
	if resp.StatusCode != 404 {
		t.Fatalf("missing, not streamed: %d %s", resp.StatusCode, body)
	}

	if err := c.Delete(context.Background(), "new-model-q4_0"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ta.srv.Config().ModelsDir, "New-Model-Q4_0.gguf")); !os.IsNotExist(err) {
		t.Fatalf("file not deleted: %v", err)
	}
	if err := ta.srv.Store().Get(models.RegistryBucket, "new-model-q4_0", &src); err == nil {
		t.Fatal("registry entry survived delete")
	}
	var apiErr *ipc.APIError
	if err := c.Delete(context.Background(), "new-model-q4_0"); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("second delete: %v", err)
	}
}

func TestDeleteRefusedWhileInUse(t *testing.T) {
	ta := startAPI(t)
	h, err := ta.mgr.Acquire(context.Background(), "fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://ruvllm/api/delete", strings.NewReader(`{"model":"fake"}`))
	resp, err := ta.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h.Release()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("status %d, want 409", resp.StatusCode)
	}
}

// TestPullBadRegistry: a registry that is not an http(s) URL is the
// request's error (400 naming registry), not a 502.
func TestPullBadRegistry(t *testing.T) {
	ta := startAPI(t)
	for _, reg := range []string{"file:///etc", "ftp://host", "not a url", "http://[::1", "http://"} {
		for _, stream := range []string{"true", "false"} {
			resp, body := ta.post(t, "/api/pull", `{"model":"Org/Repo/m.gguf","stream":`+stream+`,"registry":`+quote(reg)+`}`)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "registry") {
				t.Errorf("registry %q (stream %s): %d %s, want 400 naming registry", reg, stream, resp.StatusCode, body)
			}
		}
	}
}

// TestPullSameFileFromTwoRepos: two references whose files share a name
// download into one partial file; the second must be refused (409) while
// the first runs, not write into the same file (which let the slower one
// overwrite the verified model after it was renamed into place).
func TestPullSameFileFromTwoRepos(t *testing.T) {
	ta := startAPI(t)
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	reg := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/A/") {
			http.NotFound(rw, r)
			return
		}
		rw.Header().Set("Content-Length", "1000")
		rw.Write([]byte("GGUF"))
		rw.(http.Flusher).Flush()
		started <- struct{}{}
		<-release
	}))
	defer reg.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ta.post(t, "/api/pull", `{"model":"A/Repo/same.gguf","stream":false,"registry":"`+reg.URL+`"}`)
	}()
	<-started
	resp, body := ta.post(t, "/api/pull", `{"model":"B/Other/same.gguf","stream":false,"registry":"`+reg.URL+`"}`)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("second pull into the same file: %d %s, want 409", resp.StatusCode, body)
	}
	unblock()
	<-done
}

// TestPullNameOfCreatedModel: a pull whose file would take the name of a
// created model is refused (409), as /api/create refuses the name of a
// model file: the pulled file was listed beside the created model but
// every request for the name reached the created one.
func TestPullNameOfCreatedModel(t *testing.T) {
	ta := startAPI(t)
	reg := registryServer(t)
	if resp, b := ta.post(t, "/api/create", `{"model":"new-model-q4_0","from":"fake","system":"S","stream":false}`); resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	resp, body := ta.post(t, "/api/pull", `{"model":"Org/Repo-GGUF/New-Model-Q4_0.gguf","stream":false,"registry":"`+reg.URL+`"}`)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("pull over a created model's name: %d %s, want 409", resp.StatusCode, body)
	}
}

// TestPullSameNameFromAnotherRepo: a model already pulled from one
// repository is not reported as pulled from another whose file has the
// same name (that pull downloaded nothing and kept the first model).
func TestPullSameNameFromAnotherRepo(t *testing.T) {
	ta := startAPI(t)
	reg := registryServer(t)
	resp, body := ta.post(t, "/api/pull", `{"model":"Org/Repo-GGUF/New-Model-Q4_0.gguf","stream":false,"registry":"`+reg.URL+`"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("first pull: %d %s", resp.StatusCode, body)
	}
	// The same reference again is fine (and its digest is never "sha256:").
	resp, body = ta.post(t, "/api/pull", `{"model":"Org/Repo-GGUF/New-Model-Q4_0.gguf","stream":false,"registry":"`+reg.URL+`"}`)
	if resp.StatusCode != 200 || strings.Contains(string(body), `"sha256:"`) {
		t.Fatalf("same pull again: %d %s", resp.StatusCode, body)
	}
	resp, body = ta.post(t, "/api/pull", `{"model":"Other/Repo/New-Model-Q4_0.gguf","stream":false,"registry":"`+reg.URL+`"}`)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("pull of another repository's file of the same name: %d %s, want 409", resp.StatusCode, body)
	}
	var src ipc.ModelSource
	if err := ta.srv.Store().Get(models.RegistryBucket, "new-model-q4_0", &src); err != nil || src.Ref != "Org/Repo-GGUF/New-Model-Q4_0.gguf" || len(src.SHA256) != 64 {
		t.Fatalf("registry entry %+v, %v", src, err)
	}
}

// TestPullLocalFileErrorIs500: a download the daemon's own models directory
// cannot take (here a directory where its lock or partial file goes, as a
// read-only or foreign-owned directory does) is the server's error, 500
// naming the path, not 502 Bad Gateway, which blames the registry.
func TestPullLocalFileErrorIs500(t *testing.T) {
	for _, taken := range []string{"New-Model-Q4_0.gguf.partial.lock", "New-Model-Q4_0.gguf.partial"} {
		t.Run(taken, func(t *testing.T) {
			ta := startAPI(t)
			reg := registryServer(t)
			p := filepath.Join(ta.srv.Config().ModelsDir, taken)
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			resp, body := ta.post(t, "/api/pull", `{"model":"Org/Repo-GGUF/New-Model-Q4_0.gguf","stream":false,"registry":"`+reg.URL+`"}`)
			if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), p) {
				t.Fatalf("pull with %s taken: %d %s; want 500 naming the path", taken, resp.StatusCode, body)
			}
		})
	}
}

// TestPullSaysSuccessOnce: a streamed pull ends with one "success" line,
// the one naming the model, as Ollama's does; the downloader's own
// "success" went out too, so clients printed it twice (and read it before
// the model was recorded, which can still fail).
func TestPullSaysSuccessOnce(t *testing.T) {
	ta := startAPI(t)
	reg := registryServer(t)
	resp, body := ta.post(t, "/api/pull", `{"model":"Org/Repo-GGUF/New-Model-Q4_0.gguf","registry":"`+reg.URL+`"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pull: %d %s", resp.StatusCode, body)
	}
	var lines []ipc.PullProgress
	for line := range strings.Lines(string(body)) {
		var p ipc.PullProgress
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		lines = append(lines, p)
	}
	n := 0
	for _, p := range lines {
		if p.Status == "success" {
			n++
		}
	}
	if last := lines[len(lines)-1]; n != 1 || last.Status != "success" || last.Model != "new-model-q4_0" {
		t.Fatalf("%d success lines, the last line %+v, in\n%s; want one, last, naming the model", n, last, body)
	}
}
