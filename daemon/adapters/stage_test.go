package adapters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/internal/disk"
)

// install posts body to the install handler and returns status and body.
func install(t *testing.T, p *Pool, contentType string, body io.Reader, length int64) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/adapters", body)
	r.Header.Set("Content-Type", contentType)
	r.ContentLength = length
	w := httptest.NewRecorder()
	p.handleInstall(w, r)
	return w.Code, w.Body.String()
}

func TestInstallRefusesWhatIsNotARegularFile(t *testing.T) {
	f := newFixture(t, 0)
	fifo := filepath.Join(f.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	secret := filepath.Join(f.dir, "secret.txt")
	os.WriteFile(secret, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o600)
	for _, c := range []struct {
		name, path, want string
	}{
		{"fifo", fifo, "not a regular file"},
		{"device", "/dev/zero", "not a regular file"},
		{"directory without adapter", f.dir, "adapter_config.json"},
		{"text file", secret, "not a GGUF file: " + secret},
		{"missing", filepath.Join(f.dir, "nope.gguf"), "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var code int
			var body string
			go func() {
				defer close(done)
				code, body = install(t, f.pool, "application/json", strings.NewReader(`{"path":"`+c.path+`"}`), -1)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("install of %s blocked", c.path)
			}
			if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
				t.Fatalf("status %d body %s; want 400 naming %q", code, body, c.want)
			}
			if strings.Contains(body, "root:") || strings.Contains(body, `\"root`) || strings.Contains(body, "bash") {
				t.Fatalf("the error quotes the file's bytes: %s", body)
			}
		})
	}
	if ents, _ := os.ReadDir(f.pool.o.RegistryDir); len(ents) != 0 {
		t.Fatalf("refused installs left %d files in the registry", len(ents))
	}
}

func TestInstallJSONBodyBounded(t *testing.T) {
	f := newFixture(t, 0)
	big := `{"path":"` + strings.Repeat("a", MaxInstallJSON) + `"}`
	// Announced by Content-Length: refused before the body is read.
	code, body := install(t, f.pool, "application/json", strings.NewReader(big), int64(len(big)))
	if code != http.StatusRequestEntityTooLarge || strings.Contains(body, "aaaa") {
		t.Fatalf("announced: status %d body %.200s", code, body)
	}
	// Chunked (no length): refused after MaxInstallJSON bytes, not echoed.
	code, body = install(t, f.pool, "application/json", io.MultiReader(strings.NewReader(`{"path":"`), neverEnding('a')), -1)
	if code != http.StatusRequestEntityTooLarge || strings.Contains(body, "aaaa") {
		t.Fatalf("chunked: status %d body %.200s", code, body)
	}
	code, body = install(t, f.pool, "application/json", strings.NewReader(`{"path": 12}`), -1)
	if code != http.StatusBadRequest || strings.Contains(body, "12") {
		t.Fatalf("bad JSON: status %d body %s", code, body)
	}
}

// neverEnding is an endless stream of one byte.
type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestDroppedSymlinkInstallsACopy(t *testing.T) {
	f := newFixture(t, 0)
	target := f.adapterFile(t, "target.gguf", 7, 4)
	orig, _ := os.ReadFile(target)
	link := filepath.Join(f.dir, "link.gguf")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	info, err := f.pool.Install(context.Background(), link, "", true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(info.File)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("installed %s is not a regular file: %v %v", info.File, st, err)
	}
	if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dropped link is still there: %v", err)
	}
	// Changing the link's target afterwards changes nothing installed.
	os.WriteFile(target, []byte("changed after validation"), 0o600)
	got, _ := os.ReadFile(info.File)
	if !bytes.Equal(got, orig) {
		t.Fatal("the installed adapter changed with the symlink's target")
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatal("the symlink's target was removed")
	}
}

func TestUploadFillsDisk(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	f := newFixture(t, 0)
	small := filepath.Join(f.dir, "small")
	os.MkdirAll(small, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", small).Run() })
	f.pool.o.RegistryDir = small
	adapter, _ := os.ReadFile(f.adapterFile(t, "big.gguf", 9, 64))
	if len(adapter) < 300<<10 {
		t.Fatalf("test adapter of %d bytes fits the 256 KiB disk", len(adapter))
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "big.gguf")
	fw.Write(adapter)
	mw.Close()
	// With its length announced, the upload is refused before it is read.
	code, body := install(t, f.pool, mw.FormDataContentType(), bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if code != http.StatusInsufficientStorage || !strings.Contains(body, "disk space") {
		t.Fatalf("announced: status %d body %s", code, body)
	}
	// Chunked, it fills the disk: 507, and nothing is left behind.
	code, body = install(t, f.pool, mw.FormDataContentType(), bytes.NewReader(buf.Bytes()), -1)
	if code != http.StatusInsufficientStorage {
		t.Fatalf("chunked: status %d body %s", code, body)
	}
	if ents, _ := os.ReadDir(small); len(ents) != 0 {
		t.Fatalf("a failed upload left %d files", len(ents))
	}
	if !disk.IsFull(syscall.ENOSPC) {
		t.Fatal("ENOSPC is not a full disk")
	}
}

func TestHardLinkedDropIsCopied(t *testing.T) {
	f := newFixture(t, 0)
	src := f.adapterFile(t, "linked.gguf", 11, 4)
	other := filepath.Join(f.dir, "other-name")
	if err := os.Link(src, other); err != nil {
		t.Skipf("link: %v", err)
	}
	info, err := f.pool.Install(context.Background(), src, "", true)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(info.File)
	b, _ := os.Stat(other)
	if os.SameFile(a, b) {
		t.Fatal("the installed file shares its inode with a link outside the registry")
	}
}

// TestChunkedUploadKeepsDiskMargin: an upload without a length may take
// what leaves disk.Margin free, as one announcing its length is checked
// against: it used to be written until the disk was full, and here, on a
// disk of the margin + 128 KiB, it was installed, leaving less.
func TestChunkedUploadKeepsDiskMargin(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	f := newFixture(t, 0)
	small := filepath.Join(f.dir, "small")
	os.MkdirAll(small, 0o700)
	size := fmt.Sprintf("size=%dk", (disk.Margin+128<<10)>>10)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", size, "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", small).Run() })
	f.pool.o.RegistryDir = small
	adapter, _ := os.ReadFile(f.adapterFile(t, "big.gguf", 9, 64))
	if len(adapter) < 300<<10 {
		t.Fatalf("test adapter of %d bytes fits in 128 KiB", len(adapter))
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "big.gguf")
	fw.Write(adapter)
	mw.Close()
	code, body := install(t, f.pool, mw.FormDataContentType(), bytes.NewReader(buf.Bytes()), -1)
	if code != http.StatusInsufficientStorage || !strings.Contains(body, "free") {
		t.Fatalf("chunked upload into less than the margin: status %d body %s; want 507", code, body)
	}
	if ents, _ := os.ReadDir(small); len(ents) != 0 {
		t.Fatalf("a refused upload left %d files", len(ents))
	}
}
