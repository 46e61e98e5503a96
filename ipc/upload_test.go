//go:build unix

package ipc

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// uploadServer serves /v1/health and an adapter upload endpoint on a Unix
// socket; the upload answers with the name field and the file's size as
// the adapter's rank (a number the test can read back).
func uploadServer(t *testing.T) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, _ *http.Request) { json.NewEncoder(w).Encode(Health{Status: "ok"}) })
	mux.HandleFunc("POST /v1/adapters", func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var info AdapterInfo
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			switch p.FormName() {
			case "name":
				b, _ := io.ReadAll(p)
				info.Name = string(b)
			case "file":
				n, _ := io.Copy(io.Discard, p)
				info.Rank = int(n)
			}
		}
		json.NewEncoder(w).Encode(info)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, WithSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestUploadAdapterStreams checks that an upload streams the file instead
// of reading it into memory first: 64 MiB sent allocate far less.
func TestUploadAdapterStreams(t *testing.T) {
	c := uploadServer(t)
	path := filepath.Join(t.TempDir(), "big.gguf")
	const size = 64 << 20
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	info, err := c.UploadAdapter(context.Background(), path, "big")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "big" || info.Rank != size {
		t.Fatalf("the server got name %q and %d bytes, want big and %d", info.Name, info.Rank, size)
	}
	// Client and server together, in this process.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Fatalf("uploading %d MiB allocated %d MiB: the file is held in memory", size>>20, alloc>>20)
	}
}

// TestUploadRefusesFIFO checks that a FIFO (nothing writes to it) is
// refused at once by both uploads: opening it for reading blocked forever.
func TestUploadRefusesFIFO(t *testing.T) {
	c := uploadServer(t)
	for name, upload := range map[string]func(path string) error{
		"adapter": func(p string) error { _, err := c.UploadAdapter(context.Background(), p, ""); return err },
		"training file": func(p string) error {
			_, err := c.UploadFile(context.Background(), p, "fine-tune")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { uploadRefusesFIFO(t, upload) })
	}
}

func uploadRefusesFIFO(t *testing.T, upload func(path string) error) {
	fifo := filepath.Join(t.TempDir(), "pipe.gguf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- upload(fifo) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("upload = %v, want the FIFO refused", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the open so the test's goroutine ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("the upload blocks on a FIFO")
	}
}
