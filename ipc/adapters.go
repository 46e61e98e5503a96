package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// AdapterInfo is an installed LoRA adapter, as GET /v1/adapters lists it
// and the daemon's registry stores it.
type AdapterInfo struct {
	Name string `json:"name"`
	// File is the adapter's path inside the daemon's registry.
	File   string `json:"file"`
	Format string `json:"format"` // "gguf" or "peft"
	Arch   string `json:"arch,omitempty"`
	// BaseModel is the model it was validated against at install ("" when
	// none was loaded or configured).
	BaseModel   string    `json:"base_model,omitempty"`
	Rank        int       `json:"rank"`
	Alpha       float32   `json:"alpha"`
	Targets     []string  `json:"targets"`
	SHA256      string    `json:"sha256"`
	Size        int64     `json:"size"`
	InstalledAt time.Time `json:"installed_at"`
	// FineTunedFrom is, for a fine-tuning job's adapter trained on a
	// created or fine-tuned model, that model resolved: its base (From),
	// the adapters it was trained on top of and its settings, which the
	// fine-tuned model keeps.
	FineTunedFrom *ModelManifest `json:"fine_tuned_from,omitempty"`
	// CreatedFor names the created model whose Modelfile (or upload)
	// installed the adapter: deleting the last model made with it removes
	// it.
	CreatedFor string `json:"created_for,omitempty"`
}

// AdapterInstallRequest is the JSON form of POST /v1/adapters: install the
// adapter file at Path (on the daemon's machine), under Name (default: the
// file name).
type AdapterInstallRequest struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// Adapters lists the installed adapters.
func (c *Client) Adapters(ctx context.Context) ([]AdapterInfo, error) {
	var out []AdapterInfo
	err := c.Do(ctx, http.MethodGet, "/v1/adapters", nil, &out)
	return out, err
}

// InstallAdapterPath asks the daemon to install the adapter at path, which
// it reads itself (same machine, same user).
func (c *Client) InstallAdapterPath(ctx context.Context, path, name string) (AdapterInfo, error) {
	var out AdapterInfo
	abs, err := filepath.Abs(path)
	if err != nil {
		return out, err
	}
	err = c.Do(ctx, http.MethodPost, "/v1/adapters", AdapterInstallRequest{Path: abs, Name: name}, &out)
	return out, err
}

// UploadAdapter sends an adapter file's bytes as a multipart upload (field
// "file"), as the desktop app does on drag and drop. The file streams from
// disk: it was read into memory whole first, so a large file dropped on
// the app took twice its size in memory before the daemon's 4 GiB limit
// could refuse it. It must be a regular file: it is opened without
// blocking, and a FIFO, which blocked the open forever (and with it the
// app's quit, which waits for its drops), is refused.
func (c *Client) UploadAdapter(ctx context.Context, path, name string) (AdapterInfo, error) {
	var out AdapterInfo
	f, err := openUpload(path, "upload adapter")
	if err != nil {
		return out, err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		pw.CloseWithError(writeUpload(mw, f, filepath.Base(path), name))
	}()
	err = c.DoRaw(ctx, http.MethodPost, "/v1/adapters", mw.FormDataContentType(), pr, &out)
	// A request that ended before reading the whole body ends the writer.
	pr.Close()
	<-copied
	return out, err
}

// openUpload opens a file to upload: without blocking, and only a
// regular file (a FIFO nothing writes to blocked the open, and with it
// the caller, for ever).
func openUpload(path, what string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s %s: not a regular file (%v)", what, path, fi.Mode().Type())
	}
	return f, nil
}

// writeUpload writes the multipart body of an adapter upload: the name
// field (when set) and the file's bytes.
func writeUpload(mw *multipart.Writer, f io.Reader, filename, name string) error {
	if name != "" {
		if err := mw.WriteField("name", name); err != nil {
			return err
		}
	}
	part, err := mw.CreateFormFile("file", filename)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, f); err != nil {
		return fmt.Errorf("read %s: %w", filename, err)
	}
	return mw.Close()
}

// RemoveAdapter uninstalls the named adapter.
func (c *Client) RemoveAdapter(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/adapters/"+url.PathEscape(name), nil, nil)
}

// DoRaw sends body with the given content type and decodes the JSON answer
// into out (nil to discard). A non-2xx answer is an *APIError.
func (c *Client) DoRaw(ctx context.Context, method, path, contentType string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.app != "" {
		req.Header.Set("X-Ruvllm-Client", c.app)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return decodeError(resp)
	}
	if out == nil {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}
