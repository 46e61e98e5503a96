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
	"github.com/ruvllm/ruvllm/internal/disk"
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

// MaxInstallJSON bounds the JSON form of POST /v1/adapters, which only
// names a file.
const MaxInstallJSON = 8 << 10

func (p *Pool) handleInstall(w http.ResponseWriter, r *http.Request) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var (
		info ipc.AdapterInfo
		err  error
	)
	if strings.HasPrefix(ct, "multipart/") {
		info, err = p.installUpload(r)
	} else {
		if r.ContentLength > MaxInstallJSON {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("a JSON install request is at most %d bytes ({\"path\": ..., \"name\": ...}); upload files as multipart/form-data", MaxInstallJSON))
			return
		}
		var req ipc.AdapterInstallRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxInstallJSON))
		if err := dec.Decode(&req); err != nil {
			var maxErr *http.MaxBytesError
			if errors.As(err, &maxErr) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("a JSON install request is at most %d bytes", MaxInstallJSON))
				return
			}
			writeError(w, http.StatusBadRequest, fmt.Errorf("want a multipart upload (field \"file\") or JSON {\"path\": ...}: the body is not such JSON"))
			return
		}
		if req.Path == "" {
			writeError(w, http.StatusBadRequest, fmt.Errorf("path is required (or upload the file as multipart/form-data, field \"file\")"))
			return
		}
		info, err = p.Install(r.Context(), req.Path, req.Name, false)
	}
	if err != nil {
		writeError(w, StatusOf(err), err)
		return
	}
	daemon.WriteJSON(w, http.StatusCreated, info)
}

// installUpload streams the uploaded file into the registry directory
// (never into memory), within MaxAdapterBytes and the free space there,
// and installs it from there.
func (p *Pool) installUpload(r *http.Request) (ipc.AdapterInfo, error) {
	if p.noInstall != nil {
		return ipc.AdapterInfo{}, p.noInstall
	}
	if err := disk.Check(p.o.RegistryDir, r.ContentLength); err != nil {
		return ipc.AdapterInfo{}, err
	}
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
			return ipc.AdapterInfo{}, fmt.Errorf("%w: upload: %v", ErrInvalid, uploadError(err))
		}
		switch part.FormName() {
		case "name":
			b, _ := io.ReadAll(io.LimitReader(part, 200))
			name = strings.TrimSpace(string(b))
		case "file":
			if tmpPath != "" {
				return ipc.AdapterInfo{}, fmt.Errorf("%w: the upload has more than one \"file\" part", ErrInvalid)
			}
			if name == "" {
				name = part.FileName()
			}
			tmp, err := disk.CreateTemp(p.o.RegistryDir, ".upload-*")
			if err != nil {
				return ipc.AdapterInfo{}, fmt.Errorf("upload: %w", err)
			}
			tmpPath = tmp.Name()
			// Without a length Check had nothing to weigh: the upload
			// may take what leaves the margin free, not fill the disk.
			limit, room := int64(MaxAdapterBytes), int64(-1)
			if r.ContentLength < 0 {
				if rm, ok := disk.Room(p.o.RegistryDir); ok && rm < limit {
					limit, room = rm, rm
				}
			}
			n, err := io.Copy(tmp, io.LimitReader(part, limit+1))
			switch {
			case err == nil && room >= 0 && n > room:
				err = fmt.Errorf("%w in %s: the upload outgrew the %d MiB that keep %d MiB free", disk.ErrNoSpace, p.o.RegistryDir, room>>20, int64(disk.Margin)>>20)
			case err == nil && n > MaxAdapterBytes:
				err = fmt.Errorf("%w: the upload is larger than %d MiB", ErrTooLarge, MaxAdapterBytes>>20)
			}
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			switch {
			case err == nil:
			case errors.Is(err, ErrTooLarge), errors.Is(err, disk.ErrNoSpace): // they say so already
				return ipc.AdapterInfo{}, err
			case disk.IsFull(err):
				return ipc.AdapterInfo{}, fmt.Errorf("%w: the disk filled up during the upload: %w", disk.ErrNoSpace, err)
			default:
				return ipc.AdapterInfo{}, fmt.Errorf("%w: upload: %v", ErrInvalid, uploadError(err))
			}
		}
	}
	if tmpPath == "" {
		return ipc.AdapterInfo{}, fmt.Errorf("%w: no \"file\" part in the upload", ErrInvalid)
	}
	if name == "" {
		return ipc.AdapterInfo{}, fmt.Errorf("%w: the upload has no file name; send a \"name\" field", ErrInvalid)
	}
	return p.install(r.Context(), tmpPath, "upload "+name, name, true)
}

// uploadError turns a failed read of the request body into a reason.
func uploadError(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return fmt.Errorf("%w: the upload exceeds %d bytes", ErrTooLarge, maxErr.Limit)
	}
	return err
}
