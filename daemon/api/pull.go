package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/models"
	"github.com/ruvllm/ruvllm/daemon/pull"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/internal/disk"
	"github.com/ruvllm/ruvllm/ipc"
)

// pulls guards against two downloads into the same partial file: it is
// keyed by the destination path, since references of different
// repositories (or spellings) whose files share a name land in one file.
type pulls struct {
	mu     sync.Mutex
	active map[string]bool
}

func (p *pulls) start(ref string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active == nil {
		p.active = map[string]bool{}
	}
	if p.active[ref] {
		return false
	}
	p.active[ref] = true
	return true
}

func (p *pulls) done(ref string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.active, ref)
}

func pullStatus(err error) int {
	switch {
	case errors.Is(err, pull.ErrInvalidRef):
		return http.StatusBadRequest
	case errors.Is(err, pull.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, pull.ErrDestination):
		return http.StatusConflict
	case disk.IsFull(err):
		return http.StatusInsufficientStorage
	case errors.Is(err, context.Canceled):
		return 499
	case isLocalFileError(err):
		// The daemon's own models directory failed it (permissions, a
		// directory where a file goes, a read-only file system): not the
		// registry's fault, which is what 502 says.
		return http.StatusInternalServerError
	}
	return http.StatusBadGateway
}

// isLocalFileError reports whether err is an operation on a local file
// (the download's lock, partial file, metadata or rename) rather than the
// registry's answer: network errors are never *fs.PathError or
// *os.LinkError.
func isLocalFileError(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	return errors.As(err, &pe) || errors.As(err, &le)
}

// ollamaPull answers POST /api/pull: download a GGUF from the registry
// into the models directory, streaming NDJSON progress by default.
func (a *API) ollamaPull(w http.ResponseWriter, r *http.Request) {
	var body ipc.PullRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	ref := body.Model
	if ref == "" {
		ref = body.Name
	}
	_, file, err := pull.ParseRef(ref)
	if err != nil {
		ollamaError(w, &requestError{status: http.StatusBadRequest, msg: err.Error(), param: "model"})
		return
	}
	// The registry a request names is the client's input: one that is not
	// an http(s) URL is a 400 naming it (it was a 502, as if the registry
	// had failed).
	if body.Registry != "" {
		if u, err := url.Parse(body.Registry); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ollamaError(w, &requestError{status: http.StatusBadRequest, param: "registry",
				msg: fmt.Sprintf("registry %q is not an http(s) URL", body.Registry)})
			return
		}
	}
	// A pulled model may not take the name of one served from elsewhere
	// (the default model given by path): requests naming it, and a later
	// delete, would reach the wrong model.
	dest := filepath.Join(a.srv.Config().ModelsDir, path.Base(file))
	name := llm.NameFromPath(dest)
	if have, err := a.models.Resolve(name); err == nil && have != dest {
		ollamaError(w, &requestError{status: http.StatusConflict, param: "model",
			msg: fmt.Sprintf("a model named %q is already served from %s: pulling %s would shadow it", name, have, ref)})
		return
	}
	// Nor the name of a created model: requests naming it would reach the
	// created model, never the pulled file (as /api/create refuses the
	// name of a model file).
	if _, ok := a.manifest(name); ok {
		ollamaError(w, &requestError{status: http.StatusConflict, param: "model",
			msg: fmt.Sprintf("a created model is named %q: pulling %s would be hidden behind it (delete it first)", name, ref)})
		return
	}
	// A file of that name already pulled from another reference is a
	// different model: Pull would report success without downloading.
	var src ipc.ModelSource
	if _, err := os.Stat(dest); err == nil && a.srv.Store().Get(models.RegistryBucket, name, &src) == nil &&
		src.Ref != "" && !strings.EqualFold(strings.Trim(src.Ref, "/"), strings.Trim(ref, "/")) {
		ollamaError(w, &requestError{status: http.StatusConflict, param: "model",
			msg: fmt.Sprintf("model %q was pulled from %s: delete it before pulling %s, whose file has the same name", name, src.Ref, ref)})
		return
	}
	if !a.pulls.start(dest) {
		ollamaError(w, &requestError{status: http.StatusConflict, param: "model",
			msg: "a pull into " + filepath.Base(dest) + " is already running"})
		return
	}
	stream := body.Stream == nil || *body.Stream
	nd := &ndjson{w: w}
	opts := pull.Options{Registry: pull.Registry(body.Registry), Dir: a.srv.Config().ModelsDir}
	if stream {
		opts.Progress = func(p pull.Progress) {
			if p.Status == "success" {
				// The last line says so once the model is recorded (as
				// Ollama's one "success"): sent now, a client read it
				// twice, and before a failure to record the model.
				return
			}
			nd.send(ipc.PullProgress{Status: p.Status, Digest: p.Digest, Total: p.Total, Completed: p.Completed})
		}
	}
	a.log.Info("pull", "ref", ref, "registry", opts.Registry)
	res, err := pull.Pull(r.Context(), ref, opts)
	// A file that was already there (no digest: nothing downloaded) keeps
	// the entry that recorded its download and verification.
	if err == nil && (res.SHA256 != "" || src.Ref == "") {
		err = a.srv.Store().Put(models.RegistryBucket, res.Name, ipc.ModelSource{Name: res.Name, Ref: ref, URL: res.Source,
			Path: res.Path, Size: res.Size, SHA256: res.SHA256, Verified: res.Verified, Pulled: time.Now().UTC()})
	}
	// The pull is over: release the reference before the last line goes
	// out, so a client that retries on reading it is not refused with 409.
	a.pulls.done(dest)
	if err != nil {
		a.log.Warn("pull failed", "ref", ref, "err", err)
		if nd.started {
			nd.send(ipc.PullProgress{Error: err.Error()})
		} else {
			daemon.WriteJSON(w, pullStatus(err), map[string]string{"error": err.Error()})
		}
		return
	}
	a.srv.Events().Publish("model.pulled", map[string]any{"model": res.Name, "size": res.Size, "sha256": res.SHA256})
	final := ipc.PullProgress{Status: "success", Model: res.Name, Total: res.Size, Completed: res.Size}
	if res.SHA256 != "" {
		final.Digest = "sha256:" + res.SHA256
	}
	if stream {
		nd.send(final)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, final)
}

// ollamaDelete answers DELETE /api/delete: remove a model's file and
// registry entry (409 while a request uses it).
func (a *API) ollamaDelete(w http.ResponseWriter, r *http.Request) {
	var body ipc.DeleteRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	if body.Model == "" {
		body.Model = body.Name
	}
	if body.Model == "" {
		ollamaError(w, &requestError{status: http.StatusBadRequest, msg: "model is required"})
		return
	}
	if removed, err := a.deleteManifest(body.Model); removed || err != nil {
		if err != nil {
			ollamaError(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if path, err := a.models.Resolve(body.Model); err == nil {
		if err := a.checkUnused(body.Model, path); err != nil {
			ollamaError(w, err)
			return
		}
	}
	if err := a.models.Remove(body.Model); err != nil {
		ollamaError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}
