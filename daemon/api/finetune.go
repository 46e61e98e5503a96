package api

import (
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/adapters"
	"github.com/ruvllm/ruvllm/daemon/finetune"
	"github.com/ruvllm/ruvllm/internal/disk"
	"github.com/ruvllm/ruvllm/ipc"
)

// SetFineTuning mounts OpenAI's files and fine-tuning endpoints:
// POST/GET /v1/files, GET/DELETE /v1/files/{id}, GET
// /v1/files/{id}/content, POST/GET /v1/fine_tuning/jobs, GET
// /v1/fine_tuning/jobs/{id}, GET .../{id}/events, POST .../{id}/cancel.
func (a *API) SetFineTuning(svc *finetune.Service, maxUpload int64) {
	a.srv.SetBodyLimit("/v1/files", maxUpload+1<<20)
	a.srv.Handle("POST /v1/files", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if !strings.HasPrefix(ct, "multipart/") {
			openAIError(w, badParam("file", "must be uploaded as multipart/form-data (fields \"file\" and \"purpose\")"))
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			openAIError(w, badParam("file", "%v", err))
			return
		}
		f, err := svc.SaveUpload(mr, r.ContentLength)
		if err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		daemon.WriteJSON(w, http.StatusOK, f)
	}))
	a.srv.Handle("GET /v1/files", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := svc.Files()
		if err != nil {
			openAIError(w, err)
			return
		}
		if p := r.URL.Query().Get("purpose"); p != "" {
			kept := list[:0]
			for _, f := range list {
				if f.Purpose == p {
					kept = append(kept, f)
				}
			}
			list = kept
		}
		daemon.WriteJSON(w, http.StatusOK, ipc.FileList{Object: "list", Data: list})
	}))
	a.srv.Handle("GET /v1/files/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := svc.File(r.PathValue("id"))
		if err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		daemon.WriteJSON(w, http.StatusOK, f)
	}))
	a.srv.Handle("GET /v1/files/{id}/content", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, f, err := svc.OpenFile(r.PathValue("id"))
		if err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/jsonl")
		io.Copy(w, f)
	}))
	a.srv.Handle("DELETE /v1/files/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := svc.DeleteFile(id); err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		daemon.WriteJSON(w, http.StatusOK, ipc.DeletedObject{ID: id, Object: "file", Deleted: true})
	}))

	a.srv.Handle("POST /v1/fine_tuning/jobs", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body ipc.FineTuningJobCreate
		if err := decode(r, &body); err != nil {
			openAIError(w, err)
			return
		}
		j, err := svc.Create(body)
		if err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		daemon.WriteJSON(w, http.StatusOK, j)
	}))
	a.srv.Handle("GET /v1/fine_tuning/jobs", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := limitParam(r, 20)
		if err != nil {
			openAIError(w, err)
			return
		}
		list, more, err := svc.Jobs(r.URL.Query().Get("after"), limit)
		if err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		daemon.WriteJSON(w, http.StatusOK, ipc.FineTuningJobList{Object: "list", Data: list, HasMore: more})
	}))
	a.srv.Handle("GET /v1/fine_tuning/jobs/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j, err := svc.Job(r.PathValue("id"))
		if err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		daemon.WriteJSON(w, http.StatusOK, j)
	}))
	a.srv.Handle("GET /v1/fine_tuning/jobs/{id}/events", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := limitParam(r, 20)
		if err != nil {
			openAIError(w, err)
			return
		}
		evs, more, err := svc.Events(r.PathValue("id"), r.URL.Query().Get("after"), limit)
		if err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		if evs == nil {
			evs = []ipc.FineTuningEvent{}
		}
		daemon.WriteJSON(w, http.StatusOK, ipc.FineTuningEventList{Object: "list", Data: evs, HasMore: more})
	}))
	a.srv.Handle("POST /v1/fine_tuning/jobs/{id}/cancel", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j, err := svc.Cancel(r.PathValue("id"))
		if err != nil {
			openAIError(w, fineTuneError(err))
			return
		}
		daemon.WriteJSON(w, http.StatusOK, j)
	}))
}

// limitParam reads ?limit= (daemon.ListLimit), a 400 naming it.
func limitParam(r *http.Request, def int) (int, error) {
	n, err := daemon.ListLimit(r, def)
	if err != nil {
		return 0, badParam("limit", "%v", err)
	}
	return n, nil
}

// fineTuneError maps the fine-tuning service's errors to API errors.
func fineTuneError(err error) error {
	var pe *finetune.ParamError
	switch {
	case errors.As(err, &pe):
		if pe.Param == "job" {
			return &requestError{status: http.StatusConflict, msg: pe.Error()}
		}
		return badParam(pe.Param, "%s", pe.Msg)
	case errors.Is(err, finetune.ErrNotFound):
		return &requestError{status: http.StatusNotFound, msg: err.Error()}
	case errors.Is(err, finetune.ErrTooLarge):
		return &requestError{status: http.StatusRequestEntityTooLarge, msg: err.Error(), param: "file"}
	case disk.IsFull(err):
		return &requestError{status: http.StatusInsufficientStorage, msg: err.Error()}
	}
	return err
}

// fineTunedManifest makes a fine-tuning job's adapter usable as a model
// name: "ft:<model>:<suffix>:<id>" runs its base model with the adapter.
func (a *API) fineTunedManifest(name string) (*ipc.ModelManifest, bool) {
	if !adapters.IsFineTuned(name) {
		return nil, false
	}
	pool := a.adapterPool()
	if pool == nil {
		return nil, false
	}
	info, ok := pool.Get(name)
	if !ok || info.BaseModel == "" {
		return nil, false
	}
	if f := info.FineTunedFrom; f != nil {
		// Trained on a created or fine-tuned model: its settings, and its
		// adapters beneath this one.
		m := *f
		m.Name, m.Created = name, info.InstalledAt
		m.Parameters = maps.Clone(f.Parameters)
		m.Adapters = append(slices.Clone(f.Adapters), ipc.AdapterRef{Name: name})
		return &m, true
	}
	return &ipc.ModelManifest{Name: name, From: info.BaseModel, Adapters: []ipc.AdapterRef{{Name: name}}, Created: info.InstalledAt}, true
}

// ExpandModel resolves a created or fine-tuned model for a fine-tuning
// job (finetune.Options.Expand): its chain merged and its base in From;
// nil for a model file.
func (a *API) ExpandModel(name string) (*ipc.ModelManifest, error) {
	if _, ok := a.manifest(name); !ok {
		return nil, nil
	}
	rm, err := a.resolveModel(canonicalName(name))
	if err != nil {
		return nil, err
	}
	return rm.man, nil
}
