package adapters

import (
	"bytes"
	"context"
	"errors"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/daemon/store"
)

// TestUncreatableAdaptersDir: an adapters directory that cannot be created
// (a file in its way; as root, permissions would not stop it) no longer
// fails New, which stopped the daemon from starting: installs of every
// kind are refused with a 503 naming the directory, the drop folder is not
// watched, and the rest of the pool works.
func TestUncreatableAdaptersDir(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	drop := filepath.Join(blocker, "adapters")
	registry := filepath.Join(drop, ".installed")
	p, err := New(Options{DropDir: drop, RegistryDir: registry, Store: db})
	if err != nil {
		t.Fatalf("New: %v, want a pool that refuses installs", err)
	}
	if err := p.Watch(context.Background()); err != nil {
		t.Errorf("Watch: %v, want nil (nothing to watch)", err)
	}
	if got := p.List(); len(got) != 0 {
		t.Errorf("List = %+v", got)
	}
	src := filepath.Join(dir, "tone.gguf")
	os.WriteFile(src, []byte("GGUF"), 0o600)

	var upload bytes.Buffer
	mw := multipart.NewWriter(&upload)
	fw, _ := mw.CreateFormFile("file", "tone.gguf")
	fw.Write([]byte("GGUF"))
	mw.Close()
	for _, tc := range []struct {
		name string
		do   func() (int, error)
	}{
		{"install", func() (int, error) {
			_, err := p.Install(context.Background(), src, "", false)
			return StatusOf(err), err
		}},
		{"install for a created model", func() (int, error) {
			_, err := p.InstallFor(context.Background(), src, "tone", "m")
			return StatusOf(err), err
		}},
		{"fine-tuning result", func() (int, error) {
			f, err := p.CreateTemp()
			if f != nil {
				f.Close()
			}
			return StatusOf(err), err
		}},
		{"JSON install", func() (int, error) {
			code, body := install(t, p, "application/json", strings.NewReader(`{"path":"`+src+`"}`), -1)
			return code, errors.New(body)
		}},
		{"upload", func() (int, error) {
			code, body := install(t, p, mw.FormDataContentType(), bytes.NewReader(upload.Bytes()), int64(upload.Len()))
			return code, errors.New(body)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, err := tc.do()
			if code != http.StatusServiceUnavailable || err == nil || !strings.Contains(err.Error(), registry) {
				t.Fatalf("got %d %v, want 503 naming %s", code, err, registry)
			}
		})
	}
}
