package adapters

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/ipc"
)

// MaxUpload bounds an adapter upload (LoRA files of large models are
// hundreds of MB, beyond the daemon's usual body limit).
const MaxUpload = 4 << 30

// Register mounts GET /v1/adapters, POST /v1/adapters (a multipart upload
// with the file in field "file" and an optional "name", or JSON
// ipc.AdapterInstallRequest naming a file on this machine) and
// DELETE /v1/adapters/{name}.
func (p *Pool) Register(srv *daemon.Server) {
	srv.SetBodyLimit("/v1/adapters", MaxUpload)
	srv.Handle("GET /v1/adapters", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		daemon.WriteJSON(w, http.StatusOK, p.List())
	}))
	srv.Handle("POST /v1/adapters", http.HandlerFunc(p.handleInstall))
	srv.Handle("DELETE /v1/adapters/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := p.Remove(r.PathValue("name")); err != nil {
			status := StatusOf(err)
			if errors.Is(err, ErrUnknown) {
				status = http.StatusNotFound
			}
			writeError(w, status, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
}

func writeError(w http.ResponseWriter, status int, err error) {
	var body ipc.OpenAIError
	body.Error.Message = err.Error()
	body.Error.Type = "invalid_request_error"
	if status >= 500 {
		body.Error.Type = "server_error"
	}
	daemon.WriteJSON(w, status, body)
}

func (p *Pool) handleInstall(w http.ResponseWriter, r *http.Request) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var (
		info ipc.AdapterInfo
		err  error
	)
	if strings.HasPrefix(ct, "multipart/") {
		info, err = p.installUpload(r)
	} else {
		var req ipc.AdapterInstallRequest
		if err = json.NewDecoder(r.Body).Decode(&req); err != nil || req.Path == "" {
			writeError(w, http.StatusBadRequest, fmt.Errorf("want a multipart upload (field \"file\") or JSON {\"path\": ...}"))
			return
		}
		info, err = p.Install(r.Context(), req.Path, req.Name, false)
	}
	if err != nil {
		status := StatusOf(err)
		if errors.Is(err, os.ErrNotExist) {
			status = http.StatusBadRequest
		}
		writeError(w, status, err)
		return
	}
	daemon.WriteJSON(w, http.StatusCreated, info)
}

// installUpload spools the uploaded file into the registry directory and
// installs it from there.
func (p *Pool) installUpload(r *http.Request) (ipc.AdapterInfo, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return ipc.AdapterInfo{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	name, tmpPath := "", ""
	defer func() {
		if tmpPath != "" {
			os.Remove(tmpPath)
		}
	}()
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ipc.AdapterInfo{}, fmt.Errorf("%w: upload: %v", ErrInvalid, err)
		}
		switch part.FormName() {
		case "name":
			b, _ := io.ReadAll(io.LimitReader(part, 200))
			name = strings.TrimSpace(string(b))
		case "file":
			if name == "" {
				name = part.FileName()
			}
			tmp, err := os.CreateTemp(p.o.RegistryDir, ".upload-*")
			if err != nil {
				return ipc.AdapterInfo{}, err
			}
			tmpPath = tmp.Name()
			_, err = io.Copy(tmp, part)
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return ipc.AdapterInfo{}, fmt.Errorf("%w: upload: %v", ErrInvalid, err)
			}
		}
	}
	if tmpPath == "" {
		return ipc.AdapterInfo{}, fmt.Errorf("%w: no \"file\" part in the upload", ErrInvalid)
	}
	if name == "" {
		return ipc.AdapterInfo{}, fmt.Errorf("%w: the upload has no file name; send a \"name\" field", ErrInvalid)
	}
	return p.Install(r.Context(), tmpPath, name, true)
}
